"""An inventory's kind of host (the registry, pbs_harness.hosts): which one an inventory has, before and after
it is listed, what each advises, and that the session judges availability once (pbs_harness.suite.availability).

Nothing is brought up: the local cluster's state is a state.json in tmp_path, listings come from a
FAKE ansible-inventory (tests/unit/badinput.py), hosts are a closed loopback port, and where the
session's healing is counted a FAKE kind is registered (its hosts name it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pbs_harness import hosts
from pbs_harness.common.errors import PreconditionError
from pbs_harness.hosts.namespace import NamespaceHost
from pbs_harness.hosts.ssh import SshHost
from pbs_harness.localcluster import state
from pbs_harness.remote import inventory as inventory_mod
from pbs_harness.remote.inventory import parse
from pbs_harness.suite import availability, testrun
from tests.unit.badinput import ROOT, InventoryConfig, fake_ansible_inventory, listing
from tests.unit.fake_kind import FakeKind, registered


@pytest.fixture
def no_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PBS_HARNESS_INVENTORY", raising=False)
    return tmp_path / "state"


def test_the_local_inventory_script_is_recognised_before_listing(no_cluster: Path) -> None:
    assert hosts.kind_of_path(ROOT / "inventory" / "local") is NamespaceHost  # no cluster up: the default kind
    assert hosts.kind_of_path(ROOT / "inventory" / "local" / "cluster.py") is NamespaceHost
    assert hosts.kind_of_path(ROOT / "inventory" / "cloud.example") is SshHost
    assert hosts.kind_of_path(ROOT / "inventory" / "cloud.example" / "hosts.yml") is SshHost


def test_the_local_inventory_script_lists_the_kind_its_cluster_is_made_of(no_cluster: Path) -> None:
    from pbs_harness.hosts.system import SystemHost
    from pbs_harness.localcluster.spec import ClusterSpec

    state.save(state.ClusterState.from_spec(ClusterSpec(prefix="sy", flavour="system")))
    assert hosts.kind_of_path(ROOT / "inventory" / "local") is SystemHost


def test_a_listed_inventory_is_the_local_clusters_when_its_hosts_say_so() -> None:
    local = {"s1": {state.LOCAL_HOST_VAR: True}}
    assert parse(listing(hostvars=local), Path("written")).kind is NamespaceHost
    assert parse(listing(), Path("vms.yml")).kind is SshHost


def test_only_kinds_the_harness_manages_advise_pbs_harness_up(no_cluster: Path) -> None:
    assert (NamespaceHost.managed, NamespaceHost.shares_controller_files) == (True, True)
    assert (SshHost.managed, SshHost.shares_controller_files) == (False, False)
    assert "pbs-harness up" in NamespaceHost.unreachable_hint(Path("inventory/local"))
    hint = SshHost.unreachable_hint(Path("/srv/vms.yml"))
    assert "ansible_host/ansible_port in /srv/vms.yml" in hint
    assert "pbs-harness up" not in hint


def test_ssh_hosts_are_listed_and_probed_whether_or_not_anything_is_up(no_cluster: Path) -> None:
    SshHost.check_listable(Path("/srv/vms.yml"))
    SshHost.check_network({"ansible_host": "10.1.0.2"})
    assert SshHost.brought_up() is None
    assert SshHost.cluster_name({}) is None
    assert SshHost.shared_dir({}) is None


def test_the_local_cluster_refuses_to_list_or_probe_without_its_state(no_cluster: Path) -> None:
    with pytest.raises(PreconditionError, match="the local cluster is not up") as listed:
        NamespaceHost.check_listable(ROOT / "inventory" / "local")
    assert listed.value.hint.startswith("bring it up first: pbs-harness up (or pbs-harness cluster up, then deploy)")
    assert "named by --state-dir DIR or by the environment variable PBS_HARNESS_STATE_DIR=DIR" in listed.value.hint
    recorded = no_cluster.parent / "vm"
    with pytest.raises(PreconditionError, match=f"the local cluster in {recorded} is not up") as probed:
        NamespaceHost.check_network({state.LOCAL_HOST_VAR: True, state.STATE_DIR_VAR: str(recorded)})
    assert f"pbs-harness up --state-dir {recorded}" in probed.value.hint
    assert NamespaceHost.brought_up() is None


def test_an_unreadable_state_is_named(no_cluster: Path) -> None:
    no_cluster.mkdir()
    (no_cluster / "state.json").write_text("{not json")
    with pytest.raises(PreconditionError, match=r"state file .*state\.json is unreadable"):
        state.load_checked()


def test_the_session_lists_heals_and_judges_once(
    no_cluster: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Header, session lock, inventory fixture and parallel binding all ask: one listing, one heal (the
    nemesis's setup, through each host's kind). The hosts are of a FAKE managed kind (tests/unit/fake_kind.py)."""
    registered(monkeypatch)
    fake = {hosts.KIND_VAR: FakeKind.NAME}
    path = fake_ansible_inventory(monkeypatch, tmp_path, listing(hostvars={"s1": fake, "m1": fake}))
    listed: list[Path] = []
    real_load = inventory_mod.load
    monkeypatch.setattr(inventory_mod, "load", lambda p: listed.append(p) or real_load(p))
    config = InventoryConfig(str(path))
    assert availability.unavailable_reason(config, reach=False) is None
    assert availability.describe_target(config).startswith(f"inventory {path} (server s1, 2 moms)")
    assert availability.unavailable_reason(config, reach=False) is None
    reason = availability.unavailable_reason(config)
    assert reason is not None
    assert reason.startswith(testrun.SKIP_UNREACHABLE)
    assert reason.endswith(f"{FakeKind.HINT} {path}")  # healed, still silent: the kind's advice
    assert availability.unavailable_reason(config) == reason
    assert availability.session_inventory(config).server.name == "s1"
    assert listed == [path]
    assert FakeKind.healed == ["m1", "s1"]
    log = config.stash[availability.HEALED_KEY]
    assert [(e.ended, e.action, e.kind, e.target) for e in log.events] == [
        (False, "setup", "heal-leftovers", "m1"),
        (True, "setup", "heal-leftovers", "m1"),
        (False, "setup", "heal-leftovers", "s1"),
        (True, "setup", "heal-leftovers", "s1"),
    ]
    assert " begin setup heal-leftovers on m1 via fake: thaw, reconnect, boot if down" in log.text()
    # The baseline fixture asks again, with connections: the session's heal is done already.
    assert availability.heal_leftovers(config, availability.session_inventory(config)) == []
    assert FakeKind.healed == ["m1", "s1"]
