"""Interleaving faults: one PBS process held at a chosen system call, so two processes' steps happen in a
chosen order instead of the order a scheduler happens to pick.

A race between two processes (a writer sends a record in two writes, a reader reads it in two polls)
shows only when a process is descheduled at the wrong instant. To pin such a race in a test of its own,
the harness makes that instant happen every time: gdb, on the process's host, stops it at the system
call where the window opens (a `catch syscall` with a condition on its arguments), holds it there until
the other process has visibly done its part (read from /proc and the pipes' FIONREAD, never a blind
sleep), then lets it go and detaches. Nothing is changed in PBS: the process only runs later than
usual, as it would on a loaded host. gdb must be on the host (the local hosts' image has it; a VM needs
`apt-get install gdb`); x86_64 only (the conditions read its registers).

Each hold writes what it saw to an events file on the host (armed, held: on which call and fd, released:
why and after how long, or gave up) and the test asserts on those events before it asserts on PBS: a hold
that never engaged is a harness failure, never taken for a pass or for the bug.
"""

from __future__ import annotations

import json
import shlex
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from pbs_harness.remote.cluster import Cluster

HOLD_DIR = "/run/pbs-harness/holds"

# Where the hold stops the process and what it waits for before it lets it go (HOLD_SCRIPT's SELECT).
READER_PAST_ZERO_TIMEOUT_READ = "reader-past-zero-timeout-read"
ACK_AND_RECORD_WAITING = "ack-and-record-waiting"
RELEASES = (READER_PAST_ZERO_TIMEOUT_READ, ACK_AND_RECORD_WAITING)

# Runs inside gdb (its Python) on the host, attached to the process. CONFIG is filled in by the launcher.
HOLD_SCRIPT = r'''
import fcntl, json, os, termios, time
import gdb

CONFIG = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.json")))
EVENTS = os.path.join(CONFIG["dir"], "events.jsonl")
PID = CONFIG["pid"]


def event(name, **fields):
    with open(EVENTS, "a") as out:
        out.write(json.dumps({"event": name, "at": time.time(), **fields}) + "\n")


def fionread(pid, fd):
    """Bytes waiting in the pipe behind pid's fd (a second open of the same pipe; nothing is read)."""
    try:
        probe = os.open(f"/proc/{pid}/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return int.from_bytes(fcntl.ioctl(probe, termios.FIONREAD, b"\0\0\0\0"), "little")
    finally:
        os.close(probe)


def pipe_fds(pid, *, reading):
    """{fd: 'pipe:[inode]'} of pid's pipe ends opened for reading (or for writing)."""
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            flags = int(next(l for l in open(f"/proc/{pid}/fdinfo/{fd}") if l.startswith("flags:")).split()[1], 8)
        except (OSError, StopIteration):
            continue
        if target.startswith("pipe:") and ((flags & 3) == 0) == reading:
            out[int(fd)] = target
    return out


def readers_of(target, but):
    """(pid, fd) of every process other than `but` holding the read end of pipe `target`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == but:
            continue
        try:
            fds = pipe_fds(int(pid), reading=True)
        except OSError:
            continue
        found += [(int(pid), fd) for fd, t in fds.items() if t == target]
    return found


def syscall_of(pid):
    try:
        return open(f"/proc/{pid}/syscall").read().split()
    except OSError:
        return []


def wait_for(what, check):
    """Poll `check` every 20 ms until it returns a dict (released) or CONFIG['max_hold'] s pass."""
    start = time.monotonic()
    while time.monotonic() - start < CONFIG["max_hold"]:
        seen = check()
        if seen:
            event("released", why=what, waited=round(time.monotonic() - start, 3), **seen)
            return True
        time.sleep(0.02)
    event("gave-up", why=what, waited=round(time.monotonic() - start, 3))
    return False


def reader_past_zero_timeout_read(fd):
    """The writer stopped right after the first write of a record to pipe `fd`: wait until the reader
    has read what was written (the pipe is empty) and is back in its 1 s poll (poll, timeout 1000 ms),
    i.e. past the zero-timeout read that looked for the rest of the record."""
    target = os.readlink(f"/proc/{PID}/fd/{fd}")
    readers = readers_of(target, PID)
    event("held", call="write", fd=fd, pipe=target, readers=[p for p, _ in readers])
    if not readers:
        event("gave-up", why="nobody reads the pipe")
        return False

    def check():
        if fionread(PID, fd) != 0:
            return None
        for pid, _ in readers:
            call = syscall_of(pid)
            if len(call) >= 4 and call[0] == "7" and int(call[3], 16) == 1000:
                return {"reader": pid, "reader_syscall": " ".join(call[:4])}
        return None

    return wait_for("the reader took the first part and is back in its 1 s poll", check)


def ack_and_record_waiting(fd, loop_fd):
    """The reader stopped as it was about to poll pipe `fd` (its ack) with no wait, right after a 1 s poll
    of `loop_fd` (the failed hosts' pipe): wait until `fd` holds an ack (4 bytes) and `loop_fd` a whole
    record (a size_t and a name of at least one byte)."""
    event("held", call="poll", fd=fd, pipe=os.readlink(f"/proc/{PID}/fd/{fd}"), loop_fd=loop_fd,
          loop_pipe=os.readlink(f"/proc/{PID}/fd/{loop_fd}"), waiting_at_hold=fionread(PID, loop_fd))

    def check():
        ack, waiting = fionread(PID, fd) or 0, fionread(PID, loop_fd) or 0
        if ack >= 4 and waiting >= 9:
            return {"ack_bytes": ack, "waiting_bytes": waiting}
        return None

    return wait_for("the ack and a whole record are both in the reader's pipes", check)


def first_match(state):
    """Hold at the first call the catchpoint's condition lets through."""
    return lambda: reader_past_zero_timeout_read(int(gdb.parse_and_eval("$rdi")))


def ack_poll_of_the_loop(state):
    """Hold at a poll of one fd with no wait that follows a 1 s poll of ANOTHER fd: the ack poll of the
    starter's failed-host loop (a 1 s poll of the failed hosts' pipe, then the ack pipe with no wait).
    Earlier single-pipe waits poll the ack pipe for 1 s, and a name is read with no wait from the pipe
    just polled for 1 s: neither is held."""
    fd, timeout = int(gdb.parse_and_eval("*(int *)$rdi")), int(gdb.parse_and_eval("(int) $rdx"))
    if timeout == 1000:
        state["loop_fd"] = fd
        return None
    if timeout == 0 and state.get("loop_fd") not in (None, fd):
        return lambda: ack_and_record_waiting(fd, state["loop_fd"])
    return None


SELECT = {
    "reader-past-zero-timeout-read": first_match,
    "ack-and-record-waiting": ack_poll_of_the_loop,
}

gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute(f"catch syscall {CONFIG['syscall']}")
gdb.execute(f"condition $bpnum {CONFIG['condition']}")
event("armed", pid=PID, syscall=CONFIG["syscall"], condition=CONFIG["condition"])
state = {}
try:
    while True:
        gdb.execute("continue")
        if not gdb.selected_inferior().pid:
            event("gave-up", why="the process exited before the call")
            break
        hold = SELECT[CONFIG["release"]](state)
        if hold is not None:
            hold()
            break
finally:
    if gdb.selected_inferior().pid:
        gdb.execute("delete")
        gdb.execute("detach")
    event("detached")
'''

# Runs on the host as root (`cfg`: the hold's config, sent on stdin with this text): waits for the process
# to hold (a given pid, or a job starter in its 1 s poll), writes the hold's files and starts gdb on it in
# a session of its own.
LAUNCHER = r'''
import json, os, subprocess, sys, time
os.makedirs(cfg["dir"], exist_ok=True)


def comm(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""


def starter_in_loop():
    """A job starter (a pbs_mom child of pbs_mom) in a 1 s poll of one pipe: waiting for failed hosts."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1]
            call = open(f"/proc/{pid}/syscall").read().split()
            if comm(pid) != "pbs_mom" or comm(ppid) != "pbs_mom" or len(call) < 4:
                continue
            if call[0] == "7" and int(call[2], 16) == 1 and int(call[3], 16) == 1000:
                return int(pid)
        except (OSError, IndexError, ValueError):
            continue
    return None


pid = cfg["pid"]
deadline = time.monotonic() + cfg["find_timeout"]
while pid is None and time.monotonic() < deadline:
    pid = starter_in_loop()
    if pid is None:
        time.sleep(0.05)
if pid is None:
    print(json.dumps({"error": f"no job starter in its 1 s poll within {cfg['find_timeout']} s"}))
    sys.exit(0)
cfg["pid"] = pid
json.dump(cfg, open(os.path.join(cfg["dir"], "config.json"), "w"))
open(os.path.join(cfg["dir"], "hold.py"), "w").write(cfg.pop("script"))
log = open(os.path.join(cfg["dir"], "gdb.log"), "w")
gdb = subprocess.Popen(
    ["gdb", "-nx", "-batch", "-p", str(pid), "-x", os.path.join(cfg["dir"], "hold.py")],
    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
)
open(os.path.join(cfg["dir"], "gdb.pid"), "w").write(str(gdb.pid))
events = os.path.join(cfg["dir"], "events.jsonl")
while time.monotonic() < deadline + 30:
    if os.path.exists(events) and "armed" in open(events).read():
        print(json.dumps({"pid": pid, "gdb": gdb.pid}))
        sys.exit(0)
    if gdb.poll() is not None:
        break
    time.sleep(0.05)
gdb_log = open(os.path.join(cfg["dir"], "gdb.log")).read()[-2000:]
print(json.dumps({"error": "gdb did not arm its catchpoint", "gdb_log": gdb_log}))
'''


class HoldNotEngaged(RuntimeError):
    """The hold never stopped the process where it should, or gave up waiting: the harness did not make the
    interleaving it meant to, so the test says nothing about PBS (a failure of the harness, never an xfail)."""


@dataclass
class SyscallHold:
    """Hold one process on `target` at a system call (gdb `catch syscall`, `condition`), until `release`
    (RELEASES) is seen, then let it go. `pid` None: a job starter found in a 1 s poll within `find_timeout`
    s. Heal kills gdb (the kernel detaches it), continues the process and removes the files."""

    cluster: Cluster
    target: str
    syscall: str
    condition: str
    release: str
    pid: int | None = None
    find_timeout: float = 30
    max_hold: float = 60
    kind: str = field(init=False)
    directory: str = field(init=False)
    gdb_pid: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.release not in RELEASES:
            raise ValueError(f"release must be one of {', '.join(RELEASES)}, not {self.release!r}")
        self.kind = f"hold-{self.syscall}"
        self.directory = f"{HOLD_DIR}/{uuid.uuid4().hex[:12]}"
        who = f"pid {self.pid}" if self.pid is not None else "the job starter in its 1 s poll"
        self.mechanism = f"gdb: stop {who} at {self.syscall} where {self.condition}, until {self.release}"

    def start(self) -> None:
        host = self.cluster.hosts[self.target]
        arch = host.check(["uname", "-m"]).stdout.strip()
        if arch != "x86_64":
            raise HoldNotEngaged(f"{self.target}: holds read x86_64 registers; this host is {arch}")
        if not host.run(["sh", "-c", "command -v gdb"]).ok:
            raise HoldNotEngaged(f"{self.target}: gdb is not installed (apt-get install gdb on the host)")
        config = {
            "dir": self.directory,
            "pid": self.pid,
            "syscall": self.syscall,
            "condition": self.condition,
            "release": self.release,
            "max_hold": self.max_hold,
            "find_timeout": self.find_timeout,
            "script": HOLD_SCRIPT,
            "launcher": LAUNCHER,
        }
        out = host.check(
            ["python3", "-c", "import json, sys; cfg = json.load(sys.stdin); exec(cfg.pop('launcher'))"],
            stdin=json.dumps(config),
            timeout=self.find_timeout + 60,
        )
        started = json.loads(out.stdout.strip().splitlines()[-1])
        if "error" in started:
            raise HoldNotEngaged(f"{self.target}: {started['error']} {started.get('gdb_log', '')}".strip())
        self.pid, self.gdb_pid = started["pid"], started["gdb"]
        self.mechanism = self.mechanism.replace("the job starter in its 1 s poll", f"job starter pid {self.pid}")

    def events(self) -> list[dict[str, Any]]:
        """What the hold saw so far (armed, held, released or gave-up, detached)."""
        out = self.cluster.hosts[self.target].run(["cat", f"{self.directory}/events.jsonl"], timeout=30)
        return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]

    def released(self, timeout: float) -> dict[str, Any]:
        """The hold's `released` event once it has let the process go; HoldNotEngaged if it gave up, or
        has not held the process within `timeout` s (what it saw is in the message)."""
        deadline = time.monotonic() + timeout
        seen: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            seen = self.events()
            for ev in seen:
                if ev["event"] == "released":
                    return ev
                if ev["event"] == "gave-up":
                    raise HoldNotEngaged(f"{self.target}: the hold gave up ({ev.get('why')}); events: {seen}")
            time.sleep(0.25)
        raise HoldNotEngaged(f"{self.target}: the hold did not release the process within {timeout} s; events: {seen}")

    def heal(self) -> None:
        host = self.cluster.hosts[self.target]
        # The kernel detaches a dead tracer's tracees once it has exited (gone, or a zombie): wait for that,
        # then continue the process (attach's SIGSTOP may still be pending); it must be neither stopped nor
        # traced after.
        script = (
            f"d={shlex.quote(self.directory)}; g=$(cat $d/gdb.pid 2>/dev/null); "
            'if [ -n "$g" ]; then kill -KILL $g 2>/dev/null; '
            "for i in $(seq 100); do s=$(awk '/^State:/ {print $2}' /proc/$g/status 2>/dev/null); "
            '{ [ -n "$s" ] && [ "$s" != Z ]; } || break; sleep 0.1; done; fi; '
        )
        if self.pid is not None:
            script += (
                f"p={self.pid}; kill -CONT $p 2>/dev/null; for i in $(seq 50); do "
                "s=$(grep ^State: /proc/$p/status 2>/dev/null); "
                'case "$s" in *stopped*|*tracing*) sleep 0.1;; *) break;; esac; done; echo "$s"; '
            )
        script += 'rm -rf "$d"'
        state = host.check(["sh", "-c", script]).stdout
        if "stopped" in state or "tracing" in state:
            raise RuntimeError(f"{self.target}: pid {self.pid} still stopped after the hold's heal: {state.strip()}")
