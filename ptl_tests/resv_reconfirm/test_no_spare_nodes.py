"""No spare nodes: the reconfirmation fails, is retried, and the reservation recovers."""

from __future__ import annotations

import re
import time
from datetime import datetime

import pytest

from pbs_harness.pbs.evidence.logs import sched_log
from pbs_harness.pbs.parsers import vnodes_of
from ptl_tests.resv_reconfirm_helpers import (
    CONFIRMED,
    DEGRADED,
    FAR,
    LONG,
    SUB_CONFIRMED,
    check_y,
    confirmations,
    retry_epoch,
    retry_line,
    submit_resv,
    wait_resv,
    y_records,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.resv_reconfirm, pytest.mark.requires_feature("reserve_retry_time")]


@pytest.mark.parametrize("returns", ["spare", "own_node"])
@pytest.mark.spec("RV-6", "RV-2", "RV-5")
@pytest.mark.guards("RV-6", "RV-2", "RV-5")
def test_without_spare_nodes_the_reservation_stays_degraded_is_retried_and_recovers(rv, retry, returns) -> None:
    pbs = rv.pbs
    kept, victim, spare = rv.topology.plain_hosts(3, ncpus=2)
    rv.steer.prefer(kept, victim, spare)
    resv = submit_resv(pbs, "2:ncpus=2", start_in=FAR, duration=LONG, user=rv.owner)
    original = rv.status(resv)["resv_nodes"]
    rv.offline(*[v for v in sorted(rv.topology.vnode_resources) if v not in (kept, victim)])
    since = datetime.now()

    seen, _, _, fault = rv.degrade("kill_mom", resv, victim, DEGRADED)

    first = retry_epoch(seen)
    failed = sched_log(rv.cluster).expect(
        rf";Resv;{re.escape(resv.id)};Reservation is in degraded mode$", since, timeout=first - time.time() + 30
    )
    later = pbs.resv.wait(resv.id, lambda r: retry_epoch(r) > first, timeout=15, describe="reserve_retry moved on")
    nxt = retry_epoch(later)
    assert failed.time.timestamp() + retry <= nxt + 1 <= failed.time.timestamp() + retry + 3, (failed.raw, nxt)
    retry_line(rv.cluster, resv.id, nxt, since, first=False)
    assert (later["reserve_state"], later["resv_nodes"]) == (DEGRADED, original)

    if returns == "spare":
        assert pbs.server.qmgr(f"set node {spare} state-=offline").ok
        done = wait_resv(pbs, resv, CONFIRMED, SUB_CONFIRMED, timeout=nxt - time.time() + retry + 30)
        assert vnodes_of(done["resv_nodes"]) == [kept, spare]
        _, reconfirm = confirmations(rv.cluster, resv)
        check_y(reconfirm, rv.topology.server.name, resv, done["resv_nodes"])
    else:
        rv.nemesis.heal(fault)  # the mom comes back: the node is available again
        done = wait_resv(pbs, resv, CONFIRMED, SUB_CONFIRMED, timeout=60)
        # Not a reconfirmation: the server puts the state back (vnode_available), no 'Y' record.
        assert done["resv_nodes"] == original
        assert len(y_records(rv.cluster, resv.id, resv.submitted)) == 1
