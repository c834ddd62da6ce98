"""Fixtures of the reliable-startup suite, for both of its parts (docs/suites/reliable_startup.md).

The two parts want different hosts and kits under the same fixture names, so each test module says
which part it belongs to with its module constant PART, next to its pytestmark:

- PART = "A" (padding, pruning, tolerance, shapes, the site hook pack; needs_moms(6)): `roles`
  includes the multi-vnode host; the autouse `_node_order` gives the primary and sisters 1..4 node
  Priority 60..20 around each test, so the padded job lands on them in that order;
- PART = "B" (timers, vnode_list_fail, tolerance after start, launch hooks, execjob_resize;
  needs_moms(5)): `roles` has no multi-vnode host; no node order is set: `chunk_hosts` predicts the
  padded job's hosts from the server's vnode order, and `kit.chunk_hosts` holds them.

The module-scoped fixtures are set up once per test module that uses them (and per worker in a
parallel run): `roles` reads the session's topology; `names` runs `hostname` once on each of the
suite's hosts; `chunk_hosts` (part B) reads the nodes twice and restarts the server only when a vnode
shows resources assigned without any job (the baseline restore repairs those after every test).
"""

from __future__ import annotations

import pytest

from pbs_harness import baseline
from ptl_tests.reliable_startup.sister_waits import PADDED_CHUNKS, predicted_hosts
from ptl_tests.reliable_startup_helpers import (
    Roles,
    StartupKit,
    clear_node_order,
    set_node_order,
    set_short_alarms,
    suite_roles,
)

PARTS = ("A", "B")


def part_of(request: pytest.FixtureRequest) -> str:
    """The requesting test module's PART ("A" or "B")."""
    part = getattr(request.module, "PART", None)
    assert part in PARTS, f"{request.module.__name__}: set PART to one of {PARTS} (see conftest.py), not {part!r}"
    return part


@pytest.fixture(scope="module")
def roles(request, topology) -> Roles:
    """Part A: the primary (server host), sisters 1..4 (plain 2-cpu hosts) and the multi-vnode host.
    Part B: the primary (server host) and sisters 1..4 (plain 2-cpu hosts); no multi-vnode host needed."""
    return suite_roles(topology, multi_vnode=part_of(request) == "A")


@pytest.fixture(scope="module")
def chunk_hosts(request, pbs, roles) -> list[str] | None:
    """Part B: the hosts of the padded standard job's five chunks, primary first (the primary, then
    sisters 1..4 on the deployed cluster). A vnode showing assigned ncpus without any job (left
    by an earlier suite, seen after a server restart following a node release) is repaired with a
    server restart, which recomputes the assignments from the running jobs. Part A: None (its node
    order is pinned instead)."""
    if part_of(request) == "A":
        return None
    # The baseline restore repairs these after each test; this catches one left before the session.
    if baseline.phantom_assignments(pbs):
        pbs.server.restart()
    phantoms = baseline.phantom_assignments(pbs)
    assert not phantoms, f"vnodes with assigned resources but no job: {phantoms}"
    nodes = pbs.nodes.all()
    hosts = predicted_hosts(nodes)
    assert len(hosts) == len(PADDED_CHUNKS), f"the padded standard job does not fit: {hosts}"
    assert hosts[0] == roles.primary, hosts
    return hosts


@pytest.fixture
def kit(pbs, cluster, roles, chunk_hosts):
    """The suite's StartupKit; in part B plus `chunk_hosts`: index 1, 2 are the 2-cpu sisters, 3, 4
    the 1-cpu ones."""
    k = StartupKit(pbs, cluster, roles)
    if chunk_hosts is not None:
        k.chunk_hosts = chunk_hosts
    yield k
    k.cleanup()


@pytest.fixture(autouse=True)
def _node_order(request, pbs):
    """Part A: deterministic placement: the padded job lands on the primary, then sisters 1..4, in
    that order. Part B: nothing (it does not ask for `roles` either: some of its tests need no hosts)."""
    if part_of(request) == "B":
        yield
        return
    roles = request.getfixturevalue("roles")
    set_node_order(pbs, roles.node_order)
    yield
    clear_node_order(pbs, roles.node_order)


@pytest.fixture
def short_alarms(pbs, cluster, roles):
    return set_short_alarms(pbs, cluster, roles.primary)


@pytest.fixture(scope="module")
def names(cluster, roles) -> dict[str, str]:
    """What `hostname` prints on each host (the job's tools print that, exec_host the node name);
    read once, while no host is paused or partitioned."""
    return {n: cluster.hosts[n].check(["hostname"]).stdout.strip() for n in roles.all_hosts}


# ---------------------------------------------------------------------------------------------
# The site hook pack (test_site_hook_pack.py)

SITE_HOOKS = ("rjs_pad", "rjs_prune")


def export_config(pbs, hook: str) -> str:
    return pbs.hooks.check("qmgr", "-c", f"export hook {hook} application/x-config default").stdout


@pytest.fixture
def site_hooks(pbs, cluster):
    """Enables rjs_pad/rjs_prune (the baseline disables them again); yields a function importing a
    JSON config into one of them; the deployed configs are imported back and checked afterwards."""
    deployed = {h: export_config(pbs, h) for h in SITE_HOOKS}
    for hook in SITE_HOOKS:
        pbs.server.qmgr(f"set hook {hook} enabled=true")

    def configure(hook: str, text: str) -> None:
        pbs.hooks.import_file(hook, text, "application/x-config")

    yield configure
    for hook, text in deployed.items():
        if export_config(pbs, hook) != text:
            pbs.hooks.import_file(hook, text, "application/x-config")
        assert export_config(pbs, hook) == text, f"{hook} config not restored"


# ---------------------------------------------------------------------------------------------
# The primary mom's log mask and timers (part B)

DEFAULT_MOM_LOG_MASK = "0x3ff"  # log_event_lvl_priv in src/lib/Liblog/log_event.c (no DEBUG3)


@pytest.fixture
def primary_logs_debug3(pbs, cluster, roles):
    """$logevent 0x7ff on the primary: the tolerance decisions after start are DEBUG3 lines. A HUP
    does not reset the mask, so the finalizer sets the compiled-in default back explicitly."""
    host = cluster.hosts[roles.primary]
    pbs.mom_config.set(host, "$logevent", "0x7ff")
    yield
    pbs.mom_config.set(host, "$logevent", DEFAULT_MOM_LOG_MASK)


@pytest.fixture
def primary_timers_reset(pbs, cluster, roles):
    """The primary mom recomputes its default timers only when a hook file arrives and never drops
    back when the hooks are deleted; a HUP resets them to 30. HUP it after the test (the baseline
    restore HUPs only a changed config), so later tests find the defaults of a hook-less mom."""
    yield
    pbs.mom_config.hup(cluster.hosts[roles.primary])
