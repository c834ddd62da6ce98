"""Reliable job startup, part B: sister failures, the startup timers, tolerance after start
(spec: reliable-job-startup.txt, interfaces 1, 3, 4, 5, 6, 9).

Every job here is the suite's standard job (reliable_startup_helpers): the queuejob hook pads
ORIGINAL_SELECT to five chunks (2, 2, 2, 1, 1 cpus) and makes it tolerant; the launch hook logs
vnode_list / vnode_list_fail and prunes back with release_nodes(keep_select=<site>). Which host
takes which chunk (the primary, i.e. the server host, then four sisters) is predicted from the
server's vnode order (`chunk_hosts`), and a test fails a sister by its chunk role, e.g. "the second
2-cpu one".

Failures are real and happen AFTER the sister was assigned: a hook (nemesis.reject_hook) rejects,
raises or sleeps on it; a sister whose hook sleeps is then SIGKILLed, SIGSTOPped or its whole host
crashed. Each test asserts that the failed sister was in the job's initial exec_vnode (read from
the server while the job waits in substate 41, or from the 'S' record), so tolerance was exercised.

Timer windows are measured between the primary mom's own log lines (1 s stamps, so +-1 s): the
start is a marker hook's "started" line on the primary, the end the line the timer produces.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta

import pytest

from pbs_harness import baseline, defect_retry
from pbs_harness.evidence.logs import mom_log, server_log
from pbs_harness.pbs.parsers import size_kb, vnodes_of
from pbs_harness.waits import WaitTimeout, wait_until
from ptl_tests.hook_files import install_hooks
from ptl_tests.reliable_startup_helpers import (
    BADSTATE,
    IGNORING,
    JOIN_ALARM,
    JOIN_ALARM_EXCEEDED,
    JOIN_ALARM_UPDATED,
    KILLING_JOB,
    LAUNCH_DELAY,
    LAUNCH_DELAY_UPDATED,
    LAUNCH_SET_REFUSED,
    LAUNCH_SET_REFUSED_OLD,
    PBSEVENT_SYSTEM,
    PRERUN,
    PROLOGUES_INCOMPLETE,
    REJECTED_BY,
    RESIZE_SET_REFUSED,
    RUNNING,
    START_ERROR,
    UPDATED_NODES,
    Roles,
    StartupKit,
    assert_assignment,
    chunks_of,
    expected_prune,
    hosts_of,
    launch_sets_hook,
    met_empty_fail_list,
    met_lost_obit,
    pad_hook,
    probe_hook,
    prune_hook,
    seconds_between,
    set_mom_options,
    suite_roles,
)

PBSEVENT_ADMIN, PBSEVENT_DEBUG2 = 0x0004, 0x0100  # src/include/log.h

pytestmark = [pytest.mark.acceptance, pytest.mark.reliable_startup, pytest.mark.needs_moms(5)]

# How late the primary mom may act on an expired timer, beyond the timer itself: its main loop
# checks the join alarm once per iteration (it sleeps until the next task, a few seconds at most),
# the launch-delay loop counts 1 s pipe reads; plus 1 s for the log stamps' resolution.
JOIN_SLACK = 5
# How early the join alarm may expire, measured from the primary's execjob_begin marker: the alarm
# starts from the mom's main-loop clock (time_now), taken before its begin hooks ran (each hook is
# a process, up to a second), plus 1 s for the stamps' resolution; seen: 12 s for 13 with 2 hooks.
JOIN_EARLY = 2
LAUNCH_SLACK = 3
# How early the launch may come, measured from the primary's execjob_prologue marker: the delay runs
# from before that hook's process logged its marker (as for JOIN_EARLY); seen: 7 s for 8 with four
# clusters on two cores.
LAUNCH_EARLY = 1


PADDED_CHUNKS = ((2, 2 * 1024**2), (2, 2 * 1024**2), (2, 2 * 1024**2), (1, 1024**2), (1, 1024**2))  # ncpus, mem kb


def predicted_hosts(nodes: dict[str, dict]) -> list[str]:
    """Where the scheduler puts the padded standard job: each chunk, in order, on the first host
    (in the server's vnode order) not used yet whose free vnode has the ncpus and mem left."""
    hosts: list[str] = []
    for ncpus, mem_kb in PADDED_CHUNKS:
        for node in nodes.values():
            avail, used = node.get("resources_available", {}), node.get("resources_assigned", {})
            host = avail.get("host")
            free_cpus = int(avail.get("ncpus", 0)) - int(used.get("ncpus", 0))
            free_mem = size_kb(avail.get("mem", 0)) - size_kb(used.get("mem", 0))
            if node.get("state") == "free" and host not in hosts and free_cpus >= ncpus and free_mem >= mem_kb:
                hosts.append(host)
                break
    return hosts


@pytest.fixture(scope="module")
def roles(topology) -> Roles:
    """The primary (server host) and sisters 1..4 (plain 2-cpu hosts); no multi-vnode host needed."""
    return suite_roles(topology, multi_vnode=False)


@pytest.fixture(scope="module")
def chunk_hosts(pbs, roles) -> list[str]:
    """The hosts of the padded standard job's five chunks, primary first (the primary, then
    sisters 1..4 on the deployed cluster). A vnode showing assigned ncpus without any job (left
    by an earlier suite, seen after a server restart following a node release) is repaired with a
    server restart, which recomputes the assignments from the running jobs."""
    # The baseline restore repairs these after each test; this catches one left before the session.
    if baseline.phantom_assignments(pbs):
        pbs.server.restart()
    phantoms = baseline.phantom_assignments(pbs)
    assert not phantoms, f"vnodes with assigned resources but no job: {phantoms}"
    nodes = pbs.nodes.all()
    hosts = predicted_hosts(nodes)
    assert len(hosts) == len(PADDED_CHUNKS), f"the padded standard job does not fit: {hosts}"
    assert hosts[0] == roles.primary, hosts
    return hosts


@pytest.fixture
def kit(pbs, cluster, roles, chunk_hosts):
    """The suite's StartupKit, plus `chunk_hosts`: index 1, 2 are the 2-cpu sisters, 3, 4 the 1-cpu ones."""
    k = StartupKit(pbs, cluster, roles)
    k.chunk_hosts = chunk_hosts
    yield k
    k.cleanup()


def install(pbs, cluster, hooks, faults=()) -> None:
    """Create the hooks, each name with a fresh suffix (a deleted hook stays "pending delete" on
    the server until every mom acknowledged it, and a sister busy in a sleeping hook acknowledges
    late), then wait until every mom holds them, their configs and the nemesis fault hooks."""
    token = uuid.uuid4().hex[:4]
    install_hooks(pbs, cluster, {f"{name}_{token}": hook for name, hook in hooks.items()}, faults)


def host_vnodes(exec_vnode: str, *hosts: str) -> list[str]:
    """The distinct vnodes of an exec_vnode on the given hosts, sorted (as `listed` returns them)."""
    return sorted({v for host in hosts for v in vnodes_of(exec_vnode, host)})


def listed(kit: StartupKit, tag: str, what: str) -> list[str]:
    """The vnodes the suite hook `tag` logged on the primary as found in `what` (vnode_list or
    vnode_list_fail) during this test (hook log lines carry no job id; a test runs one job)."""
    lines = kit.mom.matching(rf"{tag}: found {what}\[", kit.since)
    return sorted({ln.message.split(f"found {what}[", 1)[1].rstrip("]") for ln in lines})


def wait_prerun_on(kit: StartupKit, job_id: str, host: str) -> dict:
    """The job as the server shows it while the primary waits: R, substate 41, `host` assigned."""
    job = kit.pbs.jobs.wait(job_id, job_state="R", substate=PRERUN, timeout=30)
    assert host in hosts_of(job["exec_vnode"]), f"{host} not assigned to {job_id}: {job['exec_vnode']}"
    return job


def marker(kit: StartupKit, tag: str, event: str, host: str | None = None, timeout: float = 60):
    """The "<tag> <event> on <host>: started" line of a probe hook in that host's mom log (the
    primary's by default)."""
    host = host or kit.primary
    return kit.mom_of(host).expect(f"{tag} {event} on {host}: started", kit.since, timeout)


# ---------------------------------------------------------------------------------------------
# Interfaces 3 and 4: the options are logged when the mom reads its config


@pytest.mark.spec("RJS-3", "RJS-4")
@pytest.mark.parametrize("read_at", ["hup", "mom start"])
def test_timer_options_are_logged_when_the_mom_reads_its_config(pbs, cluster, nemesis, roles, read_at: str) -> None:
    host = roles.sister(1)  # any mom logs them; a sister's restart disturbs nothing else
    since = set_mom_options(pbs, cluster, host, {JOIN_ALARM: 11, LAUNCH_DELAY: 13})
    if read_at == "mom start":
        fault = nemesis.kill_mom(host)
        pbs.nodes.wait_state([host], "down", timeout=30, exact=False)
        since = datetime.now() - timedelta(seconds=1)
        nemesis.heal(fault)  # starts pbs_mom again
        pbs.nodes.wait_state([host], "free", timeout=60)
    mom = mom_log(cluster, host)
    for name, value in (("sister_join_job_alarm", "11"), ("job_launch_delay", "13")):
        line = mom.expect(f";{name};{value}$", since, timeout=30)
        # PBSEVENT_SYSTEM, as the spec says; the "object" field is the option's name.
        assert line.event & PBSEVENT_SYSTEM, line.raw
        assert (line.obj, line.message) == (name, value), line.raw


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
    exceeded = kit.mom.expect(f"Job;{job_id};{JOIN_ALARM_EXCEEDED.format(secs=alarm)}", kit.since, timeout=alarm + 30)
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

    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=60)
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
    job despite the rerun (a known intermittent defect), the test is an xfail showing the lines."""
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
            # (pbs_harness.defect_retry), so the behaviour still gets a verdict.
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

    exceeded = kit.mom.expect(f"Job;{job_id};{JOIN_ALARM_EXCEEDED.format(secs=alarm)}", rerun_at, timeout=alarm + 60)
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


# ---------------------------------------------------------------------------------------------
# Interface 4: prologue acknowledgements and $job_launch_delay


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
    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=90)
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
@pytest.mark.parametrize("fault", ["mom killed", "radio silent"])
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
    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=60)
    keep = job["Resource_List"]["site"]
    assert_assignment(job, expected_prune(waiting["exec_vnode"], keep, [sister]), keep)
    fail_listed = listed(kit, "launch", "vnode_list_fail")
    if not fail_listed:
        met_empty_fail_list(kit, request, job_id, sister, knew=re.escape(PROLOGUES_INCOMPLETE))
    assert fail_listed == host_vnodes(waiting["exec_vnode"], sister)


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
    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=30)
    assert sister in hosts_of(job["exec_vnode"]), job["exec_vnode"]

    # Re-admitted: after the ack no request to the sister is skipped, and the deletion reaches it.
    readmitted = ack.time + timedelta(seconds=1)  # log stamps have 1 s resolution
    deleted = datetime.now() - timedelta(seconds=1)
    assert pbs.jobs.delete(job_id, user=kit.user).ok
    kit.mom_of(sister).expect(job_line + DELETE_RECEIVED, deleted, timeout=30)
    pbs.jobs.wait(job_id, job_state="F", timeout=60)
    kit.mom.absent(job_line + SKIPPED_FAILED_MOM.format(request=r"\d+", host=sister), readmitted)


# ---------------------------------------------------------------------------------------------
# Interfaces 3 and 4: defaults from the enabled hooks' alarms (real time: about 30 s each)


@pytest.fixture
def primary_timers_reset(pbs, cluster, roles):
    """The primary mom recomputes its default timers only when a hook file arrives and never drops
    back when the hooks are deleted; a HUP resets them to 30. HUP it after the test (the baseline
    restore HUPs only a changed config), so later tests find the defaults of a hook-less mom."""
    yield
    pbs.mom_config.hup(cluster.hosts[roles.primary])


@pytest.mark.spec("RJS-3", "RJS-4", "RJS-1")
@pytest.mark.guards("RJS-3", "RJS-4")
@pytest.mark.usefixtures("primary_timers_reset")
def test_default_timers_are_the_sums_of_enabled_hook_alarms(pbs, cluster, nemesis, kit) -> None:
    """No $sister_join_job_alarm / $job_launch_delay in the config: two execjob_begin hooks with
    alarms 6 and 7 make the join alarm 13, two execjob_prologue hooks with alarms 5 and 6 make the
    launch delay 11 (PTL t3). The first 2-cpu sister is SIGSTOPped before the job (it never joins),
    the second is SIGSTOPped while its prologue hook sleeps (it never acknowledges)."""
    join_silent, prologue_silent = kit.chunk_hosts[1], kit.chunk_hosts[2]
    begin_alarms, prologue_alarms = (6, 7), (5, 6)
    hooks = {f"fb_b{i}": probe_hook(f"fb{i}", "execjob_begin", alarm=a) for i, a in enumerate(begin_alarms)}
    hooks |= {
        f"fb_p{i}": probe_hook(f"fb{i}", "execjob_prologue", alarm=a, sleep_on={prologue_silent: 3})
        for i, a in enumerate(prologue_alarms)
    }
    hooks["fb_pad"] = pad_hook()
    install(pbs, cluster, hooks)
    join_alarm, launch_delay = sum(begin_alarms), sum(prologue_alarms)
    kit.mom.expect(JOIN_ALARM_UPDATED.format(secs=join_alarm), kit.since, timeout=30)
    kit.mom.expect(LAUNCH_DELAY_UPDATED.format(secs=launch_delay), kit.since, timeout=30)
    nemesis.stop_mom(join_silent)

    job_id = kit.submit()
    kit.mom_of(prologue_silent).expect(f"fb0 prologue on {prologue_silent}: sleeping", kit.since, timeout=60)
    waiting = wait_prerun_on(kit, job_id, prologue_silent)
    assert join_silent in hosts_of(waiting["exec_vnode"]), waiting["exec_vnode"]
    nemesis.stop_mom(prologue_silent)

    begun = marker(kit, "fb0", "begin")
    exceeded = kit.mom.expect(f"Job;{job_id};{JOIN_ALARM_EXCEEDED.format(secs=join_alarm)}", kit.since, timeout=60)
    waited = seconds_between(begun.time, exceeded.time)
    assert join_alarm - JOIN_EARLY <= waited <= join_alarm + JOIN_SLACK, (
        f"join wait {waited}s, default alarm {join_alarm}s"
    )
    prologue = marker(kit, "fb0", "prologue")
    incomplete = kit.mom.expect(f"Job;{job_id};{PROLOGUES_INCOMPLETE}", kit.since, timeout=60)
    waited = seconds_between(prologue.time, incomplete.time)
    assert launch_delay - LAUNCH_EARLY <= waited <= launch_delay + LAUNCH_SLACK, (
        f"launch wait {waited}s, default {launch_delay}s"
    )
    pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=30)


@pytest.mark.spec("RJS-3", "RJS-1")
@pytest.mark.guards("RJS-3")
@pytest.mark.parametrize("begin_hooks", ["none", "alarms 6+7, then HUP"])
@pytest.mark.usefixtures("primary_timers_reset")
def test_default_join_alarm_is_30(pbs, nemesis, kit, conformance, begin_hooks: str) -> None:
    """With no enabled execjob_begin hook the join alarm is 30 s. A HUP also brings it back to 30
    although enabled begin hooks' alarms add up to 13: the mom sums them only when a hook file
    arrives (and at start), while a HUP re-reads the config and falls back to 30."""
    silent, default = kit.chunk_hosts[1], 30
    hooks = {"fb_pad": pad_hook()}
    if begin_hooks != "none":
        hooks |= {f"fb_b{a}": probe_hook("fb", "execjob_begin", alarm=a) for a in (6, 7)}
    install(pbs, kit.cluster, hooks)
    if begin_hooks != "none":
        kit.mom.expect(JOIN_ALARM_UPDATED.format(secs=13), kit.since, timeout=30)
    pbs.mom_config.hup(kit.cluster.hosts[kit.primary])  # also clears a sum an earlier test's hooks left behind
    kit.mom.expect(";pbs_mom;n/a;process_hup;reset$", kit.since, timeout=30)
    nemesis.stop_mom(silent)

    job_id = kit.submit()
    waiting = wait_prerun_on(kit, job_id, silent)
    run = kit.server_log.expect(f"Job;{job_id};Job Run at request of", kit.since, timeout=10)
    exceeded = kit.mom.expect(f"Job;{job_id};{JOIN_ALARM_EXCEEDED.format(secs=default)}", kit.since, timeout=60)
    waited = seconds_between(run.time, exceeded.time)
    assert default <= waited <= default + JOIN_SLACK, f"join wait {waited}s"
    assert silent in hosts_of(waiting["exec_vnode"])
    pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=30)
    if begin_hooks != "none":
        conformance.difference(
            "RJS-3",
            spec_says="default $sister_join_job_alarm = the sum of the enabled execjob_begin hooks' alarms",
            openpbs_does=(
                "the sum is taken at mom start and when a hook file arrives; after a kill -HUP the mom uses 30"
                " although enabled execjob_begin hooks with alarms 6 and 7 exist (sum 13)"
            ),
            evidence=exceeded.raw,
        )


# ---------------------------------------------------------------------------------------------
# Interface 1: tolerance after the job started (PTL t9, t10)

DEFAULT_MOM_LOG_MASK = "0x3ff"  # log_event_lvl_priv in src/lib/Liblog/log_event.c (no DEBUG3)


@pytest.fixture
def primary_logs_debug3(pbs, cluster, roles):
    """$logevent 0x7ff on the primary: the tolerance decisions after start are DEBUG3 lines. A HUP
    does not reset the mask, so the finalizer sets the compiled-in default back explicitly."""
    host = cluster.hosts[roles.primary]
    pbs.mom_config.set(host, "$logevent", "0x7ff")
    yield
    pbs.mom_config.set(host, "$logevent", DEFAULT_MOM_LOG_MASK)


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
    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=60)
    kit.pruning(job_id)
    sister = hosts_of(job["exec_vnode"])[1]
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
    at = re.search(r"Execution_Time=(.*) run_count=", line.message)[1]
    if rerun:
        job = pbs.jobs.wait(job_id, job_state="W", substate=30, timeout=60)
        server_log(cluster).expect(f"Job;{job_id};hook rejected request, requiring job to be rerun", kit.since, 10)
    else:
        job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=60)
        assert job["resources_used"]["cput"] == "00:10:00", job["resources_used"]
    assert (job["Execution_Time"], job["run_count"]) == (at, 5), job


# ---------------------------------------------------------------------------------------------
# Interface 9: execjob_resize


# The shipped list of hook events in qmgr's error (src/lib/Libutil/hook.c, HOOKSTR_* order).
HOOK_EVENTS = (
    "queuejob,postqueuejob,modifyjob,modifyvnode,management,resvsub,modifyresv,movejob,jobobit,runjob,"
    "provision,periodic,resv_confirm,resv_begin,resv_end,execjob_begin,execjob_prologue,execjob_epilogue,"
    "execjob_preterm,execjob_end,exechost_periodic,execjob_launch,exechost_startup,execjob_attach,"
    "execjob_resize,execjob_abort,execjob_postsuspend,execjob_preresume"
)
SPEC_HOOK_EVENTS = (
    "queuejob,modifyjob,resvsub,movejob,runjob,provision,periodic,resv_end,execjob_begin,execjob_prologue,"
    "execjob_epilogue,execjob_preterm,execjob_end,exechost_periodic,execjob_launch,exechost_startup,"
    "execjob_attach,execjob_resize"
)


@pytest.mark.spec("RJS-9")
@pytest.mark.guards("RJS-9")
def test_qmgr_knows_the_execjob_resize_event(pbs, conformance) -> None:
    name = f"fb_rs_{uuid.uuid4().hex[:4]}"
    pbs.server.qmgr(f"create hook {name}")
    assert pbs.server.qmgr(f"set hook {name} event = execjob_resize").ok
    assert pbs.hooks.attributes()[name]["event"] == "execjob_resize"
    bad = pbs.server.qmgr(f"set hook {name} event = yaya")
    assert not bad.ok
    shipped = f'invalid argument (yaya) to event. Should be one or more of: {HOOK_EVENTS} or "" for no event'
    assert shipped in bad.stderr, bad.stderr
    conformance.difference(
        "RJS-9",
        spec_says=f'invalid argument (yaya) to event. Should be one or more of: {SPEC_HOOK_EVENTS} or "" for no event',
        openpbs_does=shipped + " (more events, in another order; execjob_resize is listed)",
        evidence=bad.stderr.strip(),
    )


@pytest.mark.spec("RJS-9", "RJS-8")
@pytest.mark.guards("RJS-9", "RJS-8")
def test_execjob_resize_runs_on_kept_sisters_after_pruning(pbs, cluster, kit) -> None:
    """After the launch hook prunes the job, the primary sends the new assignment to the kept
    sisters: each runs the execjob_resize hook (where nothing is settable) and logs that it
    updated its nodes info; released sisters do not resize."""
    resize = probe_hook("fb", "execjob_resize", try_set=["job"])
    set_mom_options(pbs, cluster, kit.primary, {JOIN_ALARM: 20, LAUNCH_DELAY: 20})
    install(pbs, cluster, {"fb_pad": pad_hook(), "fb_launch": prune_hook(), "fb_resize": resize})
    job_id = kit.submit()
    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=60)
    initial, _ = kit.pruning(job_id)
    kept = hosts_of(job["exec_vnode"])[1:]
    released = sorted(set(hosts_of(initial)) - set(hosts_of(job["exec_vnode"])))
    assert kept
    assert released
    for host in kept:
        log = kit.mom_of(host)
        log.expect(f"fb resize on {host}: started", kit.since, timeout=30)
        line = log.expect(f"fb resize on {host}: set job attribute: ", kit.since, timeout=10)
        assert line.message.endswith(f"AssertionError: {RESIZE_SET_REFUSED}"), line.raw
        log.expect(f"Job;{job_id};{UPDATED_NODES}", kit.since, timeout=30)
    for host in released:
        kit.mom_of(host).absent(f"fb resize on {host}", kit.since)


@pytest.mark.spec("RJS-9", "RJS-8")
@pytest.mark.guards("RJS-9", "RJS-8")
def test_execjob_resize_reject_on_a_kept_sister_requeues_the_job(pbs, cluster, nemesis, kit, request) -> None:
    """An execjob_resize hook that rejects on the sisters: after the launch hook prunes the job,
    each kept sister rejects the update, the primary logs that not all job updates completed, and
    the server discards the job and requeues it; every start ends the same way, so the job is run
    again until the server holds it."""
    set_mom_options(pbs, cluster, kit.primary, {JOIN_ALARM: 20, LAUNCH_DELAY: 20})
    reject = nemesis.reject_hook("execjob_resize", tuple(kit.chunk_hosts[1:]), how="reject")
    install(pbs, cluster, {"fb_pad": pad_hook(), "fb_launch": prune_hook()}, [reject])
    job_id = kit.submit()
    _initial, pruned = kit.pruning(job_id)
    kept = hosts_of(pruned)[1:]
    assert kept, pruned
    for host in kept:
        log = kit.mom_of(host)
        log.expect(re.escape(REJECTED_BY.format(event="execjob_resize", hook=reject.name)), kit.since, timeout=30)
        log.expect(
            f"Job;{job_id};execjob_resize hook rejected request: pbs-harness fault: rejected on {host}", kit.since, 10
        )
    kit.mom.expect(f"Job;{job_id};not all job updates to sister moms completed", kit.since, timeout=30)
    try:
        kit.server_log.expect(f"Job;{job_id};Discard running job, A sister Mom failed to delete job", kit.since, 30)
    except WaitTimeout:
        met_lost_obit(kit, request, job_id)
        raise
    job = pbs.jobs.wait(job_id, job_state="H", timeout=180)
    assert (job["Hold_Types"], job["comment"]) == ("s", "job held, too many failed attempts to run"), job
    assert job["run_count"] > 1


# ---------------------------------------------------------------------------------------------
# A sister host crash (last in the file: see the primary mom restart at its end)


@pytest.mark.spec("RJS-3", "RJS-1", "RJS-5", "RJS-8")
@pytest.mark.guards("RJS-1", "RJS-8")
def test_sister_host_crashing_while_joining_is_pruned(pbs, cluster, nemesis, kit) -> None:
    """A 2-cpu sister's execjob_begin hook is sleeping (its join is not acknowledged yet) when the
    whole host crashes: the job still starts, pruned without that sister."""
    alarm, sister = 10, kit.chunk_hosts[2]
    set_mom_options(pbs, cluster, kit.primary, {JOIN_ALARM: alarm, LAUNCH_DELAY: 20})
    sleeper = nemesis.reject_hook("execjob_begin", (sister,), how="sleep", seconds=alarm + 20)
    install(pbs, cluster, {"fb_pad": pad_hook(), "fb_launch": prune_hook()}, [sleeper])

    job_id = kit.submit()
    kit.mom_of(sister).expect(f"pbs-harness fault hook: sleep on {sister}", kit.since, timeout=60)
    waiting = wait_prerun_on(kit, job_id, sister)
    nemesis.crash_host(sister)

    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=alarm + 30)
    keep = job["Resource_List"]["site"]
    assert_assignment(job, expected_prune(waiting["exec_vnode"], keep, [sister]), keep)
    assert kit.pruning(job_id)[0] == waiting["exec_vnode"]
    # After a sister host crash the primary mom was seen to stop launching later tolerant jobs
    # (they stayed in R/41); start the next test with a fresh primary mom.
    pbs.jobs.delete(job_id, force=True)
    pbs.jobs.wait_gone(job_id, timeout=60)
    restart = nemesis.kill_mom(kit.primary)
    pbs.nodes.wait_state([kit.primary], "down", timeout=30, exact=False)
    nemesis.heal(restart)
    pbs.nodes.wait_state([kit.primary], "free", timeout=60)
