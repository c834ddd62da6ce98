"""Running reservations (and standing ones, confirmed or in their first occurrence) degraded by a
node failure: the nodes of their jobs stay and the jobs keep running, a super-chunk is replaced whole."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from pbs_harness.pbs.parsers import vnodes_of
from ptl_tests.resv_reconfirm_helpers import (
    CONFIRMED,
    DEGRADED,
    FAR,
    HOURLY,
    LONG,
    RUNNING,
    SHORT,
    SUB_CONFIRMED,
    SUB_RUNNING,
    check_y,
    chunk_vnodes,
    confirmations,
    job_in,
    retry_epoch,
    retry_line,
    submit_resv,
    wait_resv,
    wait_running,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.resv_reconfirm, pytest.mark.requires_feature("reserve_retry_time")]


def assigned_ncpus(pbs, vnode: str) -> int:
    return int(pbs.nodes.status(vnode).get("resources_assigned", {}).get("ncpus", 0))


@pytest.mark.parametrize("how", [pytest.param("crash_host", marks=pytest.mark.needs_faults("crash", "boot"))])
@pytest.mark.spec("RV-7", "RV-5", "RV-6")
@pytest.mark.guards("RV-7", "RV-5", "RV-6")
def test_a_running_reservation_replaces_only_the_unavailable_node_and_its_job_keeps_running(rv, retry, how) -> None:
    kept, victim, spare, other = rv.topology.plain_hosts(4, ncpus=2)
    rv.steer.prefer(kept, victim)
    resv = submit_resv(rv.pbs, "2:ncpus=2", start_in=SHORT, duration=LONG, user=rv.owner)
    wait_running(rv.pbs, resv)
    job_id, exec_vnode = job_in(rv.pbs, resv, f"1:ncpus=2:host={kept}", user=rv.owner)
    since = datetime.now()

    seen, before, after, _ = rv.degrade(how, resv, victim, RUNNING)
    # Two free hosts now outrank `kept`: it stays only because its job runs there.
    rv.steer.prefer(spare, other, top=200)

    first = retry_epoch(seen)
    assert before + retry <= first <= after + retry, (before, seen["reserve_retry"], after)
    retry_line(rv.cluster, resv.id, first, since, first=True)
    done = wait_resv(rv.pbs, resv, RUNNING, SUB_RUNNING, timeout=first - time.time() + 30)
    assert sorted(vnodes_of(done["resv_nodes"])) == sorted([kept, spare])
    job = rv.pbs.jobs.status(job_id)
    assert (job["job_state"], job["substate"], job["exec_vnode"]) == ("R", 42, exec_vnode)
    assert assigned_ncpus(rv.pbs, spare) == 2  # the running reservation holds its new node
    _, reconfirm = confirmations(rv.cluster, resv)
    check_y(reconfirm, rv.topology.server.name, resv, done["resv_nodes"])


@pytest.mark.spec("RV-7")
def test_a_running_reservation_without_jobs_may_move_its_healthy_nodes_too(rv, retry, conformance) -> None:
    kept, victim, spare, other = rv.topology.plain_hosts(4, ncpus=2)
    rv.steer.prefer(kept, victim)
    resv = submit_resv(rv.pbs, "2:ncpus=2", start_in=SHORT, duration=LONG, user=rv.owner)
    wait_running(rv.pbs, resv)

    seen, _, _, _ = rv.degrade("offline", resv, victim, RUNNING)
    rv.steer.prefer(spare, other, top=200)  # as in the test above, but no job holds `kept`

    done = wait_resv(rv.pbs, resv, RUNNING, SUB_RUNNING, timeout=retry_epoch(seen) - time.time() + 30)
    nodes = sorted(vnodes_of(done["resv_nodes"]))
    assert nodes == sorted([spare, other])
    conformance.difference(
        "RV-7",
        spec_says="only the unavailable nodes can be replaced. All other nodes must remain with the reservation",
        openpbs_does="a running reservation keeps only the nodes where its jobs run (resv_reduce_chunks); "
        "its other chunks are placed again, so a healthy node without jobs can be swapped out",
        evidence=f"offlined {victim}; resv_nodes before ({kept}, {victim}), after {done['resv_nodes']}",
    )


@pytest.mark.spec("RV-7", "RV-5")
@pytest.mark.guards("RV-7", "RV-5")
def test_a_running_super_chunk_reservation_keeps_its_first_chunk(rv, retry) -> None:
    (first_host,) = rv.topology.plain_hosts(1, ncpus=2)
    vnodes = list(rv.topology.multi_vnode_host(min_vnodes=3).all_vnodes)  # 4 or more, natural one first
    rv.steer.prefer(first_host, *vnodes)
    # ncpus=3 fits on no 2-cpu host: the second chunk spans 3 vnodes of the multi-vnode host.
    resv = submit_resv(rv.pbs, "1:ncpus=2+1:ncpus=3", start_in=SHORT, duration=LONG, user=rv.owner)
    before = chunk_vnodes(wait_running(rv.pbs, resv)["resv_nodes"])
    assert before[0] == [first_host]
    assert sorted(before[1]) == sorted(vnodes[:3])
    job_id, exec_vnode = job_in(rv.pbs, resv, f"1:ncpus=2:host={first_host}", user=rv.owner)
    middle = before[1][1]

    seen, _, _, _ = rv.degrade("offline", resv, middle, RUNNING)

    done = wait_resv(rv.pbs, resv, RUNNING, SUB_RUNNING, timeout=retry_epoch(seen) - time.time() + 30)
    after = chunk_vnodes(done["resv_nodes"])
    assert after[0] == [first_host]
    assert len(after[1]) == 3
    assert middle not in after[1]
    assert set(after[1]) < set(vnodes)
    assert rv.pbs.jobs.status(job_id)["exec_vnode"] == exec_vnode
    _, reconfirm = confirmations(rv.cluster, resv)
    check_y(reconfirm, rv.topology.server.name, resv, done["resv_nodes"])


@pytest.mark.parametrize("phase", ["confirmed", "running"])
@pytest.mark.spec("RV-7", "RV-5", "RV-6")
@pytest.mark.guards("RV-7", "RV-5", "RV-6")
def test_a_standing_reservation_is_reconfirmed_on_other_nodes(rv, retry, phase) -> None:
    kept, victim, spare = rv.topology.plain_hosts(3, ncpus=2)
    rv.steer.prefer(kept, victim, spare)
    start_in = FAR if phase == "confirmed" else SHORT
    resv = submit_resv(rv.pbs, "2:ncpus=2", start_in=start_in, duration=LONG, rrule=HOURLY, user=rv.owner)
    assert resv.id.startswith("S")
    state, sub = (CONFIRMED, SUB_CONFIRMED) if phase == "confirmed" else (RUNNING, SUB_RUNNING)
    if phase == "running":
        wait_running(rv.pbs, resv)
    since = datetime.now()

    seen, before, after, _ = rv.degrade("kill_mom", resv, victim, DEGRADED if phase == "confirmed" else RUNNING)

    first = retry_epoch(seen)
    assert before + retry <= first <= after + retry, (before, seen["reserve_retry"], after)
    retry_line(rv.cluster, resv.id, first, since, first=True)
    done = wait_resv(rv.pbs, resv, state, sub, timeout=first - time.time() + 30)
    assert sorted(vnodes_of(done["resv_nodes"])) == sorted([kept, spare])
    assert done["reserve_index"] == "1"
    _, reconfirm = confirmations(rv.cluster, resv)
    check_y(reconfirm, rv.topology.server.name, resv, done["resv_nodes"], count=3)
