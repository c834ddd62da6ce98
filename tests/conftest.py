"""Unit-session guards: no test may leave a process behind, and none sees this machine's cluster.

The pytest process makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so a process
whose parent died — e.g. a forked stand-in blocked in read(2) after its parent was killed — is
re-parented to this session rather than to init, and is still seen as ours. After each test, a
live descendant that was not there before it is a leak: the test errors in teardown naming the
process, which is then killed. At session end the same check covers session-scoped fixtures and
fails the session. Zombies are ignored: they are already dead.

The session's PBS_HARNESS_STATE_DIR is an empty temporary directory and PBS_HARNESS_INVENTORY is
unset, for the session and every child pytest it starts: unit tests never read, judge or touch a
local cluster that happens to be up (a test wanting a state dir sets its own).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# Child pytest sessions for the plugins' tests (tests/unit/test_progress.py).
pytest_plugins = ["pytester"]

PR_SET_CHILD_SUBREAPER = 36
# How long a process on its way out (signalled, exiting) gets before it counts as left behind.
EXIT_GRACE_S = 5.0


@dataclass(frozen=True)
class Proc:
    pid: int
    comm: str
    cmdline: str

    def describe(self) -> str:
        return f"pid {self.pid} ({self.comm}): {self.cmdline[:200]}"


def _stat(pid: str) -> tuple[str, int] | None:
    """(state, ppid) of a process, or None when it is gone."""
    # os.open/os.read, not Path.read_text: this runs for every process on the machine twice per test, and
    # the text layer made a scan 2-4 times slower (#33; docs/performance.md, "The unit suite's time").
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        after_comm = os.read(fd, 4096).rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    finally:
        os.close(fd)
    return after_comm[0].decode(), int(after_comm[1])


def live_descendants(root: int | None = None) -> dict[int, Proc]:
    """Every live (non-zombie) process below `root` (default: this process), by pid."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    live: set[int] = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        stat = _stat(pid)
        if stat is None:
            continue
        state, ppid = stat
        children.setdefault(ppid, []).append(int(pid))
        if state not in "ZX":
            live.add(int(pid))
    found: dict[int, Proc] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        if pid in live:
            found[pid] = _describe(pid)
    return found


def _describe(pid: int) -> Proc:
    comm = cmdline = "?"
    with contextlib.suppress(OSError):
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    return Proc(pid, comm, cmdline)


def left_behind(before: set[int]) -> list[Proc]:
    """Descendants not in `before` still alive after the grace period (a poll, not a sleep)."""
    deadline = time.monotonic() + EXIT_GRACE_S
    while True:
        new = [p for pid, p in live_descendants().items() if pid not in before]
        if not new or time.monotonic() >= deadline:
            return new
        time.sleep(0.05)


def _kill(procs: list[Proc]) -> None:
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, signal.SIGKILL)


STATE_DIR_KEY = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
    config.stash[STATE_DIR_KEY] = os.environ["PBS_HARNESS_STATE_DIR"] = tempfile.mkdtemp(prefix="pbsh-unit-state-")
    os.environ.pop("PBS_HARNESS_INVENTORY", None)


def pytest_unconfigure(config: pytest.Config) -> None:
    if STATE_DIR_KEY in config.stash:
        shutil.rmtree(config.stash[STATE_DIR_KEY], ignore_errors=True)


@pytest.fixture(autouse=True)
def _no_process_left_behind() -> Iterator[None]:
    before = set(live_descendants())
    yield
    leaked = left_behind(before)
    if leaked:
        _kill(leaked)
        pytest.fail(
            "the test left processes behind (now killed): " + "; ".join(p.describe() for p in leaked),
            pytrace=False,
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    leaked = left_behind(set())
    if not leaked:
        return
    _kill(leaked)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_sep("=", "processes left behind by the unit session (now killed): session failed", red=True)
        for p in leaked:
            reporter.write_line(p.describe())
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
