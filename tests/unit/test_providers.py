"""An inventory's provider (pbs_harness.hosts.providers): which one an inventory has, before and after it is
listed, what each advises, and that the session judges availability once (pbs_harness.suite.availability).

Nothing is brought up: the local cluster's state is a state.json in tmp_path, listings come from a
FAKE ansible-inventory (tests/unit/badinput.py), hosts are a closed loopback port, and where the
session's healing is counted a FAKE provider stands first in the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pbs_harness.common.errors import PreconditionError
from pbs_harness.hosts import providers
from pbs_harness.hosts.static import STATIC
from pbs_harness.localcluster import provider, state
from pbs_harness.localcluster.inventory_provider import LOCAL
from pbs_harness.remote import inventory as inventory_mod
from pbs_harness.remote.inventory import parse
from pbs_harness.suite import availability, testrun
from tests.unit.badinput import ROOT, InventoryConfig, fake_ansible_inventory, listing


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
    assert listed.value.hint.startswith("bring it up first: pbs-harness up (or pbs-harness cluster up, then deploy)")
    assert "named by --state-dir DIR or by the environment variable PBS_HARNESS_STATE_DIR=DIR" in listed.value.hint
    recorded = no_cluster.parent / "vm"
    with pytest.raises(PreconditionError, match=f"the local cluster in {recorded} is not up") as probed:
        LOCAL.check_network({provider.LOCAL_HOST_VAR: True, provider.STATE_DIR_VAR: str(recorded)})
    assert f"pbs-harness up --state-dir {recorded}" in probed.value.hint
    assert LOCAL.brought_up() is None


def test_an_unreadable_state_is_named(no_cluster: Path) -> None:
    no_cluster.mkdir()
    (no_cluster / "state.json").write_text("{not json")
    with pytest.raises(PreconditionError, match=r"state file .*state\.json is unreadable"):
        state.load_checked()


class CountingProvider:
    """FAKE provider of every inventory, whose hosts the harness would bring up: counts its heals."""

    brings_up = True
    shares_openpbs = False

    def __init__(self) -> None:
        self.healed: list[list[str]] = []

    def owns_path(self, path: Path) -> bool:
        return True

    def owns_hosts(self, server_vars: Mapping[str, Any]) -> bool:
        return True

    def check_listable(self, path: Path) -> None:
        pass

    def check_network(self, server_vars: Mapping[str, Any]) -> None:
        pass

    def unreachable_hint(self, inventory_path: Path) -> str:
        return "repair them"

    def heal(self, hosts: Mapping[str, Mapping[str, Any]]) -> None:
        self.healed.append(sorted(hosts))

    def brought_up(self) -> None:
        return None

    def cluster_name(self, server_vars: Mapping[str, Any]) -> None:
        return None


def test_the_session_lists_heals_and_judges_once(
    no_cluster: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Header, session lock, inventory fixture and parallel binding all ask: one listing, one heal."""
    path = fake_ansible_inventory(monkeypatch, tmp_path, listing())
    fake = CountingProvider()
    monkeypatch.setattr(providers, "PROVIDERS", (fake, STATIC))
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
    assert reason.endswith("run `pbs-harness up` (it repairs the local cluster)")  # healed, still silent
    assert availability.unavailable_reason(config) == reason
    assert availability.session_inventory(config).server.name == "s1"
    assert listed == [path]
    assert fake.healed == [["m1", "s1"]]
