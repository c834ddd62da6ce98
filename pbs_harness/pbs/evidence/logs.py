"""Daemon logs of any host (server_logs, sched_logs, mom_logs, comm_logs), read since a time.

A line is `MM/DD/YYYY HH:MM:SS[.ffffff];EVENT_HEX;DAEMON@HOST;CLASS;OBJECT;MESSAGE`.
`expect` polls until a matching line appears (bounded by a timeout); `absent` checks now.
A cluster's readers: `server_log(cluster)`, `sched_log(cluster)`, `mom_log(cluster, host)`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from pbs_harness.common.waits import wait_until
from pbs_harness.remote.transport import RemoteHost

if TYPE_CHECKING:
    from pbs_harness.remote.cluster import Cluster

LOG_DIRS = {"server": "server_logs", "sched": "sched_logs", "mom": "mom_logs", "comm": "comm_logs"}


@dataclass(frozen=True)
class LogLine:
    time: datetime
    event: int
    source: str
    obj_class: str
    obj: str
    message: str
    raw: str


def parse_line(line: str) -> LogLine | None:
    parts = line.rstrip("\n").split(";", 5)
    if len(parts) < 6:
        return None
    stamp = parts[0]
    fmt = "%m/%d/%Y %H:%M:%S.%f" if "." in stamp else "%m/%d/%Y %H:%M:%S"
    try:
        when = datetime.strptime(stamp, fmt)
        event = int(parts[1], 16)
    except ValueError:
        return None
    return LogLine(when, event, parts[2], parts[3], parts[4], parts[5], line.rstrip("\n"))


class LogReader:
    """One daemon's log directory on one host."""

    def __init__(self, host: RemoteHost, pbs_home: str, daemon: str) -> None:
        self.host = host
        self.dir = f"{pbs_home}/{LOG_DIRS[daemon]}"
        self.daemon = daemon

    def lines(self, since: datetime) -> list[LogLine]:
        days, day = [], since.date()
        today = datetime.now().date()
        while day <= today:
            days.append(f"{self.dir}/{day:%Y%m%d}")
            day += timedelta(days=1)
        text = self.host.run("cat " + " ".join(shlex.quote(d) for d in days) + " 2>/dev/null").stdout
        parsed = (parse_line(raw) for raw in text.splitlines())
        return [ln for ln in parsed if ln is not None and ln.time >= since.replace(microsecond=0)]

    def matching(self, pattern: str, since: datetime) -> list[LogLine]:
        rx = re.compile(pattern)
        return [ln for ln in self.lines(since) if rx.search(ln.raw)]

    def expect(self, pattern: str, since: datetime, timeout: float) -> LogLine:
        """The first line since `since` matching `pattern`, waiting up to `timeout` seconds."""
        found = wait_until(
            lambda: self.matching(pattern, since),
            bool,
            timeout=timeout,
            describe=f"{self.daemon} log line /{pattern}/ on {self.host.name}",
        )
        return found[0]

    def absent(self, pattern: str, since: datetime) -> None:
        __tracebackhide__ = True
        hits = self.matching(pattern, since)
        assert not hits, f"unexpected {self.daemon} log line(s) on {self.host.name}: {[h.raw for h in hits]}"


def server_log(cluster: Cluster) -> LogReader:
    """The server's log (server_logs on the server host)."""
    return LogReader(cluster.server, str(cluster.pbs_home), "server")


def sched_log(cluster: Cluster) -> LogReader:
    """The scheduler's log (sched_logs on the server host)."""
    return LogReader(cluster.server, str(cluster.pbs_home), "sched")


def mom_log(cluster: Cluster, host: str) -> LogReader:
    """The mom log of the cluster's host named `host`."""
    return LogReader(cluster.hosts[host], str(cluster.pbs_home), "mom")
