"""Whether the acceptance suites can run here, and on which cluster: judged once per test session.

A session tests the inventory named with --inventory or PBS_HARNESS_INVENTORY, else the default
one. The report header, the session lock, the `inventory` fixture and the parallel binding all ask
this module, and each answer is kept in the session's stash: the inventory is listed once
(ansible-inventory takes a second or two) and the cluster is judged once without reaching its hosts
and once reaching them (healing what a killed run left, which must not happen twice).

Each reason begins with one of testrun's SKIP_* phrases, by which `pbs-harness test` tells "the
cluster is not there" from "these tests do not apply".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pbs_harness import hosts
from pbs_harness.common import project
from pbs_harness.common.errors import HarnessError, UnreachableError
from pbs_harness.remote import inventory as inventory_mod
from pbs_harness.suite import precheck, testrun
from pbs_harness.suite.faults import Nemesis
from pbs_harness.suite.faults.log import FaultLog

INVENTORY_ENV = "PBS_HARNESS_INVENTORY"
INVENTORIES_KEY = pytest.StashKey[dict[Path, inventory_mod.Inventory]]()
# Per --inventory value and reach: the reason the suites cannot run, or None.
REASONS_KEY = pytest.StashKey[dict[tuple[str | None, bool], str | None]]()
# The session's nemesis setup (faults.Nemesis.setup: every host's leftovers healed), done once: its fault log.
HEALED_KEY = pytest.StashKey[FaultLog]()


def named(config: pytest.Config) -> str | None:
    """How the inventory was named explicitly (--inventory or PBS_HARNESS_INVENTORY), or None for the default."""
    given = config.getoption("--inventory")
    if given is None:
        return None
    return INVENTORY_ENV if given == os.environ.get(INVENTORY_ENV) else "--inventory"


def inventory_path(config: pytest.Config) -> Path:
    """The session's inventory path (a HarnessError when it does not exist)."""
    return project.inventory_path(config.getoption("--inventory"))


def load_inventory(config: pytest.Config, path: Path) -> inventory_mod.Inventory:
    """The inventory at `path`, listed once per session."""
    loaded = config.stash.setdefault(INVENTORIES_KEY, {})
    if path not in loaded:
        loaded[path] = inventory_mod.load(path)
    return loaded[path]


def session_inventory(config: pytest.Config) -> inventory_mod.Inventory:
    """The session's inventory (call once `unavailable_reason(config, ...)` is None)."""
    return load_inventory(config, inventory_path(config))


def unavailable_reason(config: pytest.Config, *, reach: bool = True) -> str | None:
    """Why the acceptance suites cannot run here, or None when they can. `reach=False` leaves out
    the checks that reach the hosts: a session queued for the lock must not judge the cluster while
    another session has a host partitioned or paused on purpose."""
    reasons = config.stash.setdefault(REASONS_KEY, {})
    key = (config.getoption("--inventory"), reach)
    if key not in reasons:
        reasons[key] = _judge_hosts(config) if reach else _judge_here(config)
    return reasons[key]


def _judge_hosts(config: pytest.Config) -> str | None:
    """The judgement without the hosts, then theirs: they answer and can be tested."""
    here = unavailable_reason(config, reach=False)
    if here is not None:
        return here
    inv = session_inventory(config)
    return unreachable_reason(inv, heal=lambda: heal_leftovers(config, inv)) or remote_reason(inv)


def _judge_here(config: pytest.Config) -> str | None:
    """What this machine can tell: the inventory, whose cluster it is, OpenPBS here if the hosts share it."""
    try:
        path = inventory_path(config)
    except HarnessError as exc:
        return f"{testrun.SKIP_NO_INVENTORY}: {exc.message}: {exc.hint}"
    not_ours = not_ours_reason(config, path)
    if not_ours:
        return not_ours
    # A cluster that shares this machine's OpenPBS: say first when it is missing (before listing the
    # inventory, which the local one refuses while its cluster is down).
    if hosts.kind_of_path(path).shares_controller_files:
        missing = no_openpbs_reason(inventory_mod.declared_openpbs_prefix(path))
        if missing:
            return missing
    try:
        inv = load_inventory(config, path)
    except HarnessError as exc:
        return f"{testrun.SKIP_NO_INVENTORY}: {exc.message}: {exc.hint}"
    if inv.kind.shares_controller_files:
        return no_openpbs_reason(inv.openpbs_prefix)
    return None


def not_ours_reason(config: pytest.Config, path: Path) -> str | None:
    """Why the default inventory's cluster is not this checkout's to test, or None.

    The local cluster's state is machine-wide: without this, a second clone's `make test` would run
    its suites on whatever cluster another clone brought up. An inventory named explicitly is used
    whoever brought it up."""
    if named(config):
        return None
    st = hosts.kind_of_path(path).brought_up()
    if st is None:
        return None  # not brought up by the harness, or not up: listing the inventory says so
    here = project.checkout()
    if st.owner == here:
        return None
    advice = "name it explicitly (-i inventory/local, or PBS_HARNESS_INVENTORY) to test it from here"
    if st.owner is None:
        return (
            f"the {st.label} does not record which checkout brought it up (its state predates that record), "
            f"so it is not taken for this checkout's ({here}): run `pbs-harness cluster up` from the checkout "
            f"it belongs to, which records it, or {advice}"
        )
    return (
        f"the {st.label} was brought up by another checkout ({st.owner}), not this one ({here}): run the "
        f"suites from that checkout, or {advice}"
    )


def no_openpbs_reason(prefix: Path) -> str | None:
    """Why a cluster sharing this machine's OpenPBS cannot run here when it is not installed under `prefix`."""
    if (prefix / "bin" / "qstat").exists():
        return None
    return (
        f"{testrun.SKIP_NO_OPENPBS} ({prefix}/bin/qstat missing): install it (official packages, or by hand "
        "per its INSTALL) and run `pbs-harness up`"
    )


def heal_leftovers(config: pytest.Config, inv: inventory_mod.Inventory, cluster=None) -> list[str]:
    """The session's nemesis setup, once per session (Jepsen): every host's kind heals what a killed run
    left (faults.Nemesis.setup). Asked by the reachability judgement (hosts the harness manages that do not
    answer) and by the baseline fixture before the first test, whichever comes first; `cluster`: the
    inventory's connections, which kinds acting over SSH need. Returns the heals that failed."""
    if HEALED_KEY in config.stash:
        return []
    nemesis = Nemesis(cluster)
    config.stash[HEALED_KEY] = nemesis.log
    return nemesis.setup({name: host.vars for name, host in inv.hosts.items()})


def unreachable_reason(inv: inventory_mod.Inventory, heal=None) -> str | None:
    """Why the hosts cannot be tested because they do not answer, or None. `heal`: the session's heal
    of what a killed run left (heal_leftovers), tried once on hosts whose kind the harness manages."""
    try:
        inventory_mod.check_reachable(inv, timeout=5)
    except UnreachableError as exc:
        if not inv.kind.managed or heal is None:
            # Not ours to repair: the advice is the inventory's kind's, never `pbs-harness up`.
            return f"{testrun.SKIP_UNREACHABLE} ({exc.message}): {exc.hint}"
        # A killed run can leave a host paused or cut off: heal, then judge.
        problems = heal()
        try:
            inventory_mod.check_reachable(inv, timeout=5)
        except HarnessError as again:
            healed = f"; {'; '.join(problems)}" if problems else ""
            return f"{testrun.SKIP_UNREACHABLE} ({again.message}{healed}): {again.hint}"
    except HarnessError as exc:  # e.g. the local cluster's bridge is gone
        return f"{testrun.SKIP_UNREACHABLE} ({exc.message}): {exc.hint}"
    return None


def remote_reason(inv: inventory_mod.Inventory) -> str | None:
    """For hosts that do not share this machine's OpenPBS: why they cannot be tested over SSH (login,
    OpenPBS), or None."""
    if inv.kind.shares_controller_files:
        return None  # OpenPBS was checked on this machine
    try:
        precheck.check_openpbs_remote(inv)
    except UnreachableError as exc:
        return f"{testrun.SKIP_UNREACHABLE} ({exc.message}): {exc.hint}"
    except HarnessError as exc:
        return f"{testrun.SKIP_NO_OPENPBS}: {exc.message}: {exc.hint}"
    return None


def describe_target(config: pytest.Config) -> str:
    """What the suites will run against (call once `unavailable_reason(config, reach=False)` is None)."""
    path = inventory_path(config)
    how = named(config)
    st = hosts.kind_of_path(path).brought_up()
    if st is not None:
        if how is None:
            return f"{st.label}, brought up by this checkout"
        by = "this checkout" if st.owner == project.checkout() else (st.owner or "a checkout not recorded")
        return f"{st.label}, named with {how} (brought up by {by})"
    inv = load_inventory(config, path)
    named_how = f"named with {how}" if how else "the default inventory"
    return f"inventory {path} (server {inv.server.name}, {len(inv.moms)} moms), {named_how}"
