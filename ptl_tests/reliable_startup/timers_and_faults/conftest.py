"""Part B of the reliable-startup suite (needs_moms(5)): its hosts are the primary and four plain
sisters, no multi-vnode host; no node order is set: `chunk_hosts` predicts the padded standard job's
hosts from the server's vnode order, and `kit.chunk_hosts` holds them.

`chunk_hosts` is module-scoped (once per test module that uses it, and per worker in a parallel run):
it reads the nodes once and asserts that no vnode shows resources assigned without any job (the
session start repairs what a killed run left; after a test such a leak fails it, pbs_harness.suite.leaks).
"""

from __future__ import annotations

import pytest

from pbs_harness.suite import baseline
from ptl_tests.reliable_startup.sister_waits import PADDED_CHUNKS, predicted_hosts
from ptl_tests.reliable_startup_helpers import Roles, StartupKit, suite_roles


@pytest.fixture(scope="module")
def roles(topology) -> Roles:
    """The primary (server host) and sisters 1..4 (plain 2-cpu hosts); no multi-vnode host needed."""
    return suite_roles(topology, multi_vnode=False)


@pytest.fixture(scope="module")
def chunk_hosts(pbs, roles) -> list[str]:
    """The hosts of the padded standard job's five chunks, primary first (the primary, then sisters
    1..4 on the deployed cluster). Resources assigned without any job would move the chunks; none
    can be here (see the module's note), so one is a failure naming it, not a silent repair."""
    phantoms = baseline.phantom_assignments(pbs)
    assert not phantoms, f"vnodes with assigned resources but no job: {phantoms}"
    nodes = pbs.nodes.all()
    hosts = predicted_hosts(nodes)
    assert len(hosts) == len(PADDED_CHUNKS), f"the padded standard job does not fit: {hosts}"
    assert hosts[0] == roles.primary, hosts
    return hosts


@pytest.fixture
def kit(pbs, cluster, roles, nemesis, chunk_hosts):
    """The suite's StartupKit plus `chunk_hosts`: index 1, 2 are the 2-cpu sisters, 3, 4 the 1-cpu ones."""
    k = StartupKit(pbs, cluster, roles, nemesis)
    k.chunk_hosts = chunk_hosts
    yield k
    k.cleanup()


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
