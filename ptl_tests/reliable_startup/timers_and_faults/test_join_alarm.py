"""Part B, interface 3: a sister that never acknowledges IM_JOIN_JOB; the join alarm bounds the wait,
and a qrerun of the job waiting on it (PTL t18)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from pbs_harness.common.waits import wait_until
from pbs_harness.pbs.parsers import size_kb, vnodes_of
from pbs_harness.suite import defect_retry
from ptl_tests.reliable_startup.sister_waits import JOIN_EARLY, JOIN_SLACK, install, listed, marker, wait_prerun_on
from ptl_tests.reliable_startup_helpers import (
    BADSTATE,
    JOIN_ALARM,
    LAUNCH_DELAY,
    RUNNING,
    assert_assignment,
    chunks_of,
    expected_prune,
    hosts_of,
    pad_hook,
    probe_hook,
    prune_hook,
    seconds_between,
    set_mom_options,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.reliable_startup, pytest.mark.needs_moms(5)]
PBSEVENT_ADMIN = 0x0004  # src/include/log.h


# ---------------------------------------------------------------------------------------------
# Interface 3: a sister that never acknowledges IM_JOIN_JOB


@pytest.mark.spec("RJS-3", "RJS-1", "RJS-5")
@pytest.mark.guards("RJS-3", "RJS-1")
def test_join_alarm_bounds_the_wait_for_a_silent_sister(pbs, cluster, nemesis, kit, conformance) -> None:
    """Its execjob_begin hook sleeps far past $sister_join_job_alarm (a radio-silent sister while
    joining): the job sits in R/41 with its padded assignment, pbs_release_nodes is refused, then
    the primary gives up on the sister after the alarm and the launch hook prunes it."""
    alarm, silent = 9, kit.chunk_hosts[2]
    set_mom_options(pbs, cluster, kit.primary, {JOIN_ALARM: alarm, LAUNCH_DELAY: 20})
    fault = nemesis.reject_hook("execjob_begin", (silent,), how="sleep", seconds=alarm + 10)
    hooks = {"fb_pad": pad_hook(), "fb_launch": prune_hook(), "fb_begin": probe_hook("fb", "execjob_begin", alarm=10)}
    install(pbs, cluster, hooks, [fault])

    job_id = kit.submit()
    kit.mom_of(silent).expect(f"pbs-harness fault hook: sleep on {silent}", kit.since, timeout=60)
    waiting = wait_prerun_on(kit, job_id, silent)
    # Waiting on sisters: the padded request and assignment, not yet pruned.
    assert len(chunks_of(waiting["exec_vnode"])) == 5, waiting["exec_vnode"]
    assert int(waiting["Resource_List"]["nodect"]) == 5
    refused = pbs.jobs.release_nodes(job_id, all_sisters=True, user=kit.user)
    assert not refused.ok
    assert refused.stderr.strip() == f"pbs_release_nodes: {BADSTATE}", refused.stderr

    start = marker(kit, "fb", "begin")
    exceeded, used = kit.join_alarm_exceeded(job_id, kit.since, timeout=alarm + 30)
    assert used == alarm, f"the primary's join alarm: expected {alarm}s, it used {used}s: {exceeded.raw}"
    waited = seconds_between(start.time, exceeded.time)
    assert alarm - JOIN_EARLY <= waited <= alarm + JOIN_SLACK, f"join wait {waited}s for an alarm of {alarm}s"
    assert exceeded.event == PBSEVENT_ADMIN, exceeded.raw
    conformance.difference(
        "RJS-3",
        spec_says='"sister_join_job_alarm wait time <alarm_value> secs exceeded" at DEBUG2 level',
        openpbs_does="the line is logged as PBSEVENT_ADMIN (0x0004)",
        evidence=exceeded.raw,
    )
    # No execjob_prologue hook: the primary launches without waiting for $job_launch_delay (20).
    launch = kit.mom.expect(f"launch: found vnode_list\\[{kit.primary}\\]", kit.since, timeout=30)
    assert seconds_between(exceeded.time, launch.time) <= 3, (exceeded.raw, launch.raw)
    conformance.difference(
        "RJS-4",
        spec_says="job_launch_delay defaults to 30 s when there is no execjob_prologue hook",
        openpbs_does=(
            "without an enabled execjob_prologue hook the primary mom does not wait at all before launching"
            " (start_exec.c waits only when prologue hooks exist), whatever $job_launch_delay says"
        ),
        evidence=f"{exceeded.raw} / {launch.raw} ($job_launch_delay 20)",
    )

    job = kit.started(job_id, timeout=60)
    # The silent sister is pruned away (release_nodes keeps only sisters that joined) ...
    keep = job["Resource_List"]["site"]
    assert_assignment(job, expected_prune(waiting["exec_vnode"], keep, [silent]), keep)
    # ... but the launch hook is not told: vnode_list_fail stays empty for a join that timed out.
    assert listed(kit, "launch", "vnode_list") == sorted(vnodes_of(waiting["exec_vnode"]))
    assert listed(kit, "launch", "vnode_list_fail") == []
    conformance.difference(
        "RJS-5",
        spec_says="vnode_list_fail lists the vnodes of sister moms that failed to join the job",
        openpbs_does=(
            f"a sister that never acknowledged IM_JOIN_JOB ({silent}, join alarm expired) is absent from"
            " vnode_list_fail in execjob_launch (empty); release_nodes(keep_select) still leaves it out"
        ),
        evidence=f"{exceeded.raw} / launch vnode_list_fail: [] / {kit.pruning(job_id)[1]}",
    )


def assigned(resources: dict) -> tuple[int, int]:
    """(ncpus, mem in kb) of a resources_assigned attribute (absent counts as 0)."""
    return int(resources.get("ncpus", 0)), size_kb(resources.get("mem", 0))


# docs/suites/reliable_startup.md, "qrerun of a job waiting on its sisters is not honoured"
RERUN_NOT_HONOURED = (
    "OpenPBS defect (intermittent): qrerun of a tolerant job waiting in R/41 on a silent sister is not "
    "honoured; the primary logs 'signal job with Rerun' and 'kill_job', then prunes and starts the job "
    "when $sister_join_job_alarm expires; qrerun times out ('Job rerun request still in progress')."
)


def delete_until_gone(pbs, job_id: str, timeout: float = 90) -> None:
    """`qdel -W force` until the server forgets the job: while a rerun request is still in progress
    the server answers a delete with "deleting instead of rerunning" and waits for the mom."""

    def still_there() -> bool:
        pbs.jobs.delete(job_id, force=True)  # fails harmlessly once the job is gone
        return job_id in pbs.jobs.all()

    wait_until(still_there, lambda present: not present, timeout=timeout, describe=f"{job_id} deleted")


@pytest.mark.spec("RJS-1", "RJS-5")
@pytest.mark.guards("RJS-1")
def test_qrerun_of_a_job_waiting_on_a_silent_sister(pbs, cluster, nemesis, kit, request) -> None:
    """PTL t18: a tolerant job waits in R/41 on a sister whose execjob_begin hook sleeps. qrerun
    (scheduling off) puts it back in Q and gives everything back: its vnodes are free, the server
    and the queue have nothing assigned. Scheduling on: it runs again, waits out the join alarm on
    the same silent sister and is pruned without it (run_count 2). When OpenPBS instead starts the
    job despite the rerun (a known intermittent defect, recognised by those exact lines), the scenario
    runs again on a fresh job (defect_retry.met); met on every attempt, the test fails."""
    alarm, silent = 10, kit.chunk_hosts[2]
    set_mom_options(pbs, cluster, kit.primary, {JOIN_ALARM: alarm, LAUNCH_DELAY: 20})
    fault = nemesis.reject_hook("execjob_begin", (silent,), how="sleep", seconds=alarm + 10)
    install(pbs, cluster, {"fb_pad": pad_hook(), "fb_launch": prune_hook()}, [fault])

    job_id = kit.submit()
    waiting = wait_prerun_on(kit, job_id, silent)
    # The server writes 'S' once the primary accepted the job, while it waits on its sisters.
    first_start = kit.start_records(job_id, "S")["S"].fields["exec_vnode"]
    assert first_start == waiting["exec_vnode"], (first_start, waiting["exec_vnode"])
    pbs.server.set({"scheduling": False})
    try:
        rerun_at = datetime.now() - timedelta(seconds=1)
        rerun = pbs.jobs.rerun(job_id)
        if not rerun.ok:
            signalled = kit.mom.expect(f"Job;{job_id};signal job with Rerun", rerun_at, timeout=10)
            started = kit.mom.expect(f"Job;{job_id};Started, pid = ", rerun_at, timeout=alarm + 30)
            now = pbs.jobs.status(job_id)
            delete_until_gone(pbs, job_id)
            # Seen in 2 of 3 runs: only with this exact evidence, and then once more on a fresh job
            # (pbs_harness.suite.defect_retry), so the behaviour still gets a verdict.
            defect_retry.met(
                request,
                f"{RERUN_NOT_HONOURED} Observed: qrerun rc {rerun.rc}: {rerun.stderr.strip()}; primary: "
                f"{signalled.raw} / {started.raw}; job then {now.get('job_state')}/{now.get('substate')}",
            )
        pbs.jobs.wait(job_id, job_state="Q", timeout=alarm + 30)
        pbs.nodes.wait_state(hosts_of(waiting["exec_vnode"]), "free", timeout=30)
        assert assigned(pbs.server.status().get("resources_assigned", {})) == (0, 0)
        assert assigned(pbs.server.queues()["workq"].get("resources_assigned", {})) == (0, 0)
    finally:
        pbs.server.set({"scheduling": True})

    exceeded, used = kit.join_alarm_exceeded(job_id, rerun_at, timeout=alarm + 60)
    assert used == alarm, f"the primary's join alarm: expected {alarm}s, it used {used}s: {exceeded.raw}"
    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=60)
    assert int(job["run_count"]) == 2, job["run_count"]
    starts = wait_until(
        lambda: kit.accounting.of(job_id, "S", kit.since),
        lambda recs: len(recs) == 2,
        timeout=30,
        describe=f"two 'S' records of {job_id}",
    )
    second_start = starts[1].fields["exec_vnode"]
    assert silent in hosts_of(second_start), (second_start, exceeded.raw)
    keep = job["Resource_List"]["site"]
    assert_assignment(job, expected_prune(second_start, keep, [silent]), keep)
