"""Part B, interface 1: tolerance after the job started (PTL t9, t10): a kept sister's mom killed while
the job runs."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from pbs_harness.pbs.evidence import pick
from ptl_tests.reliable_startup.sister_waits import install
from ptl_tests.reliable_startup_helpers import (
    JOIN_ALARM,
    KILLING_JOB,
    LAUNCH_DELAY,
    RUNNING,
    hosts_of,
    pad_hook,
    prune_hook,
    set_mom_options,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.reliable_startup, pytest.mark.needs_moms(5)]


# ---------------------------------------------------------------------------------------------
# Interface 1: tolerance after the job started (PTL t9, t10)


@pytest.mark.spec("RJS-1")
@pytest.mark.guards("RJS-1")
@pytest.mark.parametrize("tolerance", ["all", "job_start"])
@pytest.mark.usefixtures("primary_logs_debug3")
def test_kept_sister_killed_after_start(pbs, cluster, nemesis, kit, tolerance: str) -> None:
    """A sister the job kept after pruning loses its pbs_mom (SIGKILL) while the job runs.
    'all' tolerates it for the job's whole life: the primary logs that it ignores the lost
    sister, also when its periodic poll of the sisters fails, and the job keeps running;
    'job_start' tolerates failures only during start: the primary kills the job once
    $max_poll_downtime (10 s here) has passed."""
    downtime = 10
    set_mom_options(pbs, cluster, kit.primary, {JOIN_ALARM: 20, LAUNCH_DELAY: 20, "$max_poll_downtime": downtime})
    install(pbs, cluster, {"fb_pad": pad_hook(tolerance=tolerance), "fb_launch": prune_hook()})
    job_id = kit.submit()
    job = kit.started(job_id, timeout=60)
    kit.pruning(job_id)
    sister = pick.nth(hosts_of(job["exec_vnode"]), 1, f"a sister in exec_vnode {job['exec_vnode']}")
    assert sister != kit.primary

    killed = datetime.now() - timedelta(seconds=1)
    nemesis.kill_mom(sister)
    kit.mom.expect(r"im_eof, Premature end of message", killed, timeout=30)
    if tolerance == "job_start":
        kit.mom.expect(f"Job;{job_id};{KILLING_JOB.format(host=sister)}", killed, timeout=downtime + 150)
        kit.mom.expect(f"Job;{job_id};kill_job", killed, timeout=30)
        # The server requeues it (node_fail_requeue): it will run again elsewhere.
        kit.server_log.expect(f"Job;{job_id};Job requeued, execution node {sister} down", killed, timeout=30)
        pbs.jobs.wait(job_id, job_state=("Q", "R"), timeout=30)
    else:
        kit.mom.expect(
            f"Job;{job_id};ignoring lost communication with {sister} as job is tolerant of node failures",
            killed,
            timeout=30,
        )
        # The periodic poll of the sisters is where a job_start job dies; here it is ignored.
        kit.mom.expect(
            f"Job;{job_id};ignoring lost communication with {sister} for reliable job startup",
            killed,
            timeout=downtime + 150,
        )
        assert pbs.jobs.status(job_id)["job_state"] == "R"
        assert pbs.jobs.status(job_id)["substate"] == RUNNING
        kit.mom.absent(f"Job;{job_id};kill_job", killed)
