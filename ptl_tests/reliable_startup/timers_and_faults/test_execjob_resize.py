"""Part B, interface 9: execjob_resize: qmgr knows the event, the hook runs on the kept sisters after
pruning, and a rejecting one requeues the job."""

from __future__ import annotations

import re
import uuid

import pytest

from pbs_harness.common.waits import WaitTimeout
from pbs_harness.suite.release_features import has as has_feature
from ptl_tests.reliable_startup.sister_waits import install
from ptl_tests.reliable_startup_helpers import (
    JOIN_ALARM,
    LAUNCH_DELAY,
    REJECTED_BY,
    RESIZE_SET_REFUSED,
    UPDATED_NODES,
    hosts_of,
    met_lost_obit,
    pad_hook,
    probe_hook,
    prune_hook,
    set_mom_options,
)

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.reliable_startup,
    pytest.mark.needs_moms(5),
    pytest.mark.requires_feature("execjob_resize_hook_event"),
]


# ---------------------------------------------------------------------------------------------
# Interface 9: execjob_resize


# The shipped list of hook events in qmgr's error (src/lib/Libutil/hook.c, HOOKSTR_* order).
HOOK_EVENTS = (
    "queuejob,postqueuejob,modifyjob,modifyvnode,management,resvsub,modifyresv,movejob,jobobit,runjob,"
    "provision,periodic,resv_confirm,resv_begin,resv_end,execjob_begin,execjob_prologue,execjob_epilogue,"
    "execjob_preterm,execjob_end,exechost_periodic,execjob_launch,exechost_startup,execjob_attach,"
    "execjob_resize,execjob_abort,execjob_postsuspend,execjob_preresume"
)
# OpenPBS 22.05 lists no postqueuejob (23.06 added it) and its format string lacks the comma between
# resv_confirm and resv_begin (src/lib/Libutil/hook.c of v22.05.11: "%s,...,%s" "%s,..." runs them together).
HOOK_EVENTS_BEFORE_POSTQUEUEJOB = HOOK_EVENTS.replace("queuejob,postqueuejob,", "queuejob,").replace(
    "resv_confirm,resv_begin", "resv_confirmresv_begin"
)
SPEC_HOOK_EVENTS = (
    "queuejob,modifyjob,resvsub,movejob,runjob,provision,periodic,resv_end,execjob_begin,execjob_prologue,"
    "execjob_epilogue,execjob_preterm,execjob_end,exechost_periodic,execjob_launch,exechost_startup,"
    "execjob_attach,execjob_resize"
)


@pytest.mark.spec("RJS-9")
@pytest.mark.guards("RJS-9")
def test_qmgr_knows_the_execjob_resize_event(pbs, conformance, request) -> None:
    name = f"fb_rs_{uuid.uuid4().hex[:4]}"
    pbs.server.qmgr(f"create hook {name}")
    assert pbs.server.qmgr(f"set hook {name} event = execjob_resize").ok
    assert pbs.hooks.attributes()[name]["event"] == "execjob_resize"
    bad = pbs.server.qmgr(f"set hook {name} event = yaya")
    assert not bad.ok
    # Each release's exact list: which one this build ships is told by the postqueuejob probe.
    events = (
        HOOK_EVENTS if has_feature(pbs, "postqueuejob_hook_event", request.config) else HOOK_EVENTS_BEFORE_POSTQUEUEJOB
    )
    shipped = f'invalid argument (yaya) to event. Should be one or more of: {events} or "" for no event'
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
    job = kit.started(job_id, timeout=60)
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
