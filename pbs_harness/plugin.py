"""pytest wiring for the acceptance suites: options, the cluster fixtures, skip reasons."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pbs_harness import inventory as inventory_mod
from pbs_harness import project
from pbs_harness.cluster import Cluster
from pbs_harness.errors import HarnessError
from pbs_harness.pbs.client import Pbs


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pbs-harness")
    group.addoption(
        "--inventory",
        default=os.environ.get("PBS_HARNESS_INVENTORY"),
        help="Ansible inventory of the cluster under test (default: inventory/local)",
    )


def _unavailable_reason(config: pytest.Config) -> str | None:
    """Why the acceptance suites cannot run here, or None when they can."""
    try:
        inv = inventory_mod.load(project.inventory_path(config.getoption("--inventory")))
    except HarnessError as exc:
        return f"no usable inventory: {exc.message}"
    if inv.is_local_cluster:
        prefix = Path(str(inv.var("openpbs_install_prefix", "/opt/pbs")))
        if not (prefix / "bin" / "qstat").exists():
            return (
                f"OpenPBS is not installed ({prefix}/bin/qstat missing): install it (official packages, or by hand "
                "per its INSTALL) and run `pbs-harness up`"
            )
    try:
        inventory_mod.check_reachable(inv, timeout=5)
    except HarnessError as exc:
        return f"cluster not reachable ({exc.message}): run `pbs-harness up` first"
    return None


@pytest.fixture(scope="session")
def inventory(pytestconfig: pytest.Config) -> inventory_mod.Inventory:
    reason = _unavailable_reason(pytestconfig)
    if reason:
        pytest.skip(reason)
    return inventory_mod.load(project.inventory_path(pytestconfig.getoption("--inventory")))


@pytest.fixture(scope="session")
def cluster(inventory: inventory_mod.Inventory) -> Iterator[Cluster]:
    c = Cluster.from_inventory(inventory)
    yield c
    c.close()


@pytest.fixture(scope="session")
def pbs(cluster: Cluster) -> Pbs:
    return Pbs(cluster)
