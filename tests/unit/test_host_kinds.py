"""The registry of host kinds (pbs_harness.hosts): a kind is one module plus one line in KINDS.

Fakes nothing of PBS or of a host: the test kind below is a HostKind whose faults only record
themselves, which proves that the registry imports a kind by its dotted path and that the
interface's defaults (lifecycle refused for unmanaged kinds, heal_leftovers) hold for any kind.
"""

from __future__ import annotations

import sys
from typing import ClassVar

import pytest

from pbs_harness import hosts
from pbs_harness.hosts.base import CRASH, PARTITION, HostKind, UnsupportedByKind


class RecordingHost(HostKind):
    NAME = "recording"
    FAULTS = frozenset({CRASH, PARTITION})
    MECHANISMS: ClassVar[dict[str, str]] = {CRASH: "records 'crash'", PARTITION: "records 'partition'"}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.log: list[str] = []
        self.running, self.paused, self.cut = False, True, True

    def is_running(self) -> bool:
        return self.running

    def is_paused(self) -> bool:
        return self.paused

    def is_partitioned(self) -> bool:
        return self.cut

    def crash(self) -> None:
        self.log.append("crash")
        self.running = False

    def boot(self) -> None:
        self.log.append("boot")
        self.running = True

    def pause(self) -> None:
        self.log.append("pause")
        self.paused = True

    def resume(self) -> None:
        self.log.append("resume")
        self.paused = False

    def partition(self) -> None:
        self.log.append("partition")
        self.cut = True

    def reconnect(self) -> None:
        self.log.append("reconnect")
        self.cut = False


@pytest.fixture
def recording_kind(monkeypatch):
    """One line in the table is all a new kind needs."""
    monkeypatch.setitem(hosts.KINDS, "recording", f"{__name__}.RecordingHost")
    return sys.modules[__name__].RecordingHost


def test_a_new_kind_is_one_line_in_the_table(recording_kind):
    assert hosts.get_kind_class("recording") is recording_kind
    h = hosts.host("h1", {hosts.KIND_VAR: "recording"})
    assert isinstance(h, HostKind)
    assert (h.name, h.kind) == ("h1", "recording")


def test_kind_is_read_from_one_variable(recording_kind):
    assert hosts.kind_name({hosts.KIND_VAR: "recording"}) == "recording"
    assert hosts.kind_name({}) == "ssh"


def test_inventories_written_before_the_kind_variable_keep_their_kind():
    assert hosts.kind_name({"local_cluster_host": True}) == "namespace"
    assert hosts.kind_name({"local_cluster_host": True, "local_cluster_flavour": "system"}) == "system"


def test_unknown_kind_names_the_known_ones_and_the_variable():
    with pytest.raises(hosts.UnknownKind, match=r"'lxd'.*namespace.*pbs_harness_host_kind"):
        hosts.get_kind_class("lxd")


def test_capabilities_not_names(recording_kind):
    h = hosts.host("h1", {hosts.KIND_VAR: "recording"})
    assert h.can(CRASH)
    assert h.can(PARTITION)
    assert not h.can("pause")


def test_unmanaged_kind_refuses_lifecycle(recording_kind):
    h = hosts.host("h1", {hosts.KIND_VAR: "recording"})
    assert not h.managed
    with pytest.raises(UnsupportedByKind, match=r"recording.*create"):
        h.create()
    with pytest.raises(UnsupportedByKind):
        h.destroy()


def test_heal_leftovers_thaws_reconnects_boots(recording_kind):
    h = hosts.host("h1", {hosts.KIND_VAR: "recording"})
    h.heal_leftovers()
    assert h.log == ["resume", "reconnect", "boot"]
    assert (h.running, h.paused, h.cut) == (True, False, False)
    h.log.clear()
    h.heal_leftovers()  # idempotent: a running host is not booted again
    assert h.log == ["resume", "reconnect"]


def test_every_registered_kind_imports():
    for name in hosts.names():
        cls = hosts.get_kind_class(name)
        assert isinstance(cls, type), name
