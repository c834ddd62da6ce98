"""Evidence folder of a failed or xfailed test or a retried attempt: transcript, PBS state, logs and
accounting of its time window, the merged timeline (evidence.timeline) and an index.html (evidence.page).

Collection never raises: a host that cannot be read gets a note in the folder instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime, timedelta
from pathlib import Path

from pbs_harness.pbs.evidence import accounting, starters
from pbs_harness.pbs.evidence.logs import LOG_DIRS, LogLine, LogReader
from pbs_harness.remote.cluster import Cluster
from pbs_harness.remote.transport import CommandResult


def folder_name(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:150]


# Commands that read whole daemon log or accounting files (LogReader, accounting readers): their output
# is a day of logs, read again at every wait (#35: 87% of a 1.6 MB transcript). The test's window of
# those logs is in logs/ and accounting.txt once; the transcript keeps only how much was read.
LOG_READ = re.compile(r"^cat .*/(server_logs|sched_logs|mom_logs|comm_logs|server_priv/accounting)/")


def write_transcript(path: Path, results: Sequence[tuple[datetime, CommandResult]], failing: str = "") -> None:
    """Each command with the wall-clock time it started (its end minus its duration), its output;
    `failing`: the command that never ended (a timeout has no result to record), last."""
    with path.open("w") as fh:
        fh.write("# each command: [start time, wall clock] [user@host] command, then rc and duration, then output\n")
        for ended, r in results:
            began = ended - timedelta(seconds=r.seconds)
            fh.write(
                f"$ [{began:%H:%M:%S.%f}"[:-3] + f"] [{r.user}@{r.host}] {r.command}\n"
                f"# rc={r.rc} ({r.seconds * 1000:.0f} ms)\n"
            )
            if r.stdout and LOG_READ.match(r.command):
                fh.write(
                    f"# ({r.stdout.count(chr(10))} log lines read; the test's window is in logs/ and accounting.txt)\n"
                )
            elif r.stdout:
                fh.write(r.stdout if r.stdout.endswith("\n") else r.stdout + "\n")
            if r.stderr:
                fh.write("# stderr:\n" + r.stderr + ("" if r.stderr.endswith("\n") else "\n"))
        if failing:
            fh.write(f"# the command that did not end (no result recorded):\n# {failing}\n")


def capture_state(cluster: Cluster, folder: Path) -> None:
    """qstat/pbsnodes JSON as they are now (call before faults are healed)."""
    folder.mkdir(parents=True, exist_ok=True)
    server = cluster.server
    for name, cmd in (
        ("qstat-jobs.json", f"{cluster.bin('qstat')} -fx -t -F json"),
        ("pbsnodes.json", f"{cluster.bin('pbsnodes')} -av -F json"),
        ("qstat-server.json", f"{cluster.bin('qstat')} -Bf -F json"),
    ):
        try:
            res = server.run(cmd, timeout=30)
            (folder / name).write_text(res.stdout or res.stderr)
        except Exception as exc:  # noqa: BLE001 - evidence is best effort, never masks the failure
            (folder / name).write_text(f"could not collect: {exc}\n")
    # Job starters still alive (a job stuck in substate 41): what each one is blocked in.
    found: dict[str, object] = {}
    for name, host in cluster.hosts.items():
        try:
            found[name] = [asdict(s) for s in starters.starters(host)]
        except Exception as exc:  # noqa: BLE001 - evidence is best effort
            found[name] = f"could not collect: {exc}"
    (folder / "starters.json").write_text(json.dumps(found, indent=2) + "\n")
    capture_job_output(cluster, folder)


# What a host was doing when a command on it hung: each process, its state and the kernel function it
# sleeps in (wchan).
PS = "ps -eo pid,ppid,stat,etime,wchan:20,args"


def capture_hang(cluster: Cluster, folder: Path) -> None:
    """After a command that did not finish: every host's processes (hosts-ps/HOST.txt; the error names
    the command, not always its host) and the tail of today's pbs_server log (server-log-tail.txt)."""
    out = folder / "hosts-ps"
    out.mkdir(parents=True, exist_ok=True)
    for name, host in cluster.hosts.items():
        try:
            res = host.run(PS, timeout=30)
            text = res.stdout + (f"# stderr:\n{res.stderr}" if res.stderr else "")
        except Exception as exc:  # noqa: BLE001 - evidence is best effort
            text = f"could not collect: {exc}\n"
        (out / f"{name}.txt").write_text(text)
    log = f"{cluster.pbs_home}/server_logs/{datetime.now():%Y%m%d}"
    try:
        text = cluster.server.run(f"tail -n 400 {log}", timeout=30).stdout
    except Exception as exc:  # noqa: BLE001 - evidence is best effort
        text = f"could not collect: {exc}\n"
    (folder / "server-log-tail.txt").write_text(text)


# The tail of each running job's stdout/stderr as the mom spools it: what a job's own tools said
# (pbsdsh, the script) before the test deletes the job and PBS discards the files.
SPOOL_TAIL = (
    'for f in {spool}/*.OU {spool}/*.ER; do [ -f "$f" ] && printf \'==> %s <==\\n\' "$f" && tail -c 4000 "$f"; done'
)


def capture_job_output(cluster: Cluster, folder: Path) -> None:
    out = folder / "job-output"
    for name, host in cluster.hosts.items():
        try:
            text = host.run(SPOOL_TAIL.format(spool=f"{cluster.pbs_home}/spool"), timeout=30).stdout
        except Exception as exc:  # noqa: BLE001 - evidence is best effort
            text = f"could not collect: {exc}\n"
        if text.strip():
            out.mkdir(exist_ok=True)
            (out / f"{name}.txt").write_text(text)


def capture_logs(
    cluster: Cluster, folder: Path, since: datetime
) -> tuple[dict[str, dict[str, list[LogLine]]], list[accounting.AccountingRecord]]:
    """Log lines of every daemon on every host, and the accounting records, from `since` to now (the
    test's window), each read once; returned too, for the merged timeline."""
    home = str(cluster.pbs_home)
    found: dict[str, dict[str, list[LogLine]]] = {}
    records: list[accounting.AccountingRecord] = []
    for host in cluster:
        hdir = folder / "logs" / host.name
        hdir.mkdir(parents=True, exist_ok=True)
        for daemon in LOG_DIRS:
            try:
                lines = LogReader(host, home, daemon).lines(since)
                found.setdefault(host.name, {})[daemon] = lines
            except Exception as exc:  # noqa: BLE001 - best effort
                (hdir / f"{daemon}.log").write_text(f"could not collect: {exc}\n")
                continue
            if lines:
                (hdir / f"{daemon}.log").write_text("\n".join(ln.raw for ln in lines) + "\n")
    try:
        days = sorted({since.strftime("%Y%m%d"), datetime.now().strftime("%Y%m%d")})
        paths = " ".join(f"{home}/server_priv/accounting/{d}" for d in days)
        text = cluster.server.run(f"cat {paths} 2>/dev/null", timeout=30).stdout
        records = [r for r in accounting.parse(text) if r.time >= since.replace(microsecond=0)]
        keep = [r.raw for r in records]
        (folder / "accounting.txt").write_text("\n".join(keep) + ("\n" if keep else ""))
    except Exception as exc:  # noqa: BLE001 - best effort
        (folder / "accounting.txt").write_text(f"could not collect: {exc}\n")
    return found, records


def write_summary(
    folder: Path, nodeid: str, since: datetime, longrepr: str, *, cluster: str = "", why: str = "failed"
) -> None:
    """failure.txt (why the folder exists: failed, xfailed or a retried attempt, and what was reported)
    and meta.json."""
    on = f"\ncluster {cluster}" if cluster else ""
    (folder / "failure.txt").write_text(f"{nodeid}{on}\n{why}\nstarted {since.isoformat()}\n\n{longrepr}\n")
    meta = {"test": nodeid, "cluster": cluster, "since": since.isoformat(), "why": why}
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))
