"""Fault: a sister host crashes and boots during maintenance."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from pbs_harness.pbs.evidence.logs import mom_log
from ptl_tests.admin_suspend_helpers import (
    FREE,
    JOBEXIST,
    MAINT,
    SUSPENDED,
    chunks_on,
    cli_error,
    proc_state,
    wait_nodes,
    wait_procs,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.admin_suspend]


@pytest.mark.needs_moms(3)
@pytest.mark.needs_faults("crash", "boot")
@pytest.mark.spec("AS-1", "AS-3")
@pytest.mark.guards("AS-1")
def test_a_sister_host_that_crashes_and_boots_during_maintenance(kit, pbs, topology, nemesis, conformance):
    primary, survivor, victim = topology.plain_hosts(3)
    cluster = pbs.cluster
    job = kit.sleepers(chunks_on([primary, survivor, victim]))
    jid = job.job_id
    kit.admin(jid, "admin-suspend")
    wait_procs(cluster, job.procs, "stopped")
    since = datetime.now()

    fault = nemesis.crash_host(victim)
    # The server sees the mom go; maintenance (a server-side state bit) stays with the down node.
    wait_nodes(pbs, {victim: ({"down", "maintenance"}, [jid]), primary: (MAINT, [jid])})
    # The primary mom keeps the suspended job (im_eof spares substate SUSPEND, mom_comm.c).
    mom_log(cluster, primary).expect(
        rf";Job;{re.escape(jid)};.*lost communication with {re.escape(victim)}, not killing job yet", since, 30
    )
    assert pbs.jobs.status(jid)["substate"] == SUSPENDED

    nemesis.heal(fault)
    # The booted mom is back; the node is still in maintenance. The mom started without -p
    # discarded its part of the job (init_abort_jobs: a sister junks its job files).
    wait_nodes(pbs, {victim: (MAINT, [jid]), primary: (MAINT, [jid]), survivor: (MAINT, [jid])}, timeout=90)
    lost = [p for p in job.procs if p.host == victim]
    kept = [p for p in job.procs if p.host != victim]
    assert [proc_state(cluster, p) for p in lost] == [""] * len(lost)
    assert all(proc_state(cluster, p).startswith("T") for p in kept)

    since = datetime.now()
    res = kit.qsig(jid, "admin-resume")

    # The primary resumed its own tasks and the survivor's; the booted sister answered PBSE_JOBEXIST
    # (15009, "does not know the job"), which comes back to qsig. Releasing the re-assigned
    # resources also cleared the admin-suspend flag and the maintenance of every node.
    assert (res.ok, res.stderr) == (False, cli_error("qsig", JOBEXIST, jid))
    mom_log(cluster, primary).expect(rf";Job;{re.escape(jid)};im_request, RESUME returned ERROR 15009", since, 30)
    nodes = wait_nodes(pbs, {h: (FREE, []) for h in (primary, survivor, victim)})
    after = pbs.jobs.status(jid)
    assert (after["job_state"], after["substate"]) == ("S", SUSPENDED)
    running_again = wait_procs(cluster, kept, "running")
    conformance.difference(
        "AS-3",
        spec_says="admin-resume resumes the admin-suspended job; the nodes leave maintenance when the last "
        "admin-suspended job is admin-resumed",
        openpbs_does="when a sister host crashed and booted during maintenance, admin-resume fails, yet every "
        "node leaves maintenance and the job's processes on the other hosts run again while PBS still shows the "
        "job suspended with its resources released",
        evidence=f"{res.stderr.strip()}; job {after['job_state']}/{after['substate']}; nodes "
        f"{ {h: nodes[h]['state'] for h in (primary, survivor, victim)} }; processes "
        f"{ {(p.host, p.pid): s for p, s in running_again.items()} }",
    )
    # The job can still be deleted, which ends it everywhere.
    kit.purge(jid)
    wait_procs(cluster, kept, "gone", timeout=60)
