"""Host backends chosen by a host's inventory variables, host faults acting through them, and the fault log.

Faked: the hosts' backends are a recording FakeBackend (no host is crashed, paused or cut off); the
cluster's SSH connections are FakeConnection objects that only record close(); for the local
backends, the cluster is a state directory in tmp_path and network.link_names() reports its bridge
(no bridge exists); for exact fault-log lines, the log's clocks (time.monotonic, datetime.now).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pbs_harness import hosts
from pbs_harness.hosts.base import KIND_VAR
from pbs_harness.hosts.namespace import NamespaceHost
from pbs_harness.hosts.ssh import SshHost
from pbs_harness.hosts.system import SystemHost
from pbs_harness.localcluster import network, state
from pbs_harness.localcluster.spec import ClusterSpec
from pbs_harness.remote.cluster import Cluster
from pbs_harness.remote.inventory import Inventory, InventoryHost
from pbs_harness.suite import faults
from pbs_harness.suite.faults import HostCrash, HostPartition, HostPause, Nemesis, host_of
from pbs_harness.suite.faults import log as fault_log
from pbs_harness.suite.faults.log import FaultLog

# --- which backend --------------------------------------------------------------------------------


def cluster_of(hostvars: dict[str, dict], connections: dict | None = None) -> Cluster:
    hosts = {name: InventoryHost(name, v, frozenset({"pbs_moms"})) for name, v in hostvars.items()}
    inv = Inventory(Path("/nowhere/hosts.yml"), hosts, {"pbs_server": [next(iter(hosts))], "pbs_moms": list(hosts)})
    return Cluster(inv, connections or {})


def local_state(root: Path, flavour: str, monkeypatch: pytest.MonkeyPatch) -> state.ClusterState:
    spec = ClusterSpec(prefix="sy", subnet="10.73.0.0/24", host_count=2, flavour=flavour)
    st = state.ClusterState.from_spec(spec)
    st.image_lowerdirs = ["/cache/images/debian-12-host-abc/tree"]
    state.save(st, root)
    monkeypatch.setattr(network, "link_names", lambda: {spec.bridge})  # FAKE: the bridge is up
    return st


def local_vars(root: Path, **more: object) -> dict:
    return {"ansible_host": "10.73.0.12", state.LOCAL_HOST_VAR: True, state.STATE_DIR_VAR: str(root), **more}


def test_a_host_of_an_older_inventory_keeps_its_kind() -> None:
    assert hosts.kind_name({"ansible_host": "192.0.2.10"}) == "ssh"
    assert hosts.kind_name({state.LOCAL_HOST_VAR: True}) == "namespace"  # an inventory from before flavours
    assert hosts.kind_name({state.LOCAL_HOST_VAR: True, "local_cluster_flavour": "system"}) == "system"
    assert hosts.kind_name({state.LOCAL_HOST_VAR: False, "local_cluster_flavour": "system"}) == "ssh"


def test_a_host_that_is_not_local_gets_the_ssh_kind() -> None:
    cluster = cluster_of({"vm1": {"ansible_host": "192.0.2.10"}, "vm2": {"ansible_host": "192.0.2.11"}})
    backend = host_of(cluster, "vm2")
    assert isinstance(backend, SshHost)
    assert (backend.name, backend.kind, backend.cluster) == ("vm2", "ssh", cluster)
    assert "over SSH" in backend.mechanisms["crash"]


def test_a_system_host_gets_the_system_kind_in_the_cluster_its_inventory_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "state"
    local_state(root, "system", monkeypatch)
    system = {KIND_VAR: "system"}
    cluster = cluster_of({"sy01": local_vars(root, **system), "sy02": local_vars(root, **system)})
    backend = host_of(cluster, "sy02")
    assert isinstance(backend, SystemHost)
    assert (backend.name, backend.kind, backend.root) == ("sy02", "system", root)
    assert backend.lowerdirs == [Path("/cache/images/debian-12-host-abc/tree")]
    assert "systemd-nspawn --boot" in backend.mechanisms["boot"]


def test_a_namespace_host_gets_the_namespace_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "state"
    local_state(root, "namespace", monkeypatch)
    backend = host_of(cluster_of({"sy01": local_vars(root)}), "sy01")
    assert isinstance(backend, NamespaceHost)
    assert (backend.name, backend.kind, backend.root) == ("sy01", "namespace", root)
    assert "tini" in backend.mechanisms["boot"]


# --- faults act through the backend ------------------------------------------------------------


@dataclass
class FakeBackend:
    name: str = "h2"
    kind: str = "fake"
    mechanisms: dict[str, str] = field(
        default_factory=lambda: {"crash": "SIGKILL everything", "boot": "start again", "partition": "drop packets"}
    )
    calls: list[str] = field(default_factory=list)
    fail: dict[str, Exception] = field(default_factory=dict)
    chosen: list[str] = field(default_factory=list)  # hosts host_of was asked for

    def can(self, fault: str) -> bool:
        """Declares every fault (the refusal of undeclared ones: test_host_kinds.py)."""
        return True

    def _record(self, call: str) -> None:
        self.calls.append(call)
        if call in self.fail:
            raise self.fail[call]

    def crash(self) -> None:
        self._record("crash")

    def boot(self) -> None:
        self._record("boot")

    def pause(self) -> None:
        self._record("pause")

    def resume(self) -> None:
        self._record("resume")

    def partition(self) -> None:
        self._record("partition")

    def reconnect(self) -> None:
        self._record("reconnect")


@dataclass
class FakeConnection:
    closed: int = 0

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def fake_cluster(monkeypatch: pytest.MonkeyPatch) -> tuple[Cluster, FakeBackend]:
    """h2 of a cluster whose backend (chosen by faults.host_of) is the FakeBackend."""
    backend = FakeBackend()
    cluster = cluster_of({"h1": {}, "h2": {}}, {"h1": FakeConnection(), "h2": FakeConnection()})
    monkeypatch.setattr(faults, "host_of", lambda c, name: backend.chosen.append(name) or backend)
    return cluster, backend


def test_crash_kills_through_the_backend_drops_the_connection_and_heal_boots(fake_cluster) -> None:
    cluster, backend = fake_cluster
    crash = HostCrash(cluster, "h2")
    assert backend.chosen == ["h2"]
    crash.start()
    assert backend.calls == ["crash"]
    assert cluster.hosts["h2"].closed == 1  # the old SSH session died with the host
    assert cluster.hosts["h1"].closed == 0
    crash.heal()
    assert backend.calls == ["crash", "boot"]
    assert crash.mechanism == "fake: SIGKILL everything"


def test_pause_and_partition_act_through_the_backend(fake_cluster) -> None:
    cluster, backend = fake_cluster
    pause, partition = HostPause(cluster, "h2"), HostPartition(cluster, "h2")
    pause.start()
    partition.start()
    partition.heal()
    pause.heal()
    assert backend.calls == ["pause", "partition", "reconnect", "resume"]
    assert partition.mechanism == "fake: drop packets"
    assert pause.mechanism == "fake: pause"  # a backend that does not say how: the action's name


def test_a_backend_given_on_purpose_is_used_instead_of_the_hosts_own(fake_cluster) -> None:
    cluster, chosen_backend = fake_cluster
    other = FakeBackend(kind="ssh", mechanisms={"pause": "SIGSTOP over SSH"})
    fault = HostPause(cluster, "h2", backend=other)
    fault.start()
    assert (other.calls, chosen_backend.calls, chosen_backend.chosen) == (["pause"], [], [])
    assert fault.mechanism == "ssh: SIGSTOP over SSH"


# --- the fault log -------------------------------------------------------------------------------


def test_nemesis_logs_each_start_and_heal_with_how_it_was_done(fake_cluster) -> None:
    cluster, backend = fake_cluster
    nemesis = Nemesis(cluster)
    with nemesis.inject(HostPartition(cluster, "h2")):
        fault = nemesis.crash_host("h2")
        nemesis.heal(fault)
    assert backend.calls == ["partition", "crash", "boot", "reconnect"]
    events = [(e.ended, e.action, e.kind, e.target, e.mechanism, e.error) for e in nemesis.log.events]
    assert events == [  # each action's line before it acts (ended False) and after (Jepsen)
        (False, "start", "host-partition", "h2", "fake: drop packets", None),
        (True, "start", "host-partition", "h2", "fake: drop packets", None),
        (False, "start", "host-crash", "h2", "fake: SIGKILL everything", None),
        (True, "start", "host-crash", "h2", "fake: SIGKILL everything", None),
        (False, "heal", "host-crash", "h2", "fake: SIGKILL everything", None),
        (True, "heal", "host-crash", "h2", "fake: SIGKILL everything", None),
        (False, "heal", "host-partition", "h2", "fake: drop packets", None),
        (True, "heal", "host-partition", "h2", "fake: drop packets", None),
    ]
    assert [w["kind"] for w in nemesis.log.windows()] == ["host-partition", "host-crash"]
    assert all("healed" in w for w in nemesis.log.windows())
    offsets = [e.offset for e in nemesis.log.events]
    assert offsets == sorted(offsets)
    assert all(e.seconds >= 0 for e in nemesis.log.events)


def test_a_failed_start_is_logged_and_the_fault_is_still_healed(fake_cluster) -> None:
    cluster, backend = fake_cluster
    backend.fail["crash"] = RuntimeError("no freezer group")
    nemesis = Nemesis(cluster)
    with pytest.raises(RuntimeError, match="no freezer group"):
        nemesis.crash_host("h2")
    assert [f.kind for f in nemesis.active] == ["host-crash"]  # half started: still to heal
    assert nemesis.heal_all() == []
    assert backend.calls == ["crash", "boot"]
    assert [(e.action, e.ended, e.error) for e in nemesis.log.events] == [
        ("start", False, None),
        ("start", True, "RuntimeError: no freezer group"),
        ("heal", False, None),
        ("heal", True, None),
    ]


def test_a_failed_heal_is_logged_and_reported_by_heal_all(fake_cluster) -> None:
    cluster, backend = fake_cluster
    backend.fail["reconnect"] = OSError("iptables: chain gone")
    nemesis = Nemesis(cluster)
    nemesis.partition("h2")
    nemesis.pause_host("h2")
    problems = nemesis.heal_all()
    assert problems == ["healing host-partition on h2: iptables: chain gone"]
    assert backend.calls == ["partition", "pause", "resume", "reconnect"]  # last first
    assert [(e.action, e.kind, e.error) for e in nemesis.log.events if e.ended][2:] == [
        ("heal", "host-pause", None),
        ("heal", "host-partition", "OSError: iptables: chain gone"),
    ]
    assert [(e.action, e.kind) for e in nemesis.log.events if not e.ended][2:] == [
        ("heal", "host-pause"),
        ("heal", "host-partition"),
    ]
    assert nemesis.active == []


class FixedNow(dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return cls(2026, 4, 10, 12, 0, 1, 250000)


def test_fault_log_lines_and_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([103.0, 104.0])  # when the start ended; when the heal ended
    monkeypatch.setattr(fault_log.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(fault_log, "datetime", FixedNow)
    log = FaultLog(began=100.0)
    log.record("start", "host-pause", "pbsh02", mechanism="system: cgroup freezer", started=102.5, error=None)
    log.record("heal", "host-pause", "pbsh02", mechanism="system: cgroup freezer", started=103.25, error="boom")
    assert log.text() == (
        "12:00:01.250 +   2.50s start host-pause on pbsh02 (0.50s, ok) via system: cgroup freezer\n"
        "12:00:01.250 +   3.25s heal  host-pause on pbsh02 (0.75s, FAILED: boom) via system: cgroup freezer\n"
    )
    log.write(tmp_path / "faults.txt")
    head, rest = (tmp_path / "faults.txt").read_text().split("\n", 2)[:2], (tmp_path / "faults.txt").read_text()
    assert head[0].startswith("# offsets (+s) are seconds from the test's start, ")
    assert rest.endswith(log.text())


def test_an_empty_fault_log_says_so(tmp_path: Path) -> None:
    log = FaultLog()
    assert log.text() == ""
    log.write(tmp_path / "faults.txt")
    assert (tmp_path / "faults.txt").read_text().endswith("(on a 'begin' line: began)\nno fault was injected\n")


def test_a_fault_action_that_never_returns_leaves_its_begin_line(fake_cluster) -> None:
    """The begin line is written before the action acts: a start that hangs (here: interrupted) still
    shows in faults.txt, and the timeline shows it as never ended."""
    from pbs_harness.pbs.evidence import timeline

    cluster, backend = fake_cluster
    backend.fail["pause"] = KeyboardInterrupt()
    nemesis = Nemesis(cluster)
    nemesis.log.events.clear()
    with pytest.raises(KeyboardInterrupt):
        nemesis.pause_host("h2")
    nemesis.log.events.pop()  # as if the run died inside the action: only the begin line is left
    assert " begin start host-pause on h2 via fake: " in nemesis.log.text()
    assert nemesis.log.windows() == []
    [entry] = timeline.from_faults(nemesis.log.events)
    assert entry.text.endswith("(never ended)")
    nemesis.heal_all()
