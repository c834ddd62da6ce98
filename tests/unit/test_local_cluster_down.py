"""With no local cluster, nothing may connect to its addresses (they would route off this machine)."""

from pathlib import Path

import pytest

from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import provider
from pbs_harness.localcluster.inventory import inventory as local_inventory
from pbs_harness.remote import inventory

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path / "state"))
    return tmp_path


def test_inventory_script_lists_no_hosts_without_a_cluster(no_state: Path) -> None:
    data = local_inventory()
    assert data["_meta"]["hostvars"] == {}
    assert all(data[g]["hosts"] == [] for g in ("pbs_server", "pbs_moms", "pbs_clients"))


def test_loading_the_local_inventory_without_a_cluster_is_refused(no_state: Path) -> None:
    with pytest.raises(PreconditionError, match="local cluster is not up") as err:
        inventory.load(ROOT / "inventory" / "local")
    assert "pbs-harness up" in err.value.hint


def test_provider_verbs_need_a_cluster(no_state: Path) -> None:
    with pytest.raises(PreconditionError, match="no local cluster is up"):
        provider.host("pbsh01")
