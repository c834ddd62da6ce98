"""A job of the reservation on the unavailable node (offline, or in maintenance under an
admin-suspended job) blocks the reconfirmation until it is gone."""

from __future__ import annotations

import re
import time
from datetime import datetime

import pytest

from pbs_harness.common.waits import wait_until
from pbs_harness.pbs.evidence.logs import sched_log
from pbs_harness.pbs.parsers import vnodes_of
from ptl_tests.resv_reconfirm_helpers import (
    LONG,
    RUNNING,
    SHORT,
    SUB_DEGRADED,
    SUB_RUNNING,
    check_y,
    confirmations,
    job_in,
    retry_epoch,
    retry_line,
    submit_resv,
    wait_resv,
    wait_running,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.resv_reconfirm, pytest.mark.requires_feature("reserve_retry_time")]


class ReconfirmedUnderAJob(AssertionError):
    """The reservation was reconfirmed away from a node where its job still is."""


MAINTENANCE_XFAIL = pytest.mark.xfail(
    strict=True,
    raises=ReconfirmedUnderAJob,
    reason="OpenPBS (master, 23.06.06, 22.05.11) "
    "reconfirms a running reservation whose node went into maintenance under its own "
    "job: the scheduler only counts running jobs (check_chunk_running, resv queue running_jobs) and the "
    "admin-suspended job is S, so at the first retry the reservation moves, e.g. Y record "
    "nodes=(<plain host 1>:ncpus=2)+(<plain host 3>:ncpus=2) while job <job id> stays admin-suspended on "
    "<plain host 2>; no 'PBS Failed to confirm resv: Reservation has running jobs in it'",
)


# Only the offline case gets to the retry after the refused attempt and to the reconfirmation.
RETRIED_AND_RECONFIRMED = pytest.mark.guards("RV-6", "RV-2", "RV-5")


@pytest.mark.parametrize(
    "how",
    [pytest.param("offline", marks=RETRIED_AND_RECONFIRMED), pytest.param("maintenance", marks=MAINTENANCE_XFAIL)],
)
@pytest.mark.spec("RV-8", "RV-6", "RV-2", "RV-5")
@pytest.mark.guards("RV-8")
def test_no_reconfirmation_while_a_job_of_the_reservation_runs_on_the_unavailable_node(rv, retry, how) -> None:
    kept, victim, spare = rv.topology.plain_hosts(3, ncpus=2)
    rv.steer.prefer(kept, victim, spare)
    resv = submit_resv(rv.pbs, "2:ncpus=2", start_in=SHORT, duration=LONG, user=rv.owner)
    wait_running(rv.pbs, resv)
    job_id, _ = job_in(rv.pbs, resv, f"1:ncpus=2:host={victim}", user=rv.owner)
    since = datetime.now()

    seen, _, _, _ = rv.degrade(how, resv, victim, RUNNING, job_id=job_id)

    first = retry_epoch(seen)
    refused = rf";Resv;{re.escape(resv.id)};PBS Failed to confirm resv: Reservation has running jobs in it$"
    sched = sched_log(rv.cluster)
    lines, status = wait_until(
        lambda: (sched.matching(refused, since), rv.status(resv)),
        lambda got: bool(got[0]) or got[1].get("reserve_substate") != SUB_DEGRADED,
        timeout=first - time.time() + 30,
        describe=f"the first attempt to reconfirm {resv.id}",
    )
    if not lines:
        job = rv.pbs.jobs.status(job_id)
        raise ReconfirmedUnderAJob(
            f"job {job_id} {job.get('job_state')}/{job.get('substate')} on {victim}; reservation "
            f"{status.get('reserve_state')}/{status.get('reserve_substate')} resv_nodes={status.get('resv_nodes')}"
        )
    failed = lines[0]
    # After the failed attempt the server plans the next one reserve_retry_time later.
    later = rv.pbs.resv.wait(resv.id, lambda r: retry_epoch(r) > first, timeout=15, describe="reserve_retry moved on")
    nxt = retry_epoch(later)
    assert failed.time.timestamp() + retry <= nxt + 1 <= failed.time.timestamp() + retry + 3, (failed.raw, nxt)
    retry_line(rv.cluster, resv.id, nxt, since, first=False)
    still = rv.status(resv)
    assert (still["reserve_substate"], vnodes_of(still["resv_nodes"])) == (SUB_DEGRADED, [kept, victim])

    rv.pbs.jobs.delete(job_id, force=True)
    rv.pbs.jobs.wait(job_id, job_state="F", timeout=30)

    done = wait_resv(rv.pbs, resv, RUNNING, SUB_RUNNING, timeout=nxt - time.time() + retry + 30)
    assert sorted(vnodes_of(done["resv_nodes"])) == sorted([kept, spare])
    _, reconfirm = confirmations(rv.cluster, resv)
    check_y(reconfirm, rv.topology.server.name, resv, done["resv_nodes"])
