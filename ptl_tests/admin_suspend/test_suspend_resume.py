"""admin-suspend and admin-resume: the job stops on every host, its vnodes (and only those) enter
maintenance and leave it with the last admin-resume; plain suspend/resume for comparison."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from pbs_harness.pbs.evidence.logs import sched_log, server_log
from pbs_harness.pbs.nodes import states
from pbs_harness.pbs.parsers import vnodes_of
from ptl_tests.admin_suspend_helpers import (
    FREE,
    MAINT,
    RUNNING,
    SCHED_SUSPENDED,
    SUSPENDED,
    accounting,
    chunks_on,
    maintenance_jobs,
    proc_state,
    wait_nodes,
    wait_procs,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.admin_suspend]


@pytest.mark.needs_moms(3)
@pytest.mark.spec("AS-2", "AS-1", "AS-4")
@pytest.mark.guards("AS-2", "AS-1", "AS-4")
def test_admin_suspend_stops_the_job_on_every_host_and_puts_all_its_vnodes_in_maintenance(
    kit, pbs, cluster, topology
) -> None:
    hosts = topology.plain_hosts(3)
    job = kit.sleepers(chunks_on(hosts))
    assert {p.host for p in job.procs} == set(hosts)  # a sleep per chunk, on every host of the job
    since = datetime.now()

    kit.admin(job.job_id, "admin-suspend")

    status = pbs.jobs.wait(job.job_id, job_state="S", substate=SUSPENDED, timeout=10)
    wait_procs(cluster, job.procs, "stopped")
    nodes = wait_nodes(pbs, {h: (MAINT, [job.job_id]) for h in hosts})
    others = [n for n in nodes if n not in vnodes_of(status["exec_vnode"])]
    assert not [n for n in others if "maintenance" in states(nodes[n]) or maintenance_jobs(nodes[n])]
    server_log(cluster).expect(
        rf";Job;{re.escape(job.job_id)};admin-suspend job by root@{re.escape(topology.server.name)}$", since, timeout=10
    )
    accounting(cluster).wait_for(job.job_id, "z", 1, since, timeout=10)


@pytest.mark.needs_moms(2)
@pytest.mark.spec("AS-3", "AS-4")
@pytest.mark.guards("AS-3", "AS-4")
def test_admin_resume_resumes_at_once_with_scheduling_off(kit, pbs, cluster, topology) -> None:
    hosts = topology.plain_hosts(2)
    job = kit.sleepers(chunks_on(hosts))
    kit.admin(job.job_id, "admin-suspend")
    wait_procs(cluster, job.procs, "stopped")
    wait_nodes(pbs, {h: (MAINT, [job.job_id]) for h in hosts})
    pbs.server.set({"scheduling": False})
    try:
        since = datetime.now()
        kit.admin(job.job_id, "admin-resume")

        pbs.jobs.wait(job.job_id, job_state="R", substate=RUNNING, timeout=10)
        wait_procs(cluster, job.procs, "running")  # the same processes continue
        nodes = wait_nodes(pbs, {h: (FREE, []) for h in hosts})
        assert all(nodes[h]["resources_assigned"]["ncpus"] == 1 for h in hosts)
        # No scheduling cycle looked at the job: the server resumed it directly.
        sched_log(cluster).absent(rf";Job;{re.escape(job.job_id)};", since)
        accounting(cluster).wait_for(job.job_id, "r", 1, since, timeout=10)
    finally:
        pbs.server.set({"scheduling": True})


@pytest.mark.spec("AS-3", "AS-interactions")
def test_plain_resume_waits_for_the_scheduler_unlike_admin_resume(kit, pbs, cluster, topology) -> None:
    (host,) = topology.plain_hosts(1)
    job = kit.sleepers(chunks_on([host]))
    pbs.server.set({"scheduling": False})
    try:
        kit.admin(job.job_id, "suspend")
        pbs.jobs.wait(job.job_id, job_state="S", substate=SUSPENDED, timeout=10)
        wait_procs(cluster, job.procs, "stopped")
        wait_nodes(pbs, {host: (FREE, [])})  # a plain suspend never means maintenance

        kit.admin(job.job_id, "resume")
        # 'resume' only marks the job for the scheduler, which is off: still suspended, still stopped.
        pbs.jobs.wait(job.job_id, job_state="S", substate=SCHED_SUSPENDED, timeout=10)
        assert all(proc_state(cluster, p).startswith("T") for p in job.procs)
    finally:
        pbs.server.set({"scheduling": True})
    pbs.jobs.wait(job.job_id, job_state="R", substate=RUNNING, timeout=30)
    wait_procs(cluster, job.procs, "running")


@pytest.mark.needs_moms(2)
@pytest.mark.spec("AS-1", "AS-3", "AS-4")
@pytest.mark.guards("AS-1", "AS-3", "AS-4")
def test_a_node_leaves_maintenance_only_when_its_last_admin_suspended_job_is_resumed(
    kit, pbs, cluster, topology, conformance
) -> None:
    shared, other = topology.plain_hosts(2)
    a = kit.sleepers(chunks_on([shared, other]))
    b = kit.sleepers(chunks_on([shared]))

    kit.admin(a.job_id, "admin-suspend")
    wait_nodes(pbs, {shared: (MAINT, [a.job_id]), other: (MAINT, [a.job_id])})
    # Other jobs on a node in maintenance keep running until they are suspended themselves.
    assert pbs.jobs.status(b.job_id)["substate"] == RUNNING
    wait_procs(cluster, b.procs, "running")

    kit.admin(b.job_id, "admin-suspend")
    wait_nodes(pbs, {shared: (MAINT, [a.job_id, b.job_id]), other: (MAINT, [a.job_id])})
    shown = pbs.nodes.run("pbsnodes", "-v", shared).stdout
    listing = re.search(r"^\s*maintenance_jobs = (.*)$", shown, re.M)
    assert listing, shown
    assert listing[1] == f"{a.job_id},{b.job_id}"
    conformance.difference(
        "AS-4",
        spec_says='the example shows "maintenance_jobs = 1351.mars, 1352.mars" (comma and space)',
        openpbs_does="pbsnodes prints the ids joined by a bare comma",
        evidence=listing[0].strip(),
    )

    kit.admin(a.job_id, "admin-resume")
    wait_nodes(pbs, {shared: (MAINT, [b.job_id]), other: (FREE, [])})
    pbs.jobs.wait(a.job_id, job_state="R", substate=RUNNING, timeout=10)

    kit.admin(b.job_id, "admin-resume")
    # Out of maintenance; both jobs run again on `shared` (all of its cpus when it has two).
    busy = {"job-busy"} if pbs.nodes.status(shared)["resources_available"]["ncpus"] == 2 else FREE
    wait_nodes(pbs, {shared: (busy, []), other: (FREE, [])})
    wait_procs(cluster, a.procs + b.procs, "running")


@pytest.mark.spec("AS-misc", "AS-1")
@pytest.mark.guards("AS-misc", "AS-1")
def test_on_a_multi_vnode_host_only_the_vnodes_of_the_job_enter_maintenance(kit, pbs, cluster, topology) -> None:
    multi = topology.multi_vnode_host(min_vnodes=3)
    first, second, *rest = multi.vnodes
    untouched = [multi.name, *rest]
    job = kit.sleepers(f"1:ncpus=1:vnode={first}+1:ncpus=1:vnode={second}", place="vscatter:excl")
    wait_nodes(pbs, {first: ({"job-exclusive"}, []), second: ({"job-exclusive"}, [])})

    kit.admin(job.job_id, "admin-suspend")
    wait_procs(cluster, job.procs, "stopped")
    nodes = wait_nodes(pbs, {first: (MAINT, [job.job_id]), second: (MAINT, [job.job_id])})
    assert {n: (states(nodes[n]), maintenance_jobs(nodes[n])) for n in untouched} == {n: (FREE, []) for n in untouched}
    # The scheduler still uses the host's other vnodes.
    other = pbs.jobs.status(kit.running(select=f"1:ncpus=1:host={multi.name}"))
    assert not {first, second} & set(vnodes_of(other["exec_vnode"])), other["exec_vnode"]

    kit.admin(job.job_id, "admin-resume")
    wait_nodes(pbs, {first: ({"job-exclusive"}, []), second: ({"job-exclusive"}, [])})
    wait_procs(cluster, job.procs, "running")
