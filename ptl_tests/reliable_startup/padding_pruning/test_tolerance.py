"""Part A, interface 1: tolerate_node_failures, every way of setting it, and what its value decides
when a sister fails at the start (PTL t7: qalter of a running job takes effect on rerun)."""

from __future__ import annotations

import pytest

from pbs_harness.common.waits import wait_until
from ptl_tests.hook_files import install_hooks
from ptl_tests.reliable_startup.jobs import START_TIMEOUT
from ptl_tests.reliable_startup.sister_faults import begin_reject, start_with_fault
from ptl_tests.reliable_startup_helpers import (
    IGNORING,
    NOT_TOLERANT,
    ORIGINAL_SELECT,
    PADDED_SELECT,
    RUNNING,
    START_ERROR,
    assert_assignment,
    chunks_of,
    expected_prune,
    hosts_of,
    pad_hook,
    prune_hook,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.reliable_startup, pytest.mark.needs_moms(6)]


# ---------------------------------------------------------------------------------------------
# Interface 1: tolerate_node_failures, every way of setting it


@pytest.mark.spec("RJS-1")
@pytest.mark.parametrize("value", ["all", "job_start", "none"])
def test_tolerance_set_with_qsub_and_qalter(kit, value) -> None:
    job_id = kit.submit(attributes={"tolerate_node_failures": value}, args=["-h"])
    assert kit.pbs.jobs.status(job_id)["tolerate_node_failures"] == value
    # The owner may change it while the job is queued.
    other = {"all": "job_start", "job_start": "none", "none": "all"}[value]
    res = kit.pbs.jobs.alter(job_id, "-W", f"tolerate_node_failures={other}", user=kit.user)
    assert res.ok, res.stderr
    assert kit.pbs.jobs.status(job_id)["tolerate_node_failures"] == other


@pytest.mark.spec("RJS-1")
@pytest.mark.guards("RJS-1")
def test_tolerance_unset_by_default_and_bad_value_refused(kit) -> None:
    job_id = kit.submit(args=["-h"])
    assert "tolerate_node_failures" not in kit.pbs.jobs.status(job_id)  # unset means 'none'
    res = kit.pbs.jobs.host.run(
        kit.pbs.jobs.line("qsub", "-W", "tolerate_node_failures=yes", "--", "/bin/true"), user=kit.user
    )
    assert not res.ok
    assert res.stderr.startswith("qsub: illegal -W value\n"), res.stderr  # refused by qsub itself (ECL check)
    res = kit.pbs.jobs.alter(job_id, "-W", "tolerate_node_failures=sometimes", user=kit.user)
    assert not res.ok
    # qalter leaves the check to the server: msg_badatval (PBSE_BADATVAL) with the job id
    assert res.stderr.strip() == f"qalter: Illegal attribute or resource value {job_id}", res.stderr
    assert "tolerate_node_failures" not in kit.pbs.jobs.status(job_id)


@pytest.mark.spec("RJS-1")
def test_tolerance_from_default_qsub_arguments(kit) -> None:
    res = kit.pbs.server.set({"default_qsub_arguments": "-Wtolerate_node_failures=all"})
    assert res.ok, res.stderr
    job_id = kit.submit(args=["-h"])
    assert kit.pbs.jobs.status(job_id)["tolerate_node_failures"] == "all"
    # What the user gives on the command line wins over the default.
    own = kit.submit(attributes={"tolerate_node_failures": "job_start"}, args=["-h"])
    assert kit.pbs.jobs.status(own)["tolerate_node_failures"] == "job_start"


@pytest.mark.spec("RJS-1")
def test_tolerance_from_queuejob_hook(kit) -> None:
    install_hooks(kit.pbs, kit.cluster, {"qjob": pad_hook(increment=None, tolerance="all")})
    job_id = kit.submit(args=["-h"])
    assert kit.pbs.jobs.status(job_id)["tolerate_node_failures"] == "all"


# Above this run_count the server holds a job whose starts keep failing: 2 x PBS_MAX_HOPCOUNT (10),
# src/server/req_runjob.c check_failed_attempts().
MAX_FAILED_STARTS = 20


@pytest.mark.spec("RJS-1", "RJS-2")
@pytest.mark.guards("RJS-1")
@pytest.mark.parametrize("tolerance", ["none", "all"])
@pytest.mark.usefixtures("short_alarms")
def test_tolerance_value_decides_a_start_with_a_failed_sister(kit, nemesis, tolerance) -> None:
    """No padding, no pruning hook: one sister's execjob_begin rejects the job. `none`: the start
    fails, the server requeues the job after each attempt and holds it when they run out; `all`:
    the primary ignores the failed sister and the job runs with it still assigned (only a hook's
    release_nodes would take it out)."""
    pbs, failed = kit.pbs, kit.roles.sister(1)
    start_with_fault(kit, nemesis, begin_reject(1), {})
    select = "+".join(f"ncpus=1:host={h}" for h in (kit.roles.primary, failed, kit.roles.sister(2)))
    job_id = kit.submit(select=select, attributes={"tolerate_node_failures": tolerance})
    if tolerance == "none":
        # Held once its starts ran out, or (a regression) running with the failed sister: either ends the wait.
        job = wait_until(
            lambda: pbs.jobs.status(job_id),
            lambda j: j.get("job_state") == "H" or (j.get("job_state"), j.get("substate")) == ("R", RUNNING),
            timeout=START_TIMEOUT,
            describe=f"job {job_id} held (or running)",
        )
        assert job["job_state"] == "H", (
            f"a job that tolerates nothing ran with a failed sister: {job.get('exec_vnode')}"
        )
        assert (job["Hold_Types"], job["run_count"]) == ("s", MAX_FAILED_STARTS + 1)
        assert job["comment"] == "job held, too many failed attempts to run"
        assert "exec_vnode" not in job
        # The failed sister's error ends each start (seen naming it by address:port, not by name).
        any_host = START_ERROR.format(host=r"\S+", what="JOIN_JOB")
        kit.mom.expect(f"Job;{job_id};{any_host}", kit.since, 10)
        kit.server_log.expect(f"Job;{job_id};Job requeued, execution node  down", kit.since, 10)
        kit.mom.absent(f"Job;{job_id};ignoring error from", kit.since)
        assert "offline" not in pbs.nodes.status(failed)["state"]  # not tolerant: nobody offlines it
    else:
        job = kit.started(job_id, timeout=START_TIMEOUT)
        assert job["run_count"] == 1
        assert failed in hosts_of(job["exec_vnode"]), job["exec_vnode"]  # ignored, not pruned
        kit.mom.expect(f"Job;{job_id};{START_ERROR.format(host=failed, what='JOIN_JOB')}", kit.since, 10)
        kit.mom.expect(f"Job;{job_id};{IGNORING.format(host=failed)}", kit.since, 10)


@pytest.mark.spec("RJS-1", "RJS-2", "RJS-8")
@pytest.mark.guards("RJS-1", "RJS-2", "RJS-8")
def test_qalter_of_running_job_takes_effect_on_rerun(kit, short_alarms) -> None:
    """PTL t7 (last part): a non-tolerant job is not pruned ("no nodes released ..."); qalter
    while it runs changes nothing until the job is rerun, which is then pruned."""
    pbs = kit.pbs
    install_hooks(pbs, kit.cluster, {"launch": prune_hook(keep=ORIGINAL_SELECT, on_failure=None)})
    job_id = kit.submit(select=PADDED_SELECT)
    job = kit.started(job_id, timeout=START_TIMEOUT)
    kit.mom.expect(NOT_TOLERANT.format(job=job_id), kit.since, timeout=30)
    assert len(chunks_of(job["exec_vnode"])) == 5
    first = job["exec_vnode"]

    res = pbs.jobs.alter(job_id, "-W", "tolerate_node_failures=job_start", user=kit.user)
    assert res.ok, res.stderr
    job = pbs.jobs.status(job_id)
    assert job["tolerate_node_failures"] == "job_start"
    assert job["exec_vnode"] == first  # consulted only at the next start
    assert not kit.accounting.of(job_id, "s", kit.since)

    res = pbs.jobs.rerun(job_id)
    assert res.ok, res.stderr
    job = wait_until(
        lambda: pbs.jobs.status(job_id),
        lambda j: j.get("job_state") == "R" and j.get("substate") == RUNNING and int(j.get("run_count", 0)) >= 1,
        timeout=START_TIMEOUT,
        describe=f"job {job_id} running again after qrerun",
    )
    second_start = [r for r in kit.accounting.of(job_id, "S", kit.since)]
    assert len(second_start) == 2
    initial = second_start[1].fields["exec_vnode"]
    assert_assignment(job, expected_prune(initial, ORIGINAL_SELECT), ORIGINAL_SELECT)
    assert kit.pruning(job_id) == (initial, job["exec_vnode"])
    assert kit.start_records(job_id, "s")["s"].fields["exec_vnode"] == job["exec_vnode"]
