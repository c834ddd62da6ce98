"""One test session per cluster at a time.

Every session restores the cluster to its baseline after each test (deleting all jobs and
reservations), so two concurrent sessions on one cluster would wreck each other's tests. The
session takes an exclusive flock on a lock file named after the cluster; a second session
waits, saying who holds the lock, instead of failing obscurely half-way through.

Waiters are served first come, first served: each one drops a ticket (time + pid) in a queue
folder next to the lock and only the oldest ticket whose process is alive may take the lock, so
a long queue of short sessions cannot starve one that arrived earlier.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

LOCK_DIR = Path(os.environ.get("PBS_HARNESS_LOCK_DIR", "/run/lock/pbs-harness"))
# Set while a session holds a lock, so that pytest sessions it starts itself (the harness
# self-tests run child sessions on the same cluster) share the lock instead of deadlocking.
HELD_ENV = "PBS_HARNESS_SESSION_LOCK_HELD"


def lock_path(cluster_key: str) -> Path:
    """The lock file of a cluster identified by `cluster_key` (server host + address)."""
    digest = hashlib.sha256(cluster_key.encode()).hexdigest()[:16]
    return LOCK_DIR / f"session-{digest}.lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _first_in_line(queue: Path, ticket: Path) -> bool:
    """True when `ticket` is the oldest ticket of a living process (dead ones are removed)."""
    for other in sorted(queue.iterdir()):
        if other == ticket:
            return True
        try:
            pid = int(other.name.split("-")[1])
        except (IndexError, ValueError):
            pid = -1
        if pid > 0 and _alive(pid):
            return False
        other.unlink(missing_ok=True)  # left by a killed session
    return True


def busy(cluster_key: str) -> bool:
    """True when another session holds the cluster's lock or is queued for it (this one holds nothing)."""
    path = lock_path(cluster_key)
    if os.environ.get(HELD_ENV) == str(path) or not path.exists():
        return False
    with path.open() as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    queue = path.with_suffix(".queue")
    tickets = queue.iterdir() if queue.is_dir() else ()
    return any(_alive(int(t.name.split("-")[1])) for t in tickets if t.name.split("-")[-1].isdigit())


@contextlib.contextmanager
def hold(cluster_key: str, say: Callable[[str], None], poll: float = 2.0, report_every: float = 60.0) -> Iterator[Path]:
    """Hold the cluster's session lock for the body; wait (reporting) while another session has it."""
    path = lock_path(cluster_key)
    if os.environ.get(HELD_ENV) == str(path):
        yield path  # our parent session holds it
        return
    queue = path.with_suffix(".queue")
    queue.mkdir(parents=True, exist_ok=True)
    ticket = queue / f"{time.time_ns():020d}-{os.getpid()}"
    ticket.touch()
    with path.open("a+") as handle:
        started = time.monotonic()
        last_report = -report_every
        try:
            while True:
                if _first_in_line(queue, ticket):
                    try:
                        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        pass
                waited = time.monotonic() - started
                if waited - last_report >= report_every:
                    handle.seek(0)
                    holder = handle.read().strip() or "unknown"
                    ahead = sum(1 for t in queue.iterdir() if t.name < ticket.name)
                    say(
                        f"another test session holds this cluster ({holder}); waiting ({waited:.0f}s so far, "
                        f"{ahead} session(s) queued ahead)"
                    )
                    last_report = waited
                time.sleep(poll)
        finally:
            ticket.unlink(missing_ok=True)
        waited = time.monotonic() - started
        if waited >= poll:
            say(f"session lock acquired after {waited:.0f}s of waiting")
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} since {time.strftime('%H:%M:%S')}\n")
        handle.flush()
        os.environ[HELD_ENV] = str(path)
        try:
            yield path
        finally:
            os.environ.pop(HELD_ENV, None)
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)
