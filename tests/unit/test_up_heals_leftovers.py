"""`up` on a cluster a killed run left faulted: paused hosts are resumed, partitioned ones
reconnected, each said. Fakes: a host backend that only records calls (no namespaces, no cgroups)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pbs_harness.localcluster import provider


@dataclass
class FakeHost:
    name: str = "pbsh03"
    paused: bool = False
    partitioned: bool = False
    calls: list[str] = field(default_factory=list)

    def is_paused(self) -> bool:
        return self.paused

    def is_partitioned(self) -> bool:
        return self.partitioned

    def resume(self) -> None:
        self.calls.append("resume")
        self.paused = False

    def reconnect(self) -> None:
        self.calls.append("reconnect")
        self.partitioned = False


@pytest.mark.parametrize(
    ("paused", "partitioned", "calls"),
    [
        (False, False, []),
        (True, False, ["resume"]),
        (False, True, ["reconnect"]),
        (True, True, ["resume", "reconnect"]),
    ],
)
def test_up_heals_what_a_killed_run_left(paused: bool, partitioned: bool, calls: list[str]) -> None:
    host, said = FakeHost(paused=paused, partitioned=partitioned), []
    provider._heal_fault_leftovers(host, said.append)  # type: ignore[arg-type]
    assert host.calls == calls
    assert (host.paused, host.partitioned) == (False, False)
    assert len(said) == len(calls)
    assert all(m.startswith("host pbsh03: ") and "interrupted test run" in m for m in said)
