"""Part B, interface 6: what an execjob_launch hook may set (job and vnode attributes, Execution_Time,
run_count, resources_used; not server attributes)."""

from __future__ import annotations

import re

import pytest

from pbs_harness.pbs.evidence import pick
from pbs_harness.pbs.evidence.logs import server_log
from ptl_tests.reliable_startup.sister_waits import install
from ptl_tests.reliable_startup_helpers import (
    LAUNCH_SET_REFUSED,
    LAUNCH_SET_REFUSED_OLD,
    RUNNING,
    launch_sets_hook,
    probe_hook,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.reliable_startup, pytest.mark.needs_moms(5)]


# ---------------------------------------------------------------------------------------------
# Interface 6: what an execjob_launch hook may set


@pytest.mark.spec("RJS-6")
@pytest.mark.guards("RJS-6")
def test_launch_hook_sets_job_and_vnode_attributes_but_not_server_ones(pbs, cluster, kit) -> None:
    """The launch hook sets a vnode attribute and a job attribute (accepted), fails to set a server
    attribute with the new message, then holds (s), requeues and rejects the job: the job comes
    back held, and the old "Can only set progname, argv, env" refusal is gone."""
    launch = probe_hook("fb", "execjob_launch", try_set=["vnode", "job", "server"], hold_and_reject=True)
    install(pbs, cluster, {"fb_launch": launch})
    job_id = kit.submit(select="ncpus=1", place=None)

    held = pbs.jobs.wait(job_id, job_state="H", timeout=60)
    assert held["Hold_Types"] == "s", held
    tried = {
        what: kit.mom.expect(f"fb launch on {kit.primary}: set {what} attribute: ", kit.since, 10)
        for what in ("vnode", "job", "server")
    }
    assert tried["vnode"].message.endswith("set vnode attribute: accepted"), tried["vnode"].raw
    assert tried["job"].message.endswith("set job attribute: accepted"), tried["job"].raw
    assert tried["server"].message.endswith(f"set server attribute: AssertionError: {LAUNCH_SET_REFUSED}"), tried[
        "server"
    ].raw
    kit.mom.expect(r"Hook;fb_launch_\w+;execjob_launch request rejected by 'fb_launch_\w+'$", kit.since, timeout=10)
    kit.mom.absent(LAUNCH_SET_REFUSED_OLD, kit.since)


@pytest.mark.spec("RJS-6")
@pytest.mark.guards("RJS-6")
@pytest.mark.parametrize("rerun", [True, False], ids=["requeued", "running"])
def test_launch_hook_sets_execution_time_run_count_and_resources_used(pbs, cluster, kit, rerun) -> None:
    """The spec's list beyond Hold_Types: the launch hook sets Execution_Time (an hour ahead),
    run_count 5 and resources_used.cput 10 min. Requeued (rerun + reject), the job waits (W) for
    that time with that run_count; accepted, it runs showing all three."""
    launch = launch_sets_hook("fb", run_count=5, cput="00:10:00", rerun=rerun)
    install(pbs, cluster, {"fb_launch": launch})
    job_id = kit.submit(select="ncpus=1", place=None)
    line = kit.mom.expect("fb set Execution_Time=.* run_count=5 cput=00:10:00$", kit.since, timeout=60)
    at = pick.group(re.search(r"Execution_Time=(.*) run_count=", line.message), 1, "Execution_Time=", line.raw)
    if rerun:
        job = pbs.jobs.wait(job_id, job_state="W", substate=30, timeout=60)
        server_log(cluster).expect(f"Job;{job_id};hook rejected request, requiring job to be rerun", kit.since, 10)
    else:
        job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=60)
        assert job["resources_used"]["cput"] == "00:10:00", job["resources_used"]
    assert (job["Execution_Time"], job["run_count"]) == (at, 5), job
