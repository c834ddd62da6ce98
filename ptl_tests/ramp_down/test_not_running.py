"""Jobs that are not running, arrays (RD-1): held, queued, waiting, prerun and finished jobs are
refused; an array's parent is refused and its running subjob releases."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from pbs_harness.pbs.substates import RUNNING
from ptl_tests import jobscripts
from ptl_tests.ramp_down.assignment import Assignment, assert_job_matches
from ptl_tests.ramp_down.evidence import accounting
from ptl_tests.ramp_down.jobs import SLEEP
from ptl_tests.ramp_down_helpers import PRERUN_SUBSTATE, Roles, standard_select

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.ramp_down,
    pytest.mark.needs_moms(3),
    pytest.mark.requires_feature("pbs_release_nodes"),
]


def job_in_state(pbs, nemesis, roles: Roles, state: str) -> str:
    """A job of the standard shape in the given state (PRERUN: R, substate 41)."""
    sleep = ["/bin/sleep", str(SLEEP)]
    if state == "H":
        job_id = pbs.jobs.submit(
            user=roles.owner, select=standard_select(roles), place="scatter", args=["-h"], command=sleep
        )
    elif state == "Q":  # asks for more cpus than the plain host has: never runs
        select = f"ncpus=1:host={roles.primary}+ncpus=3:host={roles.plain}"
        job_id = pbs.jobs.submit(user=roles.owner, select=select, place="scatter", command=sleep)
    elif state == "W":
        later = (datetime.now() + timedelta(hours=1)).strftime("%Y%m%d%H%M")
        job_id = pbs.jobs.submit(
            user=roles.owner, select=standard_select(roles), place="scatter", args=["-a", later], command=sleep
        )
    elif state == "F":
        job_id = pbs.jobs.submit(
            user=roles.owner, select=standard_select(roles), place="scatter", command=["/bin/true"]
        )
    else:  # the sister's execjob_begin hook sleeps: the primary waits for it, the job stays in PRERUN
        nemesis.reject_hook("execjob_begin", (roles.plain,), how="sleep", seconds=20)
        job_id = pbs.jobs.submit(user=roles.owner, select=standard_select(roles), place="scatter", command=sleep)
        pbs.jobs.wait(job_id, job_state="R", substate=PRERUN_SUBSTATE, timeout=15)
        return job_id
    pbs.jobs.wait(job_id, job_state=state, timeout=30)
    return job_id


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
@pytest.mark.parametrize(
    ("state", "stderr"),
    [
        ("H", "pbs_release_nodes: Request invalid for state of job"),
        ("Q", "pbs_release_nodes: Request invalid for state of job"),
        ("W", "pbs_release_nodes: Request invalid for state of job"),
        ("prerun", "pbs_release_nodes: Request invalid for state of job"),
        ("F", "pbs_release_nodes: Job has finished"),
    ],
)
def test_error_job_not_running(pbs, roles, nemesis, state: str, stderr: str) -> None:
    since = datetime.now() - timedelta(seconds=1)
    job_id = job_in_state(pbs, nemesis, roles, state)
    before = pbs.jobs.status(job_id)
    res = pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner)
    assert not res.ok
    assert res.stderr.strip() == stderr
    now = pbs.jobs.status(job_id)
    for key in ("exec_vnode", "exec_host", "schedselect", "Resource_List"):
        assert now.get(key) == before.get(key), key
    assert accounting(pbs).of(job_id, "uc", since) == []


@pytest.mark.spec("RD-1", "RD-3", "RD-4")
@pytest.mark.guards("RD-1", "RD-4")
def test_array_parent_refused_subjob_released(pbs, cluster, roles) -> None:
    since = datetime.now() - timedelta(seconds=1)
    array_id = pbs.jobs.submit(
        jobscripts.sleep_on_every_chunk(str(cluster.prefix), SLEEP),
        user=roles.owner,
        select=standard_select(roles),
        place="scatter",
        array="1-2",
        cwd=cluster.inventory.home(roles.owner),
        args=["-j", "oe", "-o", "/dev/null"],
    )
    first = array_id.replace("[]", "[1]")
    before = pbs.jobs.wait(first, job_state="R", substate=RUNNING, timeout=60)

    res = pbs.jobs.release_nodes(array_id, [roles.plain], user=roles.owner)
    assert not res.ok
    assert res.stderr.strip() == "pbs_release_nodes: not supported for Array Jobs or multiple sub-jobs"
    assert accounting(pbs).of(first, "uc", since) == []

    res = pbs.jobs.release_nodes(first, [roles.plain], user=roles.owner)
    assert res.ok, res.stderr
    expected = Assignment.of(before["exec_vnode"]).without({roles.plain})
    assert_job_matches(pbs.jobs.status(first), expected)
    _, c = accounting(pbs).expect(first, "uc", since, timeout=30)
    assert Assignment.of(c.fields["exec_vnode"]) == expected
