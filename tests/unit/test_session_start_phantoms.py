"""baseline._clear_phantom_assignments, used at session start: resources assigned with no job are
cleared by a pbs_server restart and reported. Fake: a small stand-in for the harness's Pbs client
(nodes, jobs, server status, queues, restart), whose restart recomputes the assignments as PBS does."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pbs_harness.suite import baseline


def fake_pbs(assigned: dict[str, Any], *, cleared_by_restart: bool = True) -> SimpleNamespace:
    nodes = {"n2": {"state": "free", "resources_assigned": dict(assigned)}, "n3": {"state": "free"}}
    restarts: list[float] = []

    def restart(timeout: float) -> None:
        restarts.append(timeout)
        if cleared_by_restart:
            nodes["n2"]["resources_assigned"] = {}

    return SimpleNamespace(
        nodes=SimpleNamespace(all=lambda: nodes),
        jobs=SimpleNamespace(all=lambda history=False: {}),
        server=SimpleNamespace(status=lambda: {}, queues=lambda: {"workq": {}}, restart=restart),
        restarts=restarts,
    )


@pytest.fixture(autouse=True)
def quick_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 10 s in which a deleted job's assignment drains, cut to 0.2 s."""
    real = baseline.wait_until
    monkeypatch.setattr(baseline, "wait_until", lambda *a, timeout, **k: real(*a, timeout=min(timeout, 0.2), **k))


def test_no_phantoms_no_restart() -> None:
    pbs = fake_pbs({"ncpus": 0, "mem": "0kb"})
    assert baseline._clear_phantom_assignments(pbs, timeout=1) is None
    assert pbs.restarts == []


def test_a_phantom_is_cleared_by_a_restart_and_named() -> None:
    pbs = fake_pbs({"ncpus": 2})
    assert baseline._clear_phantom_assignments(pbs, timeout=1) == (["vnode n2: resources_assigned.ncpus = 2"], [])
    assert pbs.restarts == [1]


def test_a_phantom_a_restart_does_not_clear_is_left_named() -> None:
    pbs = fake_pbs({"ncpus": 2}, cleared_by_restart=False)
    found = ["vnode n2: resources_assigned.ncpus = 2"]
    assert baseline._clear_phantom_assignments(pbs, timeout=1) == (found, found)
