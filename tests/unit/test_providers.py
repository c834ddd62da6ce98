"""An inventory's provider (pbs_harness.providers): which one an inventory has, before and after it is
listed, and what each advises.

Nothing is brought up: the local cluster's state is a state.json in tmp_path (or none).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pbs_harness import providers
from pbs_harness.errors import PreconditionError
from pbs_harness.inventory import parse
from pbs_harness.localcluster import provider, state
from pbs_harness.localcluster.inventory_provider import LOCAL
from pbs_harness.static_hosts import STATIC
from tests.unit.badinput import ROOT, listing


@pytest.fixture
def no_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PBS_HARNESS_INVENTORY", raising=False)
    return tmp_path / "state"


def test_the_local_inventory_script_is_recognised_before_listing() -> None:
    assert providers.of_path(ROOT / "inventory" / "local") is LOCAL
    assert providers.of_path(ROOT / "inventory" / "local" / "cluster.py") is LOCAL
    assert providers.of_path(ROOT / "inventory" / "cloud.example") is STATIC
    assert providers.of_path(ROOT / "inventory" / "cloud.example" / "hosts.yml") is STATIC


def test_a_listed_inventory_is_the_local_clusters_when_its_hosts_say_so() -> None:
    local = {"s1": {provider.LOCAL_HOST_VAR: True}}
    assert parse(listing(hostvars=local), Path("written")).provider is LOCAL
    assert parse(listing(), Path("vms.yml")).provider is STATIC


def test_only_the_local_cluster_advises_pbs_harness_up(no_cluster: Path) -> None:
    assert (LOCAL.brings_up, LOCAL.shares_openpbs) == (True, True)
    assert (STATIC.brings_up, STATIC.shares_openpbs) == (False, False)
    assert "pbs-harness up" in LOCAL.unreachable_hint(Path("inventory/local"))
    hint = STATIC.unreachable_hint(Path("/srv/vms.yml"))
    assert "ansible_host/ansible_port in /srv/vms.yml" in hint
    assert "pbs-harness up" not in hint


def test_static_hosts_are_listed_and_probed_whether_or_not_anything_is_up(no_cluster: Path) -> None:
    STATIC.check_listable(Path("/srv/vms.yml"))
    STATIC.check_network({"ansible_host": "10.1.0.2"})
    STATIC.heal({"s1": {"ansible_host": "10.1.0.2"}})
    assert STATIC.brought_up() is None
    assert STATIC.cluster_name({}) is None


def test_the_local_cluster_refuses_to_list_or_probe_without_its_state(no_cluster: Path) -> None:
    with pytest.raises(PreconditionError, match="the local cluster is not up") as listed:
        LOCAL.check_listable(ROOT / "inventory" / "local")
    assert listed.value.hint == "bring it up first: pbs-harness up (or pbs-harness cluster up, then deploy)"
    recorded = no_cluster.parent / "vm"
    with pytest.raises(PreconditionError, match=f"the local cluster in {recorded} is not up") as probed:
        LOCAL.check_network({provider.LOCAL_HOST_VAR: True, provider.STATE_DIR_VAR: str(recorded)})
    assert f"PBS_HARNESS_STATE_DIR={recorded} pbs-harness up" in probed.value.hint
    assert LOCAL.brought_up() is None


def test_an_unreadable_state_is_named(no_cluster: Path) -> None:
    no_cluster.mkdir()
    (no_cluster / "state.json").write_text("{not json")
    with pytest.raises(PreconditionError, match=r"state file .*state\.json is unreadable"):
        state.load_checked()
