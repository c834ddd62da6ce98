"""Scheduler: nothing starts on a maintenance vnode, preempted and plainly suspended jobs are not
resumed onto a node in maintenance."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from pbs_harness.common.waits import wait_until
from pbs_harness.pbs.evidence import pick
from pbs_harness.pbs.evidence.logs import sched_log
from pbs_harness.pbs.parsers import vnodes_of
from ptl_tests.admin_suspend_helpers import (
    FREE,
    MAINT,
    RUNNING,
    SCHED_SUSPENDED,
    WRONG_RESUME,
    cli_error,
    proc_state,
    wait_nodes,
    wait_procs,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.admin_suspend]


@pytest.mark.needs_moms(2)
@pytest.mark.spec("AS-1")
@pytest.mark.guards("AS-1")
def test_no_job_starts_on_a_maintenance_vnode_and_queued_work_runs_after_admin_resume(
    kit, pbs, cluster, topology
) -> None:
    # The direct check (a job pinned to the vnode) needs no custom resource; a vnode offering
    # localssd, when the cluster has one, adds a job that asks for the resource instead of the name.
    ssd = topology.vnodes_with("localssd")
    node = ssd[0] if ssd else topology.plain_hosts(1)[0]
    held_id = kit.running(select=f"1:ncpus=1:vnode={node}")
    kit.admin(held_id, "admin-suspend")
    nodes = wait_nodes(pbs, {node: (MAINT, [held_id])})
    free_cpus = nodes[node]["resources_available"]["ncpus"] - nodes[node].get("resources_assigned", {}).get("ncpus", 0)
    assert free_cpus >= 1  # the suspended job released its cpu: there is room, only maintenance is in the way

    pinned = kit.submit(select=f"1:ncpus=1:vnode={node}")
    waiting = [(pinned, "vnode")] + ([(kit.submit(select="1:ncpus=1:localssd=1"), "localssd")] if ssd else [])
    for job_id, resource in waiting:
        job = wait_until(
            lambda j=job_id: pbs.jobs.status(j),
            lambda j: str(j.get("comment", "")).startswith("Not Running"),
            timeout=30,
            describe=f"scheduler comment on {job_id}",
        )
        assert job["job_state"] == "Q"
        assert job["comment"].rstrip() == f"Not Running: Insufficient amount of resource: {resource}"
    if ssd:
        kit.purge(pinned)  # leave the vnode's second cpu to the localssd job
    after = waiting[-1][0]

    kit.admin(held_id, "admin-resume")
    wait_nodes(pbs, {node: (FREE, [])})
    # admin-resume does not start a scheduling cycle; the next cycle (started here) runs the job.
    pbs.server.set({"scheduling": True})
    ran = pbs.jobs.wait(after, job_state="R", timeout=30)
    assert vnodes_of(ran["exec_vnode"]) == [node]


@pytest.mark.spec("AS-1", "AS-interactions")
@pytest.mark.guards("AS-1", "AS-interactions")
def test_a_preempted_job_never_puts_its_node_into_maintenance_and_is_not_resumed_there(
    kit, pbs, cluster, topology
) -> None:
    (host,) = topology.plain_hosts(1)
    sched = pbs.server.qmgr("list sched default").stdout
    found = re.search(r"preempt_queue_prio = (\d+)", sched)
    prio = int(pick.group(found, 1, "preempt_queue_prio = N", sched)) if "preempt_queue_prio" in sched else 150
    queue = "asexpress"
    pbs.server.qmgr(f"create queue {queue} queue_type=execution,priority={prio},enabled=True,started=True")
    try:
        ncpus = pbs.nodes.status(host)["resources_available"]["ncpus"]
        low_id = kit.running(select=f"1:ncpus={ncpus}:host={host}")
        high = kit.submit(select=f"1:ncpus={ncpus}:host={host}", queue=queue)
        pbs.jobs.wait(high, job_state="R", substate=RUNNING, timeout=60)
        pbs.jobs.wait(low_id, job_state="S", substate=SCHED_SUSPENDED, timeout=30)
        wait_nodes(pbs, {host: ({"job-busy"}, [])})  # preemption: no maintenance
        res = kit.qsig(low_id, "admin-resume")
        assert (res.ok, res.stderr) == (False, cli_error("qsig", WRONG_RESUME, low_id))

        since = datetime.now()
        kit.admin(high, "admin-suspend")
        wait_nodes(pbs, {host: (MAINT, [high])})
        # The suspend released the node and started a cycle; the scheduler looked at the preempted
        # job and left it suspended: it does not resume jobs onto a node in maintenance.
        sched_log(cluster).expect(rf";Job;{re.escape(low_id)};Considering job to run", since, timeout=30)
        assert pbs.jobs.status(low_id)["substate"] == SCHED_SUSPENDED

        kit.admin(high, "admin-resume")
        pbs.jobs.wait(high, job_state="R", substate=RUNNING, timeout=10)
        wait_nodes(pbs, {host: ({"job-busy"}, [])})
        assert pbs.jobs.status(low_id)["substate"] == SCHED_SUSPENDED
        kit.purge(high)
        pbs.jobs.wait(low_id, job_state="R", substate=RUNNING, timeout=30)  # normal service again
    finally:
        kit.cleanup()
        pbs.server.qmgr(f"delete queue {queue}")


@pytest.mark.spec("AS-1", "AS-interactions")
@pytest.mark.guards("AS-1")
def test_a_plainly_suspended_job_is_not_resumed_by_the_scheduler_on_a_maintenance_node(
    kit, pbs, cluster, topology
) -> None:
    """The spec: the scheduler "will also not resume any suspended jobs that were suspended via the
    'suspend' pseudo signal". Job A is suspended with `suspend` and asked back with `resume` (which
    only hands it to the scheduler) while job B's admin-suspend holds the node in maintenance: A stays
    suspended through a scheduling cycle; after B's admin-resume the scheduler resumes A."""
    (host,) = topology.plain_hosts(1, ncpus=2)
    a = kit.sleepers(f"1:ncpus=1:host={host}")
    b = kit.sleepers(f"1:ncpus=1:host={host}")
    kit.admin(a.job_id, "suspend")
    wait_procs(cluster, a.procs, "stopped")
    kit.admin(b.job_id, "admin-suspend")
    wait_nodes(pbs, {host: (MAINT, [b.job_id])})

    since = datetime.now()
    kit.admin(a.job_id, "resume")
    pbs.server.set({"scheduling": True})  # a cycle that sees A waiting to be resumed
    sched_log(cluster).expect(rf";Job;{re.escape(a.job_id)};Considering job to run", since, timeout=30)
    job = pbs.jobs.status(a.job_id)
    assert (job["job_state"], job["substate"]) == ("S", SCHED_SUSPENDED), job
    assert all(proc_state(cluster, p).startswith("T") for p in a.procs)
    wait_nodes(pbs, {host: (MAINT, [b.job_id])})

    kit.admin(b.job_id, "admin-resume")
    pbs.server.set({"scheduling": True})
    pbs.jobs.wait(a.job_id, job_state="R", substate=RUNNING, timeout=30)
    wait_procs(cluster, a.procs + b.procs, "running")
