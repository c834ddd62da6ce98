"""Part B, interface 4: prologue acknowledgements and $job_launch_delay: failed begin and prologue
sisters reported and offlined, a sister failing during its prologue (PTL t21), a late acknowledgement."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest

from ptl_tests.reliable_startup.kept_jobs import KEPT_PRUNED_JOB
from ptl_tests.reliable_startup.sister_waits import (
    LAUNCH_EARLY,
    LAUNCH_SLACK,
    host_vnodes,
    install,
    listed,
    marker,
    wait_prerun_on,
)
from ptl_tests.reliable_startup_helpers import (
    IGNORING,
    JOIN_ALARM,
    LAUNCH_DELAY,
    PROLOGUES_INCOMPLETE,
    START_ERROR,
    assert_assignment,
    expected_prune,
    hosts_of,
    met_empty_fail_list,
    pad_hook,
    probe_hook,
    prune_hook,
    seconds_between,
    set_mom_options,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.reliable_startup, pytest.mark.needs_moms(5)]
PBSEVENT_DEBUG2 = 0x0100  # src/include/log.h


# ---------------------------------------------------------------------------------------------
# Interface 4: prologue acknowledgements and $job_launch_delay


@KEPT_PRUNED_JOB[0]
@KEPT_PRUNED_JOB[1]  # its prologue sister keeps the job (kept_jobs.SisterKeptPrunedJob)
@pytest.mark.spec("RJS-4", "RJS-1", "RJS-5", "RJS-6")
@pytest.mark.guards("RJS-4", "RJS-1", "RJS-5", "RJS-6")
@pytest.mark.parametrize("faults", [("reject", "exception"), ("exception", "reject")], ids="begin-{0[0]}".format)
def test_failed_begin_and_prologue_sisters_are_reported_and_offlined(
    pbs, cluster, nemesis, kit, *, request, faults
) -> None:
    """The first 2-cpu sister fails execjob_begin, the first 1-cpu sister execjob_prologue (reject
    or exception). The primary logs both as tolerated errors; the prologue hook sees the first in
    vnode_list_fail, the launch hook both, offlines them (a vnode attribute set from
    execjob_launch) and prunes them away. A failing prologue is an answer: the primary launches as
    soon as every sister answered, without waiting out $job_launch_delay."""
    begin_fault, prologue_fault = faults
    delay, at_begin, at_prologue = 20, kit.chunk_hosts[1], kit.chunk_hosts[3]
    set_mom_options(pbs, cluster, kit.primary, {JOIN_ALARM: 20, LAUNCH_DELAY: delay})
    faults = [
        nemesis.reject_hook("execjob_begin", (at_begin,), how=begin_fault),
        nemesis.reject_hook("execjob_prologue", (at_prologue,), how=prologue_fault),
    ]
    prologue_lists = prune_hook("execjob_prologue", prune=False)  # logs its vnode lists only
    hooks = {"fb_pad": pad_hook(), "fb_prolo": prologue_lists, "fb_launch": prune_hook(offline_failed=True)}
    install(pbs, cluster, hooks, faults)

    job_id = kit.submit()
    job = kit.started(job_id, timeout=90)
    initial = kit.start_records(job_id)["S"].fields["exec_vnode"]
    assert {at_begin, at_prologue} <= set(hosts_of(initial)), initial

    for host, what in ((at_begin, "JOIN_JOB"), (at_prologue, "IM_EXEC_PROLOGUE")):
        kit.mom.expect(f"Job;{job_id};{START_ERROR.format(host=host, what=what)}", kit.since, timeout=10)
        kit.mom.expect(f"Job;{job_id};{IGNORING.format(host=host)}", kit.since, timeout=10)
    assert listed(kit, "prolo", "vnode_list_fail") == host_vnodes(initial, at_begin)
    failed_vnodes = host_vnodes(initial, at_begin, at_prologue)
    fail_listed = listed(kit, "launch", "vnode_list_fail")
    if fail_listed != failed_vnodes:
        for host in (at_begin, at_prologue):
            met_empty_fail_list(kit, request, job_id, host, knew=IGNORING.format(host=host))
    assert fail_listed == failed_vnodes

    prologue = kit.mom.expect(f"prolo: found vnode_list\\[{kit.primary}\\]", kit.since, timeout=10)
    launch = kit.mom.expect(f"launch: found vnode_list\\[{kit.primary}\\]", kit.since, timeout=10)
    assert seconds_between(prologue.time, launch.time) < delay / 2, (prologue.raw, launch.raw)
    kit.mom.absent(PROLOGUES_INCOMPLETE, kit.since)

    pbs.nodes.wait_state(failed_vnodes, "offline", timeout=30)
    keep = job["Resource_List"]["site"]
    assert_assignment(job, expected_prune(initial, keep, [at_begin, at_prologue]), keep)


@pytest.mark.spec("RJS-4", "RJS-1", "RJS-5")
@pytest.mark.guards("RJS-4", "RJS-1", "RJS-5")
# A killed mom loses the job with its restart; a silent one, pruned as failed, keeps it (kept_jobs).
@pytest.mark.parametrize("fault", ["mom killed", pytest.param("radio silent", marks=KEPT_PRUNED_JOB)])
def test_sister_failing_during_its_prologue_is_waited_for_then_pruned(
    pbs, cluster, nemesis, kit, *, request, fault: str
) -> None:
    """A 2-cpu sister's execjob_prologue hook sleeps past $job_launch_delay; meanwhile its pbs_mom
    is SIGKILLed, or it just stays silent (PTL t21). The primary never gets its prologue
    acknowledgement: it launches after $job_launch_delay, saying not all prologue hooks completed;
    the sister is reported failed (vnode_list_fail) and the launch hook prunes it away."""
    delay, sister = 8, kit.chunk_hosts[2]
    set_mom_options(pbs, cluster, kit.primary, {JOIN_ALARM: 20, LAUNCH_DELAY: delay})
    sleeper = nemesis.reject_hook("execjob_prologue", (sister,), how="sleep", seconds=delay + 10)
    hooks = {
        "fb_pad": pad_hook(),
        "fb_prolo": probe_hook("fb", "execjob_prologue", alarm=10),
        "fb_launch": prune_hook(),
    }
    install(pbs, cluster, hooks, [sleeper])

    job_id = kit.submit()
    kit.mom_of(sister).expect(f"pbs-harness fault hook: sleep on {sister}", kit.since, timeout=60)
    waiting = wait_prerun_on(kit, job_id, sister)
    if fault == "mom killed":
        nemesis.kill_mom(sister)

    start = marker(kit, "fb", "prologue")
    incomplete = kit.mom.expect(f"Job;{job_id};{PROLOGUES_INCOMPLETE}", kit.since, timeout=delay + 30)
    waited = seconds_between(start.time, incomplete.time)
    assert delay - LAUNCH_EARLY <= waited <= delay + LAUNCH_SLACK, f"launch waited {waited}s for a delay of {delay}s"
    assert incomplete.event == PBSEVENT_DEBUG2, incomplete.raw
    job = kit.started(job_id, timeout=60)
    keep = job["Resource_List"]["site"]
    # The failure reaching the launch hook is checked before the prune it drives: when the known starter
    # race loses it, the prune may keep the sister, and the race's evidence must be read first.
    fail_listed = listed(kit, "launch", "vnode_list_fail")
    if not fail_listed:
        met_empty_fail_list(kit, request, job_id, sister, knew=re.escape(PROLOGUES_INCOMPLETE))
    assert fail_listed == host_vnodes(waiting["exec_vnode"], sister)
    assert_assignment(job, expected_prune(waiting["exec_vnode"], keep, [sister]), keep)


# Shipped strings (src/resmom/mom_comm.c): DEBUG3 lines of the primary, and the sister's PBSEVENT_JOB line.
SKIPPED_FAILED_MOM = "not sending request {request} to failed mom {host}"
LATE_PROLOGUE_ACK = "received IM_ALL_OK prologue hook from host {host}"
DELETE_RECEIVED = "DELETE_JOB received"
IM_POLL_JOB = 7  # src/include/job.h


@pytest.mark.spec("RJS-4", "RJS-5")
@pytest.mark.guards("RJS-5")
@pytest.mark.parametrize("tolerance", ["all", "job_start"])
@pytest.mark.usefixtures("primary_logs_debug3")
def test_late_prologue_ack_readmits_the_sister(pbs, cluster, nemesis, kit, tolerance: str) -> None:
    """A 2-cpu sister's execjob_prologue hook sleeps past $job_launch_delay, then accepts. The
    primary launches without its acknowledgement and counts the host as failed: its sister polls
    skip it ("not sending request 7 to failed mom <sister>"). The late acknowledgement ("received
    IM_ALL_OK prologue hook from host <sister>") adds the host back to the healthy list: the primary
    no longer skips it, and the job's deletion reaches it ("DELETE_JOB received" on the sister).
    Nothing prunes the job, so the sister stays in it throughout."""
    delay, sister = 8, kit.chunk_hosts[2]
    # Polls every second or two: the sister is skipped several times before its ack arrives.
    set_mom_options(
        pbs,
        cluster,
        kit.primary,
        {JOIN_ALARM: 20, LAUNCH_DELAY: delay, "$min_check_poll": 1, "$max_check_poll": 2},
    )
    sleeper = nemesis.reject_hook("execjob_prologue", (sister,), how="sleep", seconds=delay + 10)
    install(pbs, cluster, {"fb_pad": pad_hook(tolerance=tolerance)}, [sleeper])

    job_id = kit.submit()
    kit.mom_of(sister).expect(f"pbs-harness fault hook: sleep on {sister}", kit.since, timeout=60)
    wait_prerun_on(kit, job_id, sister)
    job_line = f"Job;{re.escape(job_id)};"
    incomplete = kit.mom.expect(f"{job_line}{PROLOGUES_INCOMPLETE}", kit.since, timeout=delay + 30)
    skipped = kit.mom.expect(
        job_line + SKIPPED_FAILED_MOM.format(request=IM_POLL_JOB, host=sister), incomplete.time, timeout=30
    )
    ack = kit.mom.expect(job_line + LATE_PROLOGUE_ACK.format(host=sister), kit.since, timeout=delay + 30)
    assert incomplete.time <= skipped.time <= ack.time, (incomplete.raw, skipped.raw, ack.raw)
    job = kit.started(job_id, timeout=30)
    assert sister in hosts_of(job["exec_vnode"]), job["exec_vnode"]

    # Re-admitted: after the ack no request to the sister is skipped, and the deletion reaches it.
    readmitted = ack.time + timedelta(seconds=1)  # log stamps have 1 s resolution
    deleted = datetime.now() - timedelta(seconds=1)
    assert pbs.jobs.delete(job_id, user=kit.user).ok
    kit.mom_of(sister).expect(job_line + DELETE_RECEIVED, deleted, timeout=30)
    pbs.jobs.wait(job_id, job_state="F", timeout=60)
    kit.mom.absent(job_line + SKIPPED_FAILED_MOM.format(request=r"\d+", host=sister), readmitted)
