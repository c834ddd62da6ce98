"""What the job starters on a host are blocked in: the pbs_mom children that run a job's
prologue/launch hooks and exec the job.

A job that stays in substate 41 is only a symptom; this reads the kernel's view of each starter
(/proc/<pid>/syscall, wchan, the fd's target) so a test can name a known OpenPBS defect from its
signature instead of from a timeout, and report anything else as the failure it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pbs_harness.remote.transport import RemoteHost

# Runs on the host (python3 is there for pbs_python). Starters are pbs_mom processes whose
# parent is pbs_mom.
_SCRIPT = r"""
import json, os, platform, time
READ = {"x86_64": 0, "aarch64": 63}.get(platform.machine())
BOOT = next(int(line.split()[1]) for line in open("/proc/stat") if line.startswith("btime"))
HZ = os.sysconf("SC_CLK_TCK")
def comm(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""
out = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        ppid = stat[1]
        if comm(pid) != "pbs_mom" or comm(ppid) != "pbs_mom":
            continue
        wchan = open(f"/proc/{pid}/wchan").read().strip()
        call = open(f"/proc/{pid}/syscall").read().split()
    except (OSError, IndexError):
        continue
    age = round(time.time() - (BOOT + int(stat[19]) / HZ), 1)  # stat field 22, starttime
    state = {"pid": int(pid), "ppid": int(ppid), "wchan": wchan, "syscall": call[0] if call else "", "age": age}
    if READ is not None and call and call[0] == str(READ) and len(call) >= 4:
        fd, count = int(call[1], 16), int(call[3], 16)
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            target = "?"
        state.update(read_fd=fd, read_target=target, read_count=count)
    out.append(state)
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Starter:
    pid: int
    ppid: int
    wchan: str
    syscall: str
    read_fd: int | None = None
    read_target: str | None = None
    read_count: int | None = None
    age: float | None = None  # seconds since the starter was forked, by the host's clock

    @property
    def blocked_reading_pipe(self) -> bool:
        return self.read_target is not None and self.read_target.startswith("pipe:")

    def describe(self) -> str:
        where = f"pid {self.pid} (parent {self.ppid}) in {self.wchan or '?'}"
        if self.age is not None:
            where += f", forked {self.age:.0f}s ago"
        if self.read_count is not None:
            where += f", read(fd {self.read_fd} -> {self.read_target}, {self.read_count} bytes left)"
        return where


def starters(host: RemoteHost) -> list[Starter]:
    """The job starters on `host` and the system call each one waits in."""
    result = host.check(["python3", "-c", _SCRIPT], timeout=30)
    return [Starter(**state) for state in json.loads(result.stdout)]


# A failed host's name as get_failed_moms_and_vnodes() sends it is at most PBS_MAXHOSTNAME (255)
# bytes and its NUL; a read(2) for far more than that on the starter's pipe is a size made of a
# name's bytes.
MAX_NAME_READ = 65536


def stuck_reading_failed_host_names(found: list[Starter]) -> list[Starter]:
    """Starters blocked for good in OpenPBS's get_failed_moms_and_vnodes(): it polled the size of a
    failed host's name, then read the name with a zero timeout before the primary mom had written
    it; the name stayed in the pipe and the next loop read it as the size of another name. Two
    shapes, by the length of the name: a name and its NUL shorter than 8 bytes leave readpipe()
    blocked for the rest of an 8-byte size_t (1..7 bytes left, e.g. `pbsh03`); a longer one is
    taken whole as a size and readpipe() blocks for that many bytes (far beyond any name, e.g.
    `ci268fc03` read as 0x36326963 bytes). A name of exactly 8 bytes with its NUL (`pbsha03`) leaves
    nothing behind to block on: the starter is not stuck, the failed host is only lost (see
    met_empty_fail_list); test_starter_races.py makes each shape happen."""
    return [
        s
        for s in found
        if s.blocked_reading_pipe
        and s.read_count is not None
        and (0 < s.read_count < 8 or s.read_count > MAX_NAME_READ)
    ]
