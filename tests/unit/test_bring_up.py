"""localcluster/bring_up.py: the service behind `up` and `cluster up` on this machine (issue #31: the CLI
only parses and prints). What it settles from the command line's values, and what it reports and returns.

Faked: provider.up (nothing is brought up: it hands back the state of the spec it is given) and
written_inventory.write (it records where it would write); the state directory is a tmp folder (`isolated`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pbs_harness.common.errors import UsageError
from pbs_harness.localcluster import bring_up, fleet, provider, spec, state, written_inventory


def plan(**given) -> bring_up.Plan:
    values = dict(subnet="10.71.0.0/24", hosts=3, prefix="pbsh", login_user=None, flavour="namespace")
    values.update(image="debian-12", clusters=None, openpbs=None, write_inventory=None, deploys=False)
    values.update(given)
    return bring_up.plan(report=print, **values)


@pytest.fixture
def booted(monkeypatch: pytest.MonkeyPatch) -> dict:
    """FAKE provider.up and written_inventory.write: what they were given, nothing made."""
    seen: dict = {}

    def up(spec, progress, packages=None):
        seen.update(spec=spec, packages=packages)
        return state.ClusterState.from_spec(spec)

    def write(path, root, checkout):
        seen.update(inventory=path)
        return path / "hosts.yml"

    monkeypatch.setattr(provider, "up", up)
    monkeypatch.setattr(written_inventory, "write", write)
    return seen


def test_a_left_out_flavour_is_the_recorded_clusters(isolated: Path) -> None:
    (isolated / "state").mkdir()
    record = {"subnet": "10.71.0.0/24", "host_count": 3, "prefix": "pbsh", "flavour": "system"}
    (isolated / "state" / "state.json").write_text(json.dumps(record))
    assert plan(flavour=None).spec.flavour == "system"


def test_openpbs_for_namespace_hosts_is_refused_in_the_plan(isolated: Path) -> None:
    with pytest.raises(UsageError, match="--openpbs is for system hosts"):
        plan(openpbs=str(isolated / "debs"))


def test_up_of_one_cluster_that_up_deploys_to_writes_its_inventory_in_the_state_directory(
    isolated: Path, booted: dict
) -> None:
    lines: list[str] = []
    inventories = bring_up.up(plan(deploys=True), lines.append)
    where = isolated / "state" / "inventory"
    assert inventories == [("pbsh", str(where))]
    assert booted["inventory"] == where
    assert (booted["spec"].flavour, booted["packages"]) == ("namespace", None)
    assert lines[0].startswith("local cluster up: 3 ")
    assert lines[1] == f"inventory written: {where} (use it with -i {where})"


def test_cluster_up_writes_no_inventory_unless_asked(isolated: Path, booted: dict) -> None:
    assert bring_up.up(plan(), lambda _: None) == [("pbsh", None)]
    assert "inventory" not in booted


def test_a_fleet_is_brought_up_by_the_fleet_with_member_1s_inventory(
    isolated: Path, booted: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    given: dict = {}

    def fleet_up(spec, count, packages, report, write_inventory=None):
        given.update(spec=spec, count=count, packages=packages, write_inventory=write_inventory)
        return [("pbsh", str(write_inventory)), ("pbshb", None)]

    monkeypatch.setattr(fleet, "up", fleet_up)
    target = isolated / "inv"
    inventories = bring_up.up(plan(clusters=2, write_inventory=str(target)), lambda _: None)
    assert inventories == [("pbsh", str(target)), ("pbshb", None)]
    assert (given["spec"].prefix, given["count"], given["packages"], given["write_inventory"]) == (
        "pbsh",
        2,
        None,
        target,
    )
    assert "spec" not in booted  # no cluster of its own: the fleet brings member 1 up


def test_a_left_out_flavour_with_no_cluster_is_the_main_commands(isolated: Path) -> None:
    """Issue #34: `pbs-harness up` used to default to namespace hosts and `make acceptance` to system hosts. With
    no cluster recorded, up's default is the one ./acceptance and the Makefile give."""
    root = Path(__file__).resolve().parents[2]
    assert plan(flavour=None).spec.flavour == spec.CLI_DEFAULT_FLAVOUR == "system"
    assert f"FLAVOUR=${{FLAVOUR:-{spec.CLI_DEFAULT_FLAVOUR}}}" in (root / "acceptance").read_text()
    assert re.search(rf"^FLAVOUR\s*\?= {spec.CLI_DEFAULT_FLAVOUR}$", (root / "Makefile").read_text(), re.M)
