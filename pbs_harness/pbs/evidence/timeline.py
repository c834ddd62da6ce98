"""The merged timeline of one test's evidence folder (timeline.txt, and the table in index.html): the
harness's commands, the faults (start and heal) and the server, scheduler, mom and accounting events
of the test's hosts, in one wall-clock order — Jepsen's history, with PBS's own logs beside it.

Every entry is (time, source, host, text). Commands are placed at their start (their end minus
their duration), faults at the start of their action; log lines and accounting records at their own
stamps. PBS stamps to the second (or microsecond where the build logs them so), so within one second
the order of a log line and a command is not known: the sort is stable, logs before commands.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from pbs_harness.pbs.evidence.accounting import AccountingRecord
from pbs_harness.pbs.evidence.logs import LogLine
from pbs_harness.remote.transport import CommandResult
from pbs_harness.suite.faults.log import FaultEvent

DAEMONS_SHOWN = ("server", "sched", "mom")  # comm_logs only say connections came and went
ORDER = {"server": 0, "sched": 0, "mom": 0, "accounting": 0, "fault": 1, "command": 2}


@dataclass(frozen=True)
class Entry:
    time: datetime
    source: str  # command, fault, server, sched, mom, accounting
    host: str
    text: str

    def line(self) -> str:
        return f"{self.time:%H:%M:%S.%f}"[:-3] + f" {self.source:10} {self.host:10} {self.text}"


def from_commands(commands: Sequence[tuple[datetime, CommandResult]]) -> list[Entry]:
    """(end time, result) pairs as the transcript keeps them."""
    out = []
    for ended, r in commands:
        first = r.command.splitlines()[0] if r.command else ""
        out.append(Entry(ended - timedelta(seconds=r.seconds), "command", r.host, f"$ {first[:300]}  # rc={r.rc}"))
    return out


def from_faults(events: Iterable[FaultEvent]) -> list[Entry]:
    """One entry per action at the moment it began: an ended action's line (its begin line would say
    the same at the same moment), and the begin line of an action that never ended (it hung)."""
    events = list(events)
    entries = []
    for i, e in enumerate(events):
        key = (e.action, e.kind, e.target)
        if not e.ended and any(
            later.ended and (later.action, later.kind, later.target) == key for later in events[i + 1 :]
        ):
            continue
        what = f"{e.action} {e.kind} via {e.mechanism}" + (f" FAILED: {e.error}" if e.error else "")
        entries.append(
            Entry(e.at - timedelta(seconds=e.seconds), "fault", e.target, what + ("" if e.ended else " (never ended)"))
        )
    return entries


def from_logs(logs: dict[str, dict[str, list[LogLine]]]) -> list[Entry]:
    """{host: {daemon: lines}} as evidence.collect.capture_logs read them."""
    return [
        Entry(ln.time, daemon, host, f"{ln.obj_class};{ln.obj};{ln.message}" if ln.obj else ln.message)
        for host, daemons in logs.items()
        for daemon, lines in daemons.items()
        if daemon in DAEMONS_SHOWN
        for ln in lines
    ]


def from_accounting(records: Iterable[AccountingRecord], server: str) -> list[Entry]:
    return [Entry(r.time, "accounting", server, f"{r.type} {r.id} " + r.raw.split(";", 3)[-1][:300]) for r in records]


def merge(*parts: list[Entry]) -> list[Entry]:
    entries = [e for part in parts for e in part]
    return sorted(entries, key=lambda e: (e.time.replace(microsecond=0), ORDER.get(e.source, 0), e.time))


def write(path: Path, entries: list[Entry], since: datetime) -> None:
    head = (
        f"# the test's merged timeline from {since:%Y-%m-%d %H:%M:%S} (wall clock of the hosts, which share\n"
        "# this machine's clock): commands at their start, faults at the start of each action, and the server,\n"
        "# scheduler, mom and accounting events of the test's hosts\n"
    )
    path.write_text(head + "".join(e.line() + "\n" for e in entries))
