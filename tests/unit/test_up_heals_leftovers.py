"""`up` on a cluster a killed run left faulted (localcluster/provider.up, through the kind's
HostKind.undo_faults): paused hosts are resumed, partitioned ones reconnected, each said; resume and
reconnect act whatever the checks found (a run killed while it set a fault may leave half of one).
Fakes: a host kind that only records calls (no namespaces, no cgroups)."""

from __future__ import annotations

import pytest

from pbs_harness.hosts.base import HostKind


class FakeHost(HostKind):
    NAME = "fake-up"

    def __init__(self, paused: bool, partitioned: bool) -> None:
        super().__init__("pbsh03", {})
        self.paused, self.partitioned = paused, partitioned
        self.calls: list[str] = []

    def is_running(self) -> bool:
        return True

    def is_paused(self) -> bool:
        self.calls.append("is_paused")
        return self.paused

    def is_partitioned(self) -> bool:
        self.calls.append("is_partitioned")
        return self.partitioned

    def crash(self) -> None: ...

    def boot(self) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None:
        self.calls.append("resume")
        self.paused = False

    def partition(self) -> None: ...

    def reconnect(self) -> None:
        self.calls.append("reconnect")
        self.partitioned = False


PAUSED = "host pbsh03: paused (left by an interrupted test run): resuming it"
PARTITIONED = "host pbsh03: partitioned (left by an interrupted test run): reconnecting it"


@pytest.mark.parametrize(
    ("paused", "partitioned", "said"),
    [
        (False, False, []),
        (True, False, [PAUSED]),
        (False, True, [PARTITIONED]),
        (True, True, [PAUSED, PARTITIONED]),
    ],
)
def test_up_heals_what_a_killed_run_left(paused: bool, partitioned: bool, said: list[str]) -> None:
    host, heard = FakeHost(paused, partitioned), []
    host.undo_faults(heard.append)
    assert host.calls == ["is_paused", "resume", "is_partitioned", "reconnect"]
    assert (host.paused, host.partitioned) == (False, False)
    assert heard == said


def test_without_say_nothing_is_asked_and_both_act() -> None:
    """The nemesis's setup (heal_leftovers) does not ask: on a cloud host each question costs a call."""
    host = FakeHost(True, True)
    host.undo_faults()
    assert host.calls == ["resume", "reconnect"]
    assert (host.paused, host.partitioned) == (False, False)
