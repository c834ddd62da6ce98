"""Part A of the reliable-startup suite (needs_moms(6)): its hosts include the multi-vnode host, and
the node order is pinned around each test so the padded job lands on the primary, then sisters 1..4.

Module-scoped fixtures are set up once per test module that uses them (and per worker in a parallel
run): `roles` reads the session's topology; `names` runs `hostname` once on each of the part's hosts.
"""

from __future__ import annotations

import pytest

from ptl_tests.reliable_startup_helpers import Roles, StartupKit, clear_node_order, set_node_order, suite_roles


@pytest.fixture(scope="module")
def roles(topology) -> Roles:
    """The primary (server host), sisters 1..4 (plain 2-cpu hosts) and the multi-vnode host."""
    return suite_roles(topology, multi_vnode=True)


@pytest.fixture
def kit(pbs, cluster, roles, nemesis):
    k = StartupKit(pbs, cluster, roles, nemesis)
    yield k
    k.cleanup()


@pytest.fixture(autouse=True)
def _node_order(pbs, roles):
    """Deterministic placement: the padded job lands on the primary, then sisters 1..4, in that order."""
    set_node_order(pbs, roles.node_order)
    yield
    clear_node_order(pbs, roles.node_order)


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
