"""`pbs-harness up` and `cluster up` on this machine: from the command line's values to booted hosts,
for one local cluster or a fleet of them (`--clusters N`, fleet.py), and their written inventories.

A service, so that the command line only parses and prints (issue #31: `up`'s data used to climb back to
cli/local.py between the spec, the packages and the cluster). Two steps, because cli/local.py checks root
and the state directory between them: `plan` judges what the command line can get wrong (a bad value is
said before the root check) and settles what `--subnet auto` and a left-out --flavour leave open; `up`
takes the OpenPBS packages (openpbs_packages.py), brings the cluster or the fleet up and writes the
inventories. Each says what it does through `report` (one line a call).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pbs_harness.common import project
from pbs_harness.common.errors import HarnessError, PreconditionError, UsageError
from pbs_harness.localcluster import cluster_kind, fleet, openpbs_packages, provider, state, written_inventory
from pbs_harness.localcluster.spec import CLI_DEFAULT_FLAVOUR, ClusterSpec

Report = Callable[[str], None]


@dataclass(frozen=True)
class Plan:
    """What `up` makes: the cluster (member 1 of a fleet of `clusters`) and where its inventory goes."""

    spec: ClusterSpec
    clusters: int | str | None  # None or 1: one cluster; `auto`: as many as the machine holds
    openpbs: str | None  # --openpbs: what system hosts install
    write_inventory: str | None  # --write-inventory
    deploys: bool  # `up` deploys to the cluster next (not `cluster up`, not to other hosts)


def recorded_flavour() -> str:
    """The flavour of the cluster recorded in the state directory (a rerun repairs it as it is), else
    system hosts, as ./acceptance makes (issue #34: up used to default to namespace hosts)."""
    try:
        old = state.load()
    except HarnessError:  # an unreadable record is reported by the state-directory check
        old = None
    return old.spec.flavour if old is not None else CLI_DEFAULT_FLAVOUR


def plan(
    *,
    subnet: object,
    hosts: int,
    prefix: str,
    login_user: str | None,
    flavour: str | None,
    image: str,
    clusters: int | str | None,
    openpbs: str | None,
    write_inventory: str | None,
    deploys: bool,
    report: Report,
) -> Plan:
    """The command line's values judged, before the root check and before anything is made."""
    if write_inventory:  # a path that cannot be written is refused before anything is looked at or made
        written_inventory.check_target(Path(write_inventory).resolve())
    if subnet == "auto":
        base = ClusterSpec(host_count=hosts, prefix=prefix, login_user=login_user)
        subnet, clusters = fleet.auto_subnet(base, clusters, report)
    try:
        spec = ClusterSpec(
            subnet=str(subnet),
            host_count=hosts,
            prefix=prefix,
            login_user=login_user,
            flavour=flavour or recorded_flavour(),
            image=image,
        )
    except PreconditionError as exc:  # values the argument types cannot judge alone (subnet size for --hosts)
        raise UsageError(exc.message, exc.hint) from exc
    openpbs_packages.check_wanted(spec.flavour, openpbs)  # a bad command line, said before the root check
    return Plan(spec, clusters, openpbs, write_inventory, deploys)


def inventory_to_write(wanted: Plan) -> str | None:
    """Where one cluster's inventory is written: --write-inventory, else, for a cluster outside the
    default state directory (which inventory/local does not read) that `up` deploys to, <state dir>/inventory."""
    if wanted.write_inventory:
        return wanted.write_inventory
    outside = state.state_dir() != state.state_dir(state.DEFAULT_STATE_DIR)
    if outside and wanted.deploys:
        return str(state.state_dir() / "inventory")
    return None


def up(wanted: Plan, report: Report) -> list[tuple[str, str | None]]:
    """Bring up (or repair) the planned cluster or fleet, after the root and state-directory checks.
    Returns each cluster's (name, written inventory or None where inventory/local describes it)."""
    spec = wanted.spec
    old = state.load()
    found = openpbs_packages.for_cluster(
        spec.flavour, spec.image, wanted.openpbs, old.packages_dir if old else None, report
    )
    if wanted.clusters not in (None, 1):
        given = Path(wanted.write_inventory) if wanted.write_inventory else None
        return fleet.up(spec, wanted.clusters, found, report, write_inventory=given)
    target = inventory_to_write(wanted)
    if target:
        written_inventory.check_target(Path(target).resolve())  # refuse before anything is created
    start = time.monotonic()
    st = provider.up(spec, report, packages=found)
    report(f"local cluster up: {cluster_kind.describe(st.spec)} in {time.monotonic() - start:.1f}s")
    written = None
    if target:
        hosts = written_inventory.write(Path(target), None, project.root())
        written = str(hosts.parent)
        report(f"inventory written: {hosts.parent} (use it with -i {hosts.parent})")
    return [(spec.prefix, written)]
