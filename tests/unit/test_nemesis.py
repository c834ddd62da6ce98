"""Nemesis bookkeeping, with a recording fake fault (no hosts are touched)."""

from dataclasses import dataclass, field

import pytest

from pbs_harness.suite.faults import FaultAlreadyActive, Nemesis


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
