"""The session lock serialises test sessions on one cluster (real flock, temporary lock dir).

Other sessions are real processes (multiprocessing); each test ends every one it started.
"""

import multiprocessing
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pbs_harness.suite import session_lock


@pytest.fixture
def processes() -> Iterator[list[multiprocessing.Process]]:
    """The processes a test starts; any still alive at its end (a failed assert) are killed."""
    procs: list[multiprocessing.Process] = []
    yield procs
    for p in procs:
        if p.is_alive():
            p.kill()
        p.join(10)


def _hold_for(lock_dir: str, seconds: float, ready) -> None:
    session_lock.LOCK_DIR = Path(lock_dir)
    with session_lock.hold("srv@10.0.0.1", lambda _t: None):
        ready.set()
        time.sleep(seconds)


def _holder(lock_dir: Path, seconds: float, processes: list[multiprocessing.Process]) -> multiprocessing.Process:
    """Another session holding the lock for `seconds`, started and holding on return."""
    ready = multiprocessing.Event()
    holder = multiprocessing.Process(target=_hold_for, args=(str(lock_dir), seconds, ready))
    holder.start()
    processes.append(holder)
    assert ready.wait(10)
    return holder


def test_second_session_waits_and_names_the_holder(tmp_path, monkeypatch, processes):
    monkeypatch.setattr(session_lock, "LOCK_DIR", tmp_path)
    holder = _holder(tmp_path, 1.5, processes)
    said: list[str] = []
    started = time.monotonic()
    with session_lock.hold("srv@10.0.0.1", said.append, poll=0.1):
        waited = time.monotonic() - started
    holder.join()
    assert waited >= 1.0
    assert said
    assert f"pid {holder.pid}" in said[0]


def test_different_clusters_do_not_block(tmp_path, monkeypatch):
    monkeypatch.setattr(session_lock, "LOCK_DIR", tmp_path)
    with session_lock.hold("a@1", lambda _t: None), session_lock.hold("b@2", lambda _t: None):
        assert session_lock.lock_path("a@1") != session_lock.lock_path("b@2")


def test_child_of_the_holder_shares_the_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(session_lock, "LOCK_DIR", tmp_path)
    monkeypatch.delenv(session_lock.HELD_ENV, raising=False)
    # The inner hold is what a child pytest session started by a test does: it inherits the variable.
    with (
        session_lock.hold("srv@10.0.0.1", lambda _t: None) as path,
        session_lock.hold("srv@10.0.0.1", lambda _t: None, poll=0.01) as inner,
    ):
        assert inner == path
    assert session_lock.HELD_ENV not in os.environ


def _queue_then_hold(lock_dir: str, name: str, order, hold_s: float) -> None:
    session_lock.LOCK_DIR = Path(lock_dir)
    with session_lock.hold("srv@10.0.0.1", lambda _t: None, poll=0.05):
        order.put(name)
        time.sleep(hold_s)


def test_waiters_are_served_in_arrival_order(tmp_path, monkeypatch, processes):
    monkeypatch.setattr(session_lock, "LOCK_DIR", tmp_path)
    holder = _holder(tmp_path, 1.5, processes)
    queue = session_lock.lock_path("srv@10.0.0.1").with_suffix(".queue")
    order = multiprocessing.Queue()
    waiters = []
    for name in ("first", "second", "third"):
        w = multiprocessing.Process(target=_queue_then_hold, args=(str(tmp_path), name, order, 0.2))
        w.start()
        processes.append(w)
        waiters.append(w)
        # Arrival order is what is under test: the next waiter starts once this one's ticket is queued.
        deadline = time.monotonic() + 10
        while len(list(queue.iterdir())) < len(waiters) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(list(queue.iterdir())) == len(waiters)
    for w in [holder, *waiters]:
        w.join(20)
        assert w.exitcode == 0, f"{w.name} did not finish its turn"
    assert [order.get(timeout=1) for _ in waiters] == ["first", "second", "third"]


def test_ticket_of_a_dead_session_does_not_block(tmp_path, monkeypatch):
    monkeypatch.setattr(session_lock, "LOCK_DIR", tmp_path)
    queue = session_lock.lock_path("srv@10.0.0.1").with_suffix(".queue")
    queue.mkdir(parents=True)
    (queue / f"{1:020d}-999999999").touch()  # no such pid
    with session_lock.hold("srv@10.0.0.1", lambda _t: None, poll=0.05):
        assert not (queue / f"{1:020d}-999999999").exists()
