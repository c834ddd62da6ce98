"""Confirmed (not yet running) reservations degraded by a node failure are reconfirmed on other
nodes, at reserve_retry or at their start when it comes sooner."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from pbs_harness.pbs.parsers import vnodes_of
from ptl_tests.resv_reconfirm_helpers import (
    CONFIRMED,
    DEGRADED,
    FAR,
    LONG,
    RUNNING,
    SUB_CONFIRMED,
    SUB_RUNNING,
    check_y,
    confirmations,
    retry_epoch,
    retry_line,
    submit_resv,
    wait_resv,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.resv_reconfirm, pytest.mark.requires_feature("reserve_retry_time")]


@pytest.mark.parametrize(
    "how",
    [
        "offline",
        "kill_mom",
        pytest.param("crash_host", marks=pytest.mark.needs_faults("crash", "boot")),
        pytest.param("partition", marks=pytest.mark.needs_faults("partition")),
    ],
)
@pytest.mark.spec("RV-2", "RV-5", "RV-6", "RV-7")
@pytest.mark.guards("RV-2", "RV-5", "RV-6")
def test_a_confirmed_reservation_degraded_by_a_node_failure_is_reconfirmed_on_other_nodes(rv, retry, how) -> None:
    kept, victim, spare = rv.topology.plain_hosts(3, ncpus=2)
    rv.steer.prefer(kept, victim, spare)
    resv = submit_resv(rv.pbs, "2:ncpus=2", start_in=FAR, duration=LONG, user=rv.owner)
    original = rv.status(resv)["resv_nodes"]
    assert vnodes_of(original) == [kept, victim]
    since = datetime.now()

    seen, before, after, _ = rv.degrade(how, resv, victim, DEGRADED)

    first = retry_epoch(seen)
    assert before + retry <= first <= after + retry, (before, seen["reserve_retry"], after)
    retry_line(rv.cluster, resv.id, first, since, first=True)
    done = wait_resv(rv.pbs, resv, CONFIRMED, SUB_CONFIRMED, timeout=first - time.time() + 30)
    assert time.time() >= first - 1  # not before the announced attempt
    assert vnodes_of(done["resv_nodes"]) == [kept, spare]
    confirm, reconfirm = confirmations(rv.cluster, resv)
    check_y(confirm, rv.topology.server.name, resv, original)
    check_y(reconfirm, rv.topology.server.name, resv, done["resv_nodes"])


@pytest.mark.spec("RV-6", "RV-2", "RV-5")
@pytest.mark.guards("RV-6", "RV-2", "RV-5")
def test_a_reservation_degraded_shortly_before_its_start_is_retried_at_its_start(rv) -> None:
    """reserve_retry_time stays at its default (600 s): the start comes sooner, so the one
    attempt is made at the start (determine_resv_retry)."""
    kept, victim, spare = rv.topology.plain_hosts(3, ncpus=2)
    rv.steer.prefer(kept, victim, spare)
    resv = submit_resv(rv.pbs, "2:ncpus=2", start_in=25, duration=LONG, user=rv.owner)
    since = datetime.now()

    seen, _, _, _ = rv.degrade("offline", resv, victim, DEGRADED)

    assert retry_epoch(seen) == resv.start, seen["reserve_retry"]
    retry_line(rv.cluster, resv.id, resv.start, since, first=True)
    done = wait_resv(rv.pbs, resv, RUNNING, SUB_RUNNING, timeout=resv.start - time.time() + 30)
    assert vnodes_of(done["resv_nodes"]) == [kept, spare]
    _, reconfirm = confirmations(rv.cluster, resv)
    check_y(reconfirm, rv.topology.server.name, resv, done["resv_nodes"])
    assert reconfirm.time.timestamp() < resv.start + 30  # at the start, not 600 s after the fault
