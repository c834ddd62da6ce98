"""Part A, interface 8: release_nodes(keep_select) without failures (PTL t8, t14), with a keep_select
no chunk can serve (PTL t7, t15), and outside execjob_prologue and execjob_launch."""

from __future__ import annotations

import re

import pytest

from ptl_tests.hook_files import install_hooks
from ptl_tests.reliable_startup.jobs import START_TIMEOUT
from ptl_tests.reliable_startup_helpers import (
    COULD_NOT_SATISFY,
    HAVE,
    NEED,
    ORIGINAL_SELECT,
    PADDED_SELECT,
    PRUNED_TO,
    REJECTED_BY,
    assert_assignment,
    chunks_of,
    expected_prune,
    pad_hook,
    prune_hook,
    select_chunks,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.reliable_startup, pytest.mark.needs_moms(6)]


# ---------------------------------------------------------------------------------------------
# Interface 8: release_nodes(keep_select)

KEEP_PLUS_ONE = ORIGINAL_SELECT + "+ncpus=1:mem=1gb"


@pytest.mark.spec("RJS-2", "RJS-8", "RJS-case")
@pytest.mark.guards("RJS-2", "RJS-8", "RJS-case")
@pytest.mark.parametrize("keep", [None, KEEP_PLUS_ONE], ids=["keep-original-select", "keep-original-plus-one-chunk"])
def test_prune_without_failures(kit, short_alarms, keep) -> None:
    """PTL t8 (nothing fails: pruned back to the request) and t14 (keep_select with one chunk more)."""
    pbs = kit.pbs
    install_hooks(pbs, kit.cluster, {"pad": pad_hook(), "launch": prune_hook(keep=keep)})
    job_id = kit.submit()
    job = kit.started(job_id, timeout=START_TIMEOUT)
    initial = kit.start_records(job_id, "S")["S"].fields["exec_vnode"]
    want = keep or ORIGINAL_SELECT
    assert select_chunks(job["Resource_List"]["site"]) == select_chunks(ORIGINAL_SELECT)
    assert_assignment(job, expected_prune(initial, want), want)  # before the 's' record it leads to
    recs = kit.start_records(job_id)
    assert kit.pruning(job_id) == (initial, job["exec_vnode"])
    assert recs["s"].fields["exec_vnode"] == job["exec_vnode"]
    assert select_chunks(recs["s"].resource_list["select"]) == select_chunks(want)
    kit.mom.expect(f"launch: release_nodes\\(keep_select={re.escape(want)}\\) returned a job", kit.since, 10)
    kit.mom.absent("launch: found vnode_list_fail", kit.since)


@pytest.mark.spec("RJS-8")
@pytest.mark.guards("RJS-8")
@pytest.mark.parametrize("action", ["hold_rerun", "delete"])
def test_impossible_keep_select(kit, short_alarms, conformance, action) -> None:
    """PTL t7 (hold + rerun) and t15 (delete): no chunk of the job has 5 cpus."""
    pbs = kit.pbs
    keep = "ncpus=2:mem=2gb+ncpus=5:mem=3gb"
    install_hooks(pbs, kit.cluster, {"pad": pad_hook(), "launch": prune_hook(keep=keep, on_failure=action)})
    job_id = kit.submit()
    kit.mom.expect(f"Job;{job_id};{re.escape(NEED.format(keep=keep))}", kit.since, START_TIMEOUT)
    kit.mom.expect(f"Job;{job_id};{COULD_NOT_SATISFY} \\(ncpus=5 ssi=0 mem=3145728 ", kit.since, 10)
    have = kit.mom.expect(f"Job;{job_id};{re.escape(HAVE)}", kit.since, 10).message.split(HAVE, 1)[1]
    initial = kit.start_records(job_id, "S")["S"].fields["exec_vnode"]
    assert have == "", have  # shipped: nothing after the colon (see the difference below)
    conformance.difference(
        "RJS-8",
        spec_says="HAVE chunks from job's exec_vnode (<exec_vnode value>",
        openpbs_does="HAVE chunks from job's exec_vnode: (empty)",
        evidence=f"Job;{job_id};{HAVE}{have!r}; the job's exec_vnode was {initial}",
    )
    kit.mom.expect(re.escape(REJECTED_BY.format(event="execjob_launch", hook="launch")), kit.since, 10)
    kit.mom.expect(f"Job;{job_id};unsuccessful at LAUNCH", kit.since, 10)
    if action == "hold_rerun":
        job = pbs.jobs.wait(job_id, job_state="H", timeout=60)
        assert job["Hold_Types"] == "s"
        assert "exec_vnode" not in job
    else:
        pbs.jobs.wait_gone(job_id, timeout=60)
    assert not kit.accounting.of(job_id, "s", kit.since)
    pbs.nodes.wait_count("free", len(pbs.nodes.all()), timeout=60)


@pytest.mark.spec("RJS-8")
@pytest.mark.guards("RJS-8")
def test_release_nodes_outside_prologue_and_launch_returns_none(kit, short_alarms) -> None:
    pbs = kit.pbs
    begin = prune_hook("execjob_begin", keep=ORIGINAL_SELECT, on_failure=None, log_lists=False)
    install_hooks(pbs, kit.cluster, {"pad": pad_hook(), "begin": begin})
    job_id = kit.submit()
    job = kit.started(job_id, timeout=START_TIMEOUT)
    kit.mom.expect(f"begin: release_nodes\\(keep_select={re.escape(ORIGINAL_SELECT)}\\) returned None", kit.since, 20)
    assert select_chunks(job["schedselect"]) == select_chunks(PADDED_SELECT)
    assert len(chunks_of(job["exec_vnode"])) == 5
    kit.mom.absent(f"Job;{job_id};{PRUNED_TO}", kit.since)
    assert not kit.accounting.of(job_id, "s", kit.since)
