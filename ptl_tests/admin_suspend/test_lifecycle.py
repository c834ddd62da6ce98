"""Lifecycle: delete, rerun, offline, restart, arrays, repeated cycles of an admin-suspended job."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from pbs_harness.pbs.evidence.logs import sched_log
from pbs_harness.pbs.nodes import states
from ptl_tests.admin_suspend_helpers import (
    BADSTATE,
    FREE,
    MAINT,
    RUNNING,
    SUSPENDED,
    accounting,
    chunks_on,
    cli_error,
    maintenance_jobs,
    proc_state,
    purge_left_behind,
    wait_nodes,
    wait_procs,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.admin_suspend]


@pytest.mark.needs_moms(2)
@pytest.mark.parametrize("force", [False, True], ids=["qdel", "qdel-W-force"])
@pytest.mark.spec("AS-1", "AS-4")
@pytest.mark.guards("AS-1", "AS-4")
def test_deleting_an_admin_suspended_job_frees_its_vnodes(kit, pbs, cluster, topology, force) -> None:
    hosts = topology.plain_hosts(2)
    job = kit.sleepers(chunks_on(hosts))
    kit.admin(job.job_id, "admin-suspend")
    wait_nodes(pbs, {h: (MAINT, [job.job_id]) for h in hosts})
    wait_procs(cluster, job.procs, "stopped")

    res = pbs.jobs.delete(job.job_id, force=force)
    assert res.ok, res

    done = pbs.jobs.wait(job.job_id, job_state="F", timeout=90)
    # The stopped processes cannot act on SIGTERM: they end by SIGKILL (256 + 9).
    assert done["Exit_status"] == 265
    wait_procs(cluster, job.procs, "gone")
    wait_nodes(pbs, {h: (FREE, []) for h in hosts})


@pytest.mark.spec("AS-1", "AS-4")
@pytest.mark.guards("AS-1", "AS-4")
def test_qrerun_force_requeues_an_admin_suspended_job_and_frees_its_vnodes(kit, pbs, cluster, topology) -> None:
    (host,) = topology.plain_hosts(1)
    job = kit.sleepers(chunks_on([host]))
    kit.admin(job.job_id, "admin-suspend")
    wait_nodes(pbs, {host: (MAINT, [job.job_id])})

    plain = pbs.jobs.rerun(job.job_id)
    assert (plain.ok, plain.stderr) == (False, cli_error("qrerun", BADSTATE, job.job_id))
    wait_nodes(pbs, {host: (MAINT, [job.job_id])})

    since = datetime.now()
    forced = pbs.jobs.run("qrerun", "-W", "force", job.job_id)
    assert forced.ok, forced
    again = pbs.jobs.wait(job.job_id, job_state="R", substate=RUNNING, timeout=60)
    assert again["run_count"] == 2
    wait_procs(cluster, job.procs, "gone")  # the first run's processes
    nodes = pbs.nodes.all()
    assert all("maintenance" not in states(n) and not maintenance_jobs(n) for n in nodes.values())
    accounting(cluster).wait_for(job.job_id, "R", 1, since, timeout=10)


@pytest.mark.spec("AS-1")
@pytest.mark.guards("AS-1")
def test_a_node_offlined_during_maintenance_stays_offline_after_admin_resume(kit, pbs, cluster, topology) -> None:
    (host,) = topology.plain_hosts(1)
    job = kit.running(select=f"1:ncpus=1:host={host}")
    kit.admin(job, "admin-suspend")
    try:
        pbs.nodes.offline(host, comment="admin_suspend suite: maintenance")
        wait_nodes(pbs, {host: ({"offline", "maintenance"}, [job])})
        waiting = kit.submit(select=f"1:ncpus=1:host={host}")

        kit.admin(job, "admin-resume")
        pbs.jobs.wait(job, job_state="R", substate=RUNNING, timeout=10)
        wait_nodes(pbs, {host: ({"offline"}, [])})
        since = datetime.now()
        pbs.server.set({"scheduling": True})  # a cycle: the offline node still gets nothing
        sched_log(cluster).expect(rf";Job;{re.escape(waiting)};Considering job to run", since, 30)
        assert pbs.jobs.status(waiting)["job_state"] == "Q"
    finally:
        pbs.nodes.clear_offline(host)
        pbs.server.unset("comment", obj="node", name=host)


@pytest.mark.spec("AS-1", "AS-4")
@pytest.mark.guards("AS-1", "AS-4")
def test_a_server_restart_keeps_maintenance_and_maintenance_jobs(kit, pbs, cluster, topology) -> None:
    (host,) = topology.plain_hosts(1)
    job = kit.sleepers(chunks_on([host]))
    kit.admin(job.job_id, "admin-suspend")
    wait_nodes(pbs, {host: (MAINT, [job.job_id])})
    purge_left_behind(kit)

    pbs.server.restart()

    wait_nodes(pbs, {host: (MAINT, [job.job_id])})
    pbs.jobs.wait(job.job_id, job_state="S", substate=SUSPENDED, timeout=10)
    assert all(proc_state(cluster, p).startswith("T") for p in job.procs)
    kit.admin(job.job_id, "admin-resume")
    pbs.jobs.wait(job.job_id, job_state="R", substate=RUNNING, timeout=10)
    wait_nodes(pbs, {host: (FREE, [])})
    wait_procs(cluster, job.procs, "running")


def subjob_ids(array_id: str, indices: range) -> list[str]:
    seq, rest = array_id.split("[]", 1)
    return [f"{seq}[{i}]{rest}" for i in indices]


@pytest.mark.spec("AS-misc", "AS-2", "AS-4")
@pytest.mark.guards("AS-2", "AS-4")
def test_admin_suspended_subjobs_stay_suspended_across_a_server_restart(kit, pbs, topology, conformance) -> None:
    (host,) = topology.plain_hosts(1)
    array = kit.submit(select=f"1:ncpus=1:host={host}", array="1-2")
    subjobs = subjob_ids(array, range(1, 3))
    for sub in subjobs:
        pbs.jobs.wait(sub, job_state="R", substate=RUNNING, timeout=60)
        kit.admin(sub, "admin-suspend")
    wait_nodes(pbs, {host: (MAINT, subjobs)})
    purge_left_behind(kit)

    pbs.server.restart()

    # Spec: "Sub jobs are requeued upon server restart. Any node which only had admin-suspended
    # subjobs will return to the free state after a server restart." 23.06.06 recovers subjobs
    # like any job (pbsd_init.c: JOB_SUBSTATE_SUSPEND keeps its state and the node maintenance).
    nodes = wait_nodes(pbs, {host: (MAINT, subjobs)})
    after = {sub: (pbs.jobs.status(sub)["job_state"], pbs.jobs.status(sub)["substate"]) for sub in subjobs}
    assert after == {sub: ("S", SUSPENDED) for sub in subjobs}
    conformance.difference(
        "AS-misc",
        spec_says="subjobs are requeued upon server restart; a node that only had admin-suspended subjobs "
        "returns to the free state",
        openpbs_does="after the restart the subjobs are still admin-suspended (S, substate 43) and the node "
        "stays in maintenance with both subjobs in maintenance_jobs",
        evidence=f"{host}: state={nodes[host]['state']} maintenance_jobs={nodes[host].get('maintenance_jobs')}; "
        f"subjobs {after}",
    )

    for sub in subjobs:
        kit.admin(sub, "admin-resume")
        pbs.jobs.wait(sub, job_state="R", substate=RUNNING, timeout=10)
    wait_nodes(pbs, {host: ({"job-busy"} if len(subjobs) >= nodes[host]["resources_available"]["ncpus"] else FREE, [])})


STALE_MAINTENANCE = (
    "OpenPBS bug (master, 23.06.06, 22.05.11): node attributes are saved with `attributes = attributes || hstore(...)` "
    "(src/lib/Libdb/pgsql/db_node.c), so an emptied maintenance_jobs is never removed from the database; "
    "pbsd_init.c then puts the node back into maintenance for every listed job that still exists (running, "
    "or finished and kept in the job history). Observed: after admin-suspend, admin-resume (node free) and a "
    "server restart, pbsnodes shows state = maintenance, maintenance_jobs = <the resumed, running job>."
)


class StaleMaintenance(AssertionError):
    """The node came back in maintenance after a restart, naming a job that is not admin-suspended."""


@pytest.mark.xfail(strict=True, raises=StaleMaintenance, reason=STALE_MAINTENANCE)
@pytest.mark.spec("AS-1", "AS-3")
@pytest.mark.guards("AS-1")
def test_a_server_restart_after_the_last_admin_resume_keeps_the_node_out_of_maintenance(
    kit, pbs, topology, baseline, conformance
) -> None:
    (host,) = topology.plain_hosts(1)
    job = kit.running(select=f"1:ncpus=1:host={host}")
    kit.admin(job, "admin-suspend")
    wait_nodes(pbs, {host: (MAINT, [job])})
    kit.admin(job, "admin-resume")
    wait_nodes(pbs, {host: (FREE, [])})
    purge_left_behind(kit)
    try:
        nodes = pbs.server.restart()
        seen = (states(nodes[host]), maintenance_jobs(nodes[host]))
        if seen == (MAINT, [job]):
            evidence = (
                f"{host}: state={nodes[host]['state']} maintenance_jobs={nodes[host].get('maintenance_jobs')}"
                f" (job {job} is {pbs.jobs.status(job).get('job_state')})"
            )
            conformance.difference(
                "AS-1",
                spec_says="the node leaves 'maintenance' when the last admin-suspended job is admin-resumed",
                openpbs_does="a server restart puts the node back into maintenance, listing the resumed job",
                evidence=evidence,
            )
            raise StaleMaintenance(evidence)
        assert seen == (FREE, [])
    finally:
        kit.cleanup()
        rescue_from_stale_maintenance(pbs, host, baseline)


def rescue_from_stale_maintenance(pbs, host: str, baseline) -> None:
    """A node stuck in maintenance by the stale database value cannot be taken out of it (qmgr may
    not set the state; no admin-suspended job is left to resume): delete and re-create the node (no
    job may be on it), then put back resources the mom does not report (set by the inventory)."""
    if "maintenance" not in states(pbs.nodes.status(host)):
        return
    pbs.server.qmgr(f"delete node {host}")
    pbs.server.qmgr(f"create node {host}")
    node = pbs.nodes.wait_state([host], "free", timeout=60)[host]
    for res, value in (baseline.nodes.get(host, {}).get("resources_available") or {}).items():
        if node.get("resources_available", {}).get(res) != value:
            pbs.server.set({f"resources_available.{res}": value}, obj="node", name=host)


@pytest.mark.needs_moms(2)
@pytest.mark.spec("AS-2", "AS-3", "AS-4")
@pytest.mark.guards("AS-2", "AS-3", "AS-4")
def test_repeated_admin_suspend_and_resume_cycles_leave_no_residue(kit, pbs, cluster, topology) -> None:
    hosts = topology.plain_hosts(2)
    job = kit.sleepers(chunks_on(hosts))
    since = datetime.now()
    cycles = 5
    for _ in range(cycles):
        kit.admin(job.job_id, "admin-suspend")
        pbs.jobs.wait(job.job_id, job_state="S", substate=SUSPENDED, timeout=10)
        wait_procs(cluster, job.procs, "stopped")
        wait_nodes(pbs, {h: (MAINT, [job.job_id]) for h in hosts})
        kit.admin(job.job_id, "admin-resume")
        pbs.jobs.wait(job.job_id, job_state="R", substate=RUNNING, timeout=10)
        wait_procs(cluster, job.procs, "running")
        wait_nodes(pbs, {h: (FREE, []) for h in hosts})
    nodes = pbs.nodes.all()
    assert [nodes[h]["resources_assigned"]["ncpus"] for h in hosts] == [1] * len(hosts)
    records = accounting(cluster).wait_for(job.job_id, "zr", 2 * cycles, since, timeout=10)
    assert "".join(r.type for r in records) == "zr" * cycles
