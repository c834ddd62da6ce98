"""Reservations: pbs_rsub / pbs_rstat / pbs_rdel / pbs_ralter.

pbs_rstat has no JSON output; `pbs_rstat -F` prints `Resv ID: X` then `name = value` lines,
which are parsed here (state names are the long form, e.g. RESV_CONFIRMED). Times (reserve_start,
reserve_end, reserve_retry, ctime, mtime) are printed in the client's local time with
RSTAT_TIME_FORMAT (src/cmds/pbs_rstat.c); `rstat_epoch` turns them back into epoch seconds.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable, Sequence
from typing import Any

from pbs_harness.common.waits import wait_until
from pbs_harness.pbs.base import PbsCommands
from pbs_harness.pbs.evidence.pick import Attributes
from pbs_harness.remote.transport import CommandError, CommandResult

RESV_ID_RE = re.compile(r"^(?P<id>[RSM]\d+\.\S+)\s+(?P<state>\S+)")
RSTAT_TIME_FORMAT = "%a %b %d %H:%M:%S %Y"  # pbs_rstat.c `fmt`, local time
RSUB_TIME_FORMAT = "%Y%m%d%H%M.%S"  # pbs_rsub -R/-E: [[[[CC]YY]MM]DD]hhmm[.SS]


def rstat_epoch(text: str) -> int:
    """Epoch seconds of a time pbs_rstat printed (local time of the host that ran it)."""
    return int(time.mktime(time.strptime(" ".join(text.split()), RSTAT_TIME_FORMAT)))


def rsub_time(epoch: float) -> str:
    """An epoch as pbs_rsub -R / -E want it (local time, whole seconds)."""
    return time.strftime(RSUB_TIME_FORMAT, time.localtime(int(epoch)))


def parse_rstat(text: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        if line.startswith("Resv ID: "):
            rid = line.split(": ", 1)[1].strip()
            current = out.setdefault(rid, Attributes(what=f"reservation {rid} (pbs_rstat -F)"))
        elif current is not None and " = " in line:
            key, value = line.split(" = ", 1)
            current[key.strip()] = value.strip()
    return out


class Reservations(PbsCommands):
    def submit(self, *args: str, user: str, tzid: str | None = None) -> tuple[str, str]:
        """pbs_rsub as user; returns (reservation id, initial state word such as UNCONFIRMED).

        `tzid` sets PBS_TZID, which standing reservations (-r) need when pbs.conf has none.
        """
        line = self.line("pbs_rsub", *args)
        res = self.host.run(f"env PBS_TZID={shlex.quote(tzid)} {line}" if tzid else line, user=user)
        if not res.ok:
            raise CommandError(res)
        m = RESV_ID_RE.match(res.stdout.strip())
        if not m:
            raise CommandError(res)
        return m["id"], m["state"]

    def status(self, resv_id: str, *, user: str | None = None) -> dict[str, Any]:
        """pbs_rstat -F of one reservation, as `user` (default root: what a manager sees)."""
        res = self.run("pbs_rstat", "-F", resv_id, user=user)
        found = parse_rstat(res.stdout).get(resv_id) if res.ok else None
        return found if found is not None else Attributes(what=f"reservation {resv_id} (pbs_rstat lists no such one)")

    def all(self) -> dict[str, dict[str, Any]]:
        res = self.run("pbs_rstat", "-F")
        return parse_rstat(res.stdout) if res.ok else {}

    def delete(self, resv_id: str, *, user: str | None = None) -> CommandResult:
        return self.run("pbs_rdel", resv_id, user=user)

    def alter(self, resv_id: str, *args: str, user: str | None = None) -> CommandResult:
        return self.run("pbs_ralter", *args, resv_id, user=user)

    def wait(
        self, resv_id: str, predicate: Callable[[dict[str, Any]], bool], *, timeout: float, describe: str
    ) -> dict[str, Any]:
        """Wait until the reservation's `pbs_rstat -F` attributes satisfy predicate."""
        return wait_until(
            lambda: self.status(resv_id), predicate, timeout=timeout, describe=f"reservation {resv_id} {describe}"
        )

    def wait_state(self, resv_id: str, state: str | Sequence[str], *, timeout: float) -> dict[str, Any]:
        wanted = {state} if isinstance(state, str) else set(state)
        return wait_until(
            lambda: self.status(resv_id),
            lambda r: r.get("reserve_state") in wanted,
            timeout=timeout,
            describe=f"reservation {resv_id} reserve_state in {sorted(wanted)}",
        )
