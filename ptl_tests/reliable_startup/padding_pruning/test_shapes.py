"""Part A, job shapes pruned (PTL t11, t12, t16, t17, t20): a chunk with ncpus=0, mpiprocs and
ompthreads, place=scatter:excl, place=free over the multi-vnode host, a job array."""

from __future__ import annotations

import re

import pytest

from pbs_harness.pbs.evidence import pick
from pbs_harness.pbs.parsers import parse_select
from ptl_tests import jobscripts
from ptl_tests.hook_files import install_hooks
from ptl_tests.reliable_startup.jobs import START_TIMEOUT, report_job
from ptl_tests.reliable_startup.sister_faults import SisterFault, begin_reject, start_with_fault
from ptl_tests.reliable_startup_helpers import (
    ORIGINAL_SELECT,
    StartupKit,
    assert_assignment,
    chunks_of,
    expected_prune,
    hosts_of,
    pad_hook,
    prune_hook,
    select_chunks,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.reliable_startup, pytest.mark.needs_moms(6)]


# ---------------------------------------------------------------------------------------------
# Shapes (PTL t11, t12, t16, t17, t20)


def run_pruned(
    kit: StartupKit, nemesis, fault: SisterFault | None, *, keep: str | None = None, event="execjob_launch", **submit
):
    """Hooks (pad + prune), the fault, the job; returns (job id, running job, initial exec_vnode)."""
    hooks = {"pad": pad_hook(), "prune": prune_hook(event, keep=keep)}
    if fault is None:
        install_hooks(kit.pbs, kit.cluster, hooks)
    else:
        start_with_fault(kit, nemesis, fault, hooks)
    job_id = kit.submit(**submit)
    job = kit.started(job_id, timeout=START_TIMEOUT)
    initial = kit.start_records(job_id, "S")["S"].fields["exec_vnode"]
    if fault is not None:
        failed = kit.roles.sister(fault.sister)
        assert failed in hosts_of(initial), f"{failed} not in the initial exec_vnode {initial}"
    assert kit.pruning(job_id) == (initial, job["exec_vnode"])
    return job_id, job, initial


@pytest.mark.spec("RJS-2", "RJS-5", "RJS-8")
@pytest.mark.guards("RJS-2", "RJS-5", "RJS-8")
def test_chunk_with_zero_ncpus(kit, nemesis, short_alarms) -> None:
    """PTL t11: a chunk asking for memory only is padded, seen in vnode_list and pruned like any other."""
    select, failed = "ncpus=2:mem=2gb+ncpus=2:mem=2gb+ncpus=0:mem=1gb", kit.roles.sister(3)
    job_id, job, initial = run_pruned(kit, nemesis, begin_reject(3), select=select, script=None)
    zero_hosts = [c[0].host for c in chunks_of(initial) if sum(s.ncpus for s in c) == 0]
    assert len(zero_hosts) == 2, initial
    for host in hosts_of(initial):
        kit.mom.expect(f"launch: found vnode_list\\[{re.escape(host)}\\]", kit.since, 10)
    kit.mom.expect(f"launch: found vnode_list_fail\\[{re.escape(failed)}\\]", kit.since, 10)
    assert_assignment(job, expected_prune(initial, select, {failed}), select)
    s = kit.start_records(job_id, "s")["s"]
    assert s.fields["exec_vnode"] == job["exec_vnode"]


@pytest.mark.spec("RJS-2", "RJS-8")
@pytest.mark.guards("RJS-8")
def test_mpiprocs_and_ompthreads_survive_pruning(kit, nemesis, short_alarms, names) -> None:
    """PTL t12: the pruned job keeps mpiprocs/ompthreads; $PBS_NODEFILE lists each kept host mpiprocs times."""
    select = "+".join(f"ncpus={n}:mem={n}gb:mpiprocs={n}:ompthreads=1" for n in (2, 2, 1))
    _, job, initial = run_pruned(kit, nemesis, begin_reject(1), select=select, script=report_job(kit, "rs0", indexes=1))
    expected = expected_prune(initial, select, {kit.roles.sister(1)})
    assert_assignment(job, expected, select)
    assert int(job["Resource_List"]["mpiprocs"]) == 5
    assert [c.resources.get("mpiprocs") for c in parse_select(job["schedselect"])] == ["2", "2", "1"], job[
        "schedselect"
    ]
    assert [c.resources.get("ompthreads") for c in parse_select(job["schedselect"])] == ["1"] * 3
    mpiprocs = [2, 2, 1]
    want = [names[c[0].host] for c, n in zip(expected, mpiprocs, strict=True) for _ in range(n)]
    assert jobscripts.section(kit.report("rs0"), "nodefile") == want


@pytest.mark.spec("RJS-8")
@pytest.mark.guards("RJS-8")
def test_scatter_excl_keeps_exclusive_vnodes(kit, nemesis, short_alarms) -> None:
    """PTL t16: with place=scatter:excl the kept vnodes stay job-exclusive, the released are free."""
    fault, failed = SisterFault("begin-exception", 1, "begin-exception", "JOIN_JOB"), kit.roles.sister(1)
    job_id, job, initial = run_pruned(kit, nemesis, fault, place="scatter:excl")
    expected = expected_prune(initial, ORIGINAL_SELECT, {failed})
    assert_assignment(job, expected, ORIGINAL_SELECT)
    kept = [s.host for c in expected for s in c]
    released = [h for h in hosts_of(initial) if h not in kept and h != failed]
    kit.pbs.nodes.wait_state(kept, "job-exclusive", timeout=30)
    kit.pbs.nodes.wait_state(released, "free", timeout=30)
    assert kit.start_records(job_id, "s")["s"].fields["Resource_List.place"] == "scatter:excl"


@pytest.mark.spec("RJS-2", "RJS-8")
@pytest.mark.guards("RJS-2", "RJS-8")
def test_place_free_breaks_a_super_chunk(kit, nemesis, short_alarms) -> None:
    """PTL t17: with place=free a padded chunk spans two vnodes of the multi-vnode host; keep_select
    takes one cpu of it, so the kept chunk is a part of the super-chunk."""
    select = f"ncpus=1:host={kit.roles.primary}+ncpus=2:host={kit.roles.multi}"
    keep = "ncpus=1+ncpus=1"
    job_id, job, initial = run_pruned(kit, nemesis, None, keep=keep, select=select, place="free")
    assert [len(c) for c in chunks_of(initial)] == [1, 2, 2], initial  # super-chunks over the multi-vnode host
    expected = expected_prune(initial, keep)
    assert [s.vnode for s in expected[1]] == [pick.nth(chunks_of(initial), 1, f"a second chunk in {initial}")[0].vnode]
    assert_assignment(job, expected, keep)
    s = kit.start_records(job_id, "s")["s"]
    assert chunks_of(s.fields["exec_vnode"]) == expected


@pytest.mark.spec("RJS-2", "RJS-8")
@pytest.mark.guards("RJS-2", "RJS-8")
def test_job_array_pruned_per_subjob_in_prologue(kit, nemesis, short_alarms) -> None:
    """PTL t20: every subjob is padded, started on the failed sister too, and pruned by an
    execjob_prologue hook; each has its own 'S' and 's' record."""
    pbs = kit.pbs
    select, failed = "ncpus=1+ncpus=1", kit.roles.sister(2)
    hooks = {"pad": pad_hook(), "prolo": prune_hook("execjob_prologue")}
    start_with_fault(kit, nemesis, begin_reject(2), hooks)
    # One subjob at a time: when two subjobs were pruned in the same second, one of them stayed
    # in substate 41 (seen once; see docs/suites/reliable_startup.md).
    array_id = kit.submit(select=select, array="1-2", attributes={"max_run_subjobs": 1})
    pbs.jobs.wait(array_id, job_state="B", timeout=START_TIMEOUT)
    for index in (1, 2):
        sub = array_id.replace("[]", f"[{index}]")
        if index == 2:  # the first subjob leaves, the second one starts
            pbs.jobs.delete(array_id.replace("[]", "[1]"))
        job = kit.started(sub, timeout=START_TIMEOUT)
        recs = kit.start_records(sub)
        initial = recs["S"].fields["exec_vnode"]
        assert failed in hosts_of(initial), f"{sub}: {initial}"
        assert select_chunks(recs["S"].resource_list["select"]) == select_chunks("1:ncpus=1+2:ncpus=1")
        assert_assignment(job, expected_prune(initial, select, {failed}), select)
        assert recs["s"].fields["exec_vnode"] == job["exec_vnode"]
        assert kit.pruning(sub) == (initial, job["exec_vnode"])
        kit.mom.expect(f"prolo: job.exec_vnode={re.escape(job['exec_vnode'])}", kit.since, 10)
