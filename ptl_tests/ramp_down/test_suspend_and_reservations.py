"""Suspend/resume, reservations (RD-1, RD-3, RD-4): a suspended job refuses a release and resumes
pruned; a reservation's id is refused, a job inside it releases."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from pbs_harness.pbs.substates import RUNNING
from ptl_tests.ramp_down.assignment import Assignment, assert_job_matches, unchanged
from ptl_tests.ramp_down.evidence import accounting
from ptl_tests.ramp_down.jobs import start_job
from ptl_tests.ramp_down_helpers import standard_select

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.ramp_down,
    pytest.mark.needs_moms(3),
    pytest.mark.requires_feature("pbs_release_nodes"),
]


@pytest.mark.spec("RD-1", "RD-3", "RD-4")
@pytest.mark.guards("RD-1", "RD-3", "RD-4")
def test_suspended_job_refuses_release_and_resumes_pruned(pbs, cluster, roles, running_job) -> None:
    job_id, _before, since = running_job
    assert pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner).ok
    pruned = pbs.jobs.status(job_id)
    assert pbs.jobs.signal(job_id, "suspend").ok
    suspended = pbs.jobs.wait(job_id, job_state="S", timeout=30)
    multi_vnode = min(s.vnode for c in Assignment.of(pruned["exec_vnode"]).chunks for s in c if s.host == roles.multi)

    res = pbs.jobs.release_nodes(job_id, [multi_vnode], user=roles.owner)
    assert not res.ok
    assert res.stderr.strip() == "pbs_release_nodes: Request invalid for state of job"
    unchanged(pbs, job_id, suspended)
    assert len(accounting(pbs).of(job_id, "uc", since)) == 2

    assert pbs.jobs.signal(job_id, "resume").ok
    resumed = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=30)
    assert_job_matches(resumed, Assignment.of(pruned["exec_vnode"]))
    assert pbs.jobs.release_nodes(job_id, [multi_vnode], user=roles.owner).ok
    # The refused release wrote nothing; the one after the resume closes the pruned phase ('u') and
    # opens one without the vnode ('c'), as the job now shows it.
    records = accounting(pbs).wait_for(job_id, "uc", 4, since, timeout=30)
    assert [r.type for r in records] == ["u", "c", "u", "c"]
    u, c = records[2:]
    assert u.fields["exec_vnode"] == pruned["exec_vnode"]
    after = pbs.jobs.status(job_id)
    assert c.fields["exec_vnode"] == after["exec_vnode"]
    assert Assignment.of(after["exec_vnode"]) == Assignment.of(pruned["exec_vnode"]).without({multi_vnode})


@pytest.mark.spec("RD-1", "RD-3", "RD-4")
@pytest.mark.guards("RD-1")
def test_reservation_id_refused_job_inside_releases(pbs, cluster, roles) -> None:
    start = datetime.now() + timedelta(seconds=15)
    rid, _ = pbs.resv.submit(
        "-R", start.strftime("%Y%m%d%H%M.%S"), "-D", "600",
        "-l", f"select={standard_select(roles)}", "-l", "place=scatter",
        user=roles.owner,
    )  # fmt: skip
    pbs.resv.wait_state(rid, "RESV_RUNNING", timeout=60)
    res = pbs.jobs.release_nodes(rid, [roles.plain], user=roles.owner)
    assert not res.ok
    refused = res.stderr.strip()
    queue = rid.split(".")[0]
    job_id, before, since = start_job(pbs, cluster, roles, args=["-q", queue])
    res = pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner)
    assert res.ok, res.stderr
    assert_job_matches(pbs.jobs.status(job_id), Assignment.of(before["exec_vnode"]).without({roles.plain}))
    accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)
    # The server looks the id up as a job's: a reservation is no job (seen on 23.06.06, any resv state).
    assert refused == f"pbs_release_nodes: Unknown Job Id {rid}", refused
