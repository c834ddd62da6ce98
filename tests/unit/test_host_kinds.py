"""The registry of host kinds (pbs_harness.hosts): a kind is one module plus one line in KINDS.

Fakes nothing of PBS or of a host: the test kind below is a HostKind whose faults only record
themselves, which proves that the registry imports a kind by its dotted path and that the
interface's defaults (lifecycle refused for unmanaged kinds, heal_leftovers) hold for any kind.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace
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


class _RecordingSshConnection:
    """An ssh host's connection that records each command and answers ok (FAKED: connects nowhere)."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    def run(self, command: str, timeout: float = 120) -> SimpleNamespace:
        self.commands.append(command)
        return SimpleNamespace(ok=True, stdout="", stderr="", rc=0)

    check = run


def test_the_ssh_kind_heals_in_the_base_order_and_always_starts_pbs():
    """resume, reconnect (HostKind.undo_faults, not a sequence of its own), then START_PBS although the
    host answers: an ssh crash kills PBS, not the host, so is_running cannot tell that PBS is down."""
    from pbs_harness.hosts.ssh import CHAIN, START_PBS, SshHost

    assert SshHost.undo_faults is HostKind.undo_faults
    conn = _RecordingSshConnection()
    cluster = SimpleNamespace(hosts={"vm1": conn}, users=lambda: ["pbsuser"])
    h = SshHost("vm1", {}, cluster)
    assert h.is_running()
    conn.commands.clear()
    h.heal_leftovers()
    assert len(conn.commands) == 3, conn.commands  # nothing asked first (undo_faults without `say`)
    resume, reconnect, boot = conn.commands
    assert resume.endswith("| xargs -r kill -CONT")
    assert "pgrep -u pbsuser" in resume
    assert f"-D INPUT -j {CHAIN}" in reconnect
    assert f"-D OUTPUT -j {CHAIN}" in reconnect
    assert boot == START_PBS


def test_the_session_heal_logs_how_each_kind_heals(recording_kind):
    """The fault log's line of the session's heal quotes the kind's HEAL_MECHANISM: the base's, or the ssh
    kind's own (it starts PBS whether or not the host answers)."""
    from pbs_harness.suite.faults import Nemesis

    conn = _RecordingSshConnection()
    cluster = SimpleNamespace(hosts={"vm1": conn, "h1": conn}, users=lambda: ["pbsuser"])
    nemesis = Nemesis(cluster)
    assert nemesis.setup({"vm1": {}, "h1": {hosts.KIND_VAR: "recording"}}) == []
    text = nemesis.log.text()
    assert " begin setup heal-leftovers on h1 via recording: thaw, reconnect, boot if down" in text
    assert " begin setup heal-leftovers on vm1 via ssh: thaw, reconnect, start PBS's stopped daemons (always: " in text


def test_every_registered_kind_imports():
    for name in hosts.names():
        cls = hosts.get_kind_class(name)
        assert isinstance(cls, type), name


def _cluster_of(kind: str):
    """A cluster of one host of `kind` as the fault layer reads it (inventory variables, connections):
    FAKED, nothing connects; the kind's own methods are the real ones."""

    closed: list[str] = []
    conn = SimpleNamespace(close=lambda: closed.append("h1"))
    inventory = SimpleNamespace(hosts={"h1": SimpleNamespace(vars={hosts.KIND_VAR: kind})})
    return SimpleNamespace(inventory=inventory, hosts={"h1": conn})


def test_the_fault_layer_finds_the_kind_in_the_registry_and_logs_its_mechanism(recording_kind):
    from pbs_harness.suite.faults import Nemesis

    nemesis = Nemesis(_cluster_of("recording"))
    fault = nemesis.partition("h1")
    assert isinstance(fault.backend, recording_kind)
    assert fault.backend.log == ["partition"]
    nemesis.heal(fault)
    assert fault.backend.log == ["partition", "reconnect"]
    assert [(r.ended, r.action, r.mechanism) for r in nemesis.log.events] == [
        (False, "start", "recording: records 'partition'"),  # the line before it acts
        (True, "start", "recording: records 'partition'"),
        (False, "heal", "recording: records 'partition'"),
        (True, "heal", "recording: records 'partition'"),
    ]


def test_a_fault_the_kind_does_not_declare_is_refused_before_anything_acts(recording_kind):
    from pbs_harness.suite.faults import FaultNotDeclared, Nemesis

    nemesis = Nemesis(_cluster_of("recording"))
    # crash is declared, but its heal is a boot, which is not: refused whole, not half done.
    with pytest.raises(FaultNotDeclared, match=r"kind 'recording' do not declare the fault\(s\) boot"):
        nemesis.crash_host("h1")
    with pytest.raises(FaultNotDeclared, match=r"pause.*needs_faults\('pause'\)"):
        nemesis.pause_host("h1")
    with pytest.raises(FaultNotDeclared, match="reboot"):
        nemesis.reboot_host("h1")
    assert nemesis.active == []
    assert nemesis.log.events == []


def test_tests_skip_on_an_undeclared_fault_never_on_a_kind_name(recording_kind):
    """What the needs_faults marker asks (pbs_harness.suite.plugin): capabilities decide."""
    hv = {"h1": {hosts.KIND_VAR: "recording"}, "h2": {hosts.KIND_VAR: "aws"}}
    assert hosts.undeclared(hv, ("partition",)) is None
    why = hosts.undeclared(hv, ("crash", "boot"))
    assert why == "needs the fault(s) boot, which host h1's kind (recording) does not declare"
    assert hosts.undeclared({"h2": hv["h2"]}, ("crash", "boot", "reboot", "partition", "pause")) is None


def test_every_shipped_kind_declares_the_faults_the_suites_use():
    for name in hosts.names():
        assert {"crash", "boot", "pause", "partition"} <= hosts.get_kind_class(name).FAULTS, name
