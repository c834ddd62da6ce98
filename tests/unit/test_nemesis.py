"""Nemesis bookkeeping, with a recording fake fault (no hosts are touched)."""

from dataclasses import dataclass, field

import pytest

from pbs_harness.suite.faults import FaultAlreadyActive, Nemesis, RejectHook


@dataclass
class FakeFault:
    target: str
    kind: str = "fake"
    log: list[str] = field(default_factory=list)
    fail_heal: bool = False

    def start(self) -> None:
        self.log.append(f"start {self.target}")

    def heal(self) -> None:
        self.log.append(f"heal {self.target}")
        if self.fail_heal:
            raise RuntimeError("boom")


def test_inject_heals_on_error() -> None:
    nemesis, fault = Nemesis(), FakeFault("h1")
    with pytest.raises(ZeroDivisionError), nemesis.inject(fault):
        _ = 1 / 0
    assert fault.log == ["start h1", "heal h1"]
    assert nemesis.active == []


def test_double_start_is_refused() -> None:
    nemesis = Nemesis()
    nemesis.start(FakeFault("h1"))
    with pytest.raises(FaultAlreadyActive):
        nemesis.start(FakeFault("h1"))
    nemesis.start(FakeFault("h2"))
    assert len(nemesis.active) == 2


def test_heal_all_heals_everything_and_reports_failures() -> None:
    nemesis = Nemesis()
    bad, good = FakeFault("h1", fail_heal=True), FakeFault("h2")
    nemesis.start(bad)
    nemesis.start(good)
    problems = nemesis.heal_all()
    assert good.log[-1] == "heal h2"
    assert bad.log[-1] == "heal h1"
    assert problems == ["healing fake on h1: boom"]
    assert nemesis.active == []


def test_failing_hook_bodies_compile() -> None:
    from pbs_harness.suite.faults.hookbodies import failing_hook_body

    for how in ("reject", "exception", "sleep"):
        body = failing_hook_body(("pbsh02", "pbsh03"), how, 5)
        compile(body, f"hook-{how}", "exec")
        assert "['pbsh02', 'pbsh03']" in body


class FakeHookFault(RejectHook):
    """A RejectHook that records its start and heal instead of running qmgr (FAKE: no cluster)."""

    def __init__(self, log: list[str]) -> None:  # no dataclass init: no cluster
        self.kind, self.target, self.log = "hook-execjob_launch", "h3", log

    def start(self) -> None:
        self.log.append("start hook")

    def heal(self) -> None:
        self.log.append("heal hook")


def test_hook_faults_heal_last_once_the_healed_moms_are_connected(monkeypatch) -> None:
    """A hook deleted while a mom is down can come back on that mom (docs/test-core.md, "A hook deleted
    while a mom is down"): the hook fault, started after the mom's kill, is healed after it and after the
    wait for the moms (faked)."""
    log: list[str] = []
    nemesis = Nemesis()
    monkeypatch.setattr(Nemesis, "_wait_for_moms_connected", lambda self: log.append("moms connected"))
    kill = FakeFault("h2", log=log)
    nemesis.start(kill)
    nemesis.start(FakeHookFault(log))
    assert nemesis.heal_all() == []
    assert log == ["start h2", "start hook", "heal h2", "moms connected", "heal hook"]
    assert nemesis.active == []


def test_hook_faults_alone_heal_without_waiting(monkeypatch) -> None:
    log: list[str] = []
    nemesis = Nemesis()
    monkeypatch.setattr(Nemesis, "_wait_for_moms_connected", lambda self: log.append("moms connected"))
    nemesis.start(FakeHookFault(log))
    assert nemesis.heal_all() == []
    assert log == ["start hook", "heal hook"]
