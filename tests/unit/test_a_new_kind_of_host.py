"""A new kind of host is one module plus one registry line (issue #31): the test kind of tests/unit/fake_kind.py,
registered with one monkeypatched line in pbs_harness.hosts.KINDS, is accepted by the inventory (which kind an
inventory is, before and after listing; its checks and advice), the cluster's facts (its name in reports,
PTL's shared directory), the fault layer (faults act and are logged through it; the session's setup heals
its hosts) and the reachability judgement, with no other edit.

FAKED: the kind's hosts (fake_kind.py says what), ansible-inventory (tests/unit/badinput.py prints a fixed
listing), the hosts' SSH ports (closed loopback ports: nothing answers), and the cluster's connections
(objects that only count close()).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pbs_harness import hosts
from pbs_harness.common.errors import PreconditionError, UnreachableError, UsageError
from pbs_harness.localcluster import openpbs_packages
from pbs_harness.ptl import site
from pbs_harness.remote import inventory as inventory_mod
from pbs_harness.remote.cluster import Cluster
from pbs_harness.suite import availability, testrun
from pbs_harness.suite.faults import Nemesis
from pbs_harness.suite.parallel import binding
from tests.unit.badinput import InventoryConfig, fake_ansible_inventory, listing
from tests.unit.fake_kind import INVENTORY_NAME, FakeKind, registered

FAKE = {hosts.KIND_VAR: FakeKind.NAME}


@pytest.fixture
def fake_inventory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    registered(monkeypatch)
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path / "no-local-cluster"))
    monkeypatch.delenv("PBS_HARNESS_INVENTORY", raising=False)
    hv = {"s1": {**FAKE, "fake_cluster": "fk"}, "m1": FAKE}
    path = fake_ansible_inventory(monkeypatch, tmp_path, listing(hostvars=hv))
    named = path.with_name(INVENTORY_NAME)
    path.rename(named)
    return named


def test_the_registry_knows_it_by_one_line_only(monkeypatch: pytest.MonkeyPatch) -> None:
    assert FakeKind.NAME not in hosts.KINDS
    with pytest.raises(hosts.UnknownKind):
        hosts.get_kind_class(FakeKind.NAME)
    registered(monkeypatch)
    assert hosts.get_kind_class(FakeKind.NAME) is FakeKind


def test_the_inventory_is_the_kinds_before_and_after_listing(fake_inventory: Path) -> None:
    assert hosts.kind_of_path(fake_inventory) is FakeKind  # claimed before listing
    inv = inventory_mod.load(fake_inventory)
    assert inv.kind is FakeKind  # named by the server host's variables once listed
    assert binding.cluster_name(inv) == "fk"  # the cluster's name in reports is the kind's
    assert site.of(inv).build_dir == Path("/srv/fake-shared/ptl")  # PTL goes where the kind shares a directory


def test_reachability_asks_the_kind_for_its_checks_and_advice(fake_inventory: Path) -> None:
    inv = inventory_mod.load(fake_inventory)
    with pytest.raises(UnreachableError) as silent:
        inventory_mod.check_reachable(inv, timeout=0.5)
    assert silent.value.hint == f"{FakeKind.HINT} {fake_inventory}"
    FakeKind.network_refused = True
    with pytest.raises(PreconditionError, match="the fake network is down"):
        inventory_mod.check_reachable(inv, timeout=0.5)


def test_faults_act_through_it_and_are_logged_with_its_mechanisms(fake_inventory: Path) -> None:
    inv = inventory_mod.load(fake_inventory)
    closed: list[str] = []
    connections = {name: SimpleNamespace(close=lambda name=name: closed.append(name)) for name in inv.hosts}
    nemesis = Nemesis(Cluster(inv, connections))
    nemesis.heal(nemesis.partition("m1"))
    fault = nemesis.crash_host("m1")
    nemesis.heal(fault)
    paused = nemesis.pause_host("s1")
    assert nemesis.heal_all() == []
    assert paused not in nemesis.active
    assert FakeKind.calls == [
        ("m1", "partition"),
        ("m1", "reconnect"),
        ("m1", "crash"),
        ("m1", "boot"),
        ("s1", "pause"),
        ("s1", "resume"),
    ]
    assert closed == ["m1"]  # a crashed host's SSH session is dropped
    assert [(e.ended, e.action, e.kind, e.mechanism) for e in nemesis.log.events][:4] == [
        (False, "start", "host-partition", "fake: fake cable pulled"),  # the line before it acts
        (True, "start", "host-partition", "fake: fake cable pulled"),
        (False, "heal", "host-partition", "fake: fake cable pulled"),
        (True, "heal", "host-partition", "fake: fake cable pulled"),
    ]


def test_the_session_heals_its_hosts_once_and_judges_them(fake_inventory: Path) -> None:
    config = InventoryConfig(str(fake_inventory))
    reason = availability.unavailable_reason(config)  # nothing answers: the kind manages its hosts, so heal first
    assert reason is not None
    assert reason.startswith(testrun.SKIP_UNREACHABLE)
    assert reason.endswith(f"{FakeKind.HINT} {fake_inventory}")
    assert FakeKind.healed == ["m1", "s1"]
    assert [a for _, a in FakeKind.calls] == ["resume", "reconnect"] * 2


def test_the_openpbs_packages_follow_the_kinds_capability_not_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """localcluster/openpbs_packages.py asks the kind whether its hosts install OpenPBS packages: the fake kind (which
    does) gets a running cluster's recorded packages, and --openpbs is refused for a kind that does not."""
    registered(monkeypatch)
    recorded = str(tmp_path / "debs")
    assert openpbs_packages.for_cluster(FakeKind.NAME, "debian:12", None, recorded, print) == Path(recorded)
    monkeypatch.setattr(FakeKind, "installs_openpbs_packages", False)
    assert openpbs_packages.for_cluster(FakeKind.NAME, "debian:12", None, recorded, print) is None
    with pytest.raises(UsageError, match="--openpbs is for system hosts"):
        openpbs_packages.check_wanted(FakeKind.NAME, "openpbs.zip")
