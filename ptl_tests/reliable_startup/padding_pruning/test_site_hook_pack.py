"""Part A, the site hook pack (hooks/reliable_startup.py deployed as rjs_pad + rjs_prune) end to end;
the `site_hooks` fixture (conftest.py) enables the pair and restores the deployed configs."""

from __future__ import annotations

import re

import pytest

from ptl_tests.hook_files import wait_mom_hooks
from ptl_tests.reliable_startup.jobs import START_TIMEOUT
from ptl_tests.reliable_startup.sister_faults import JOIN_TIMEOUT
from ptl_tests.reliable_startup_helpers import (
    NEED,
    ORIGINAL_SELECT,
    PADDED_SELECT,
    assert_assignment,
    expected_prune,
    hosts_of,
    select_chunks,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.reliable_startup, pytest.mark.needs_moms(6)]


# ---------------------------------------------------------------------------------------------
# The site hook pack (hooks/reliable_startup.py as rjs_pad + rjs_prune)


@pytest.mark.spec("RJS-case", "RJS-1", "RJS-2", "RJS-7", "RJS-8")
@pytest.mark.guards("RJS-case", "RJS-1", "RJS-2", "RJS-7", "RJS-8")
def test_site_hook_pack_prunes_a_silent_sister(kit, nemesis, short_alarms, site_hooks, conformance) -> None:
    """The deployed rjs_pad/rjs_prune pair, end to end. rjs_prune keeps release_nodes()'s result
    referenced (hooks/reliable_startup.md): before it did, pbs_python died as the hook ended."""
    pbs, silent = kit.pbs, kit.roles.sister(2)
    wait_mom_hooks(pbs, kit.cluster)
    nemesis.stop_mom(silent)
    job_id = kit.submit()
    job = kit.started(job_id, timeout=START_TIMEOUT)
    assert job["tolerate_node_failures"] == "job_start"
    assert select_chunks(job["Resource_List"]["site"]) == select_chunks(ORIGINAL_SELECT)
    recs = kit.start_records(job_id)
    initial = recs["S"].fields["exec_vnode"]
    assert silent in hosts_of(initial), initial
    assert select_chunks(recs["S"].resource_list["select"]) == select_chunks(PADDED_SELECT)
    kit.mom.expect(f"Job;{job_id};{JOIN_TIMEOUT}", kit.since, 10)
    assert_assignment(job, expected_prune(initial, ORIGINAL_SELECT, {silent}), ORIGINAL_SELECT)
    assert kit.pruning(job_id) == (initial, job["exec_vnode"])
    assert recs["s"].fields["exec_vnode"] == job["exec_vnode"]
    kit.mom.expect(f"reliable_startup: pruned to exec_vnode={re.escape(job['exec_vnode'])}", kit.since, 10)
    kit.server_log.expect("reliable_startup: padded select ", kit.since, 10)
    kit.mom.absent("resulted in nonzero exit status", kit.since)
    conformance.difference(
        "RJS-8",
        spec_says="release_nodes() returns the modified job object (a hook may use or drop it)",
        openpbs_does="returns the event's job without a new reference "
        "(pbs_python_svr_internal.c `py_return = py_job;`); a hook that drops it (e.g. a local of a function) "
        "makes pbs_python die by a signal: mom logs 'run_hook, execv of /opt/pbs/bin/pbs_python resulted in "
        "nonzero exit status=-4' and 'Internal server error encountered. Skipping hook rjs_prune', and the job "
        "runs unpruned",
        evidence="seen with rjs_prune before it kept the result (2 runs of 2); "
        "this run, with the reference kept, pruned",
    )


@pytest.mark.spec("RJS-case", "RJS-8")
@pytest.mark.guards("RJS-8")
def test_site_hook_pack_deletes_when_pruning_fails(kit, nemesis, short_alarms, site_hooks) -> None:
    """Configured on_prune_failure=delete: both 2-cpu sisters are silent, so the padded job cannot
    be pruned back to two 2-cpu chunks; the hook deletes it."""
    pbs = kit.pbs
    prune_config = '{"on_prune_failure": "delete"}'
    site_hooks("rjs_prune", prune_config)
    wait_mom_hooks(pbs, kit.cluster, {"rjs_prune": (None, prune_config)})  # the deployed body, this config
    silent = [kit.roles.sister(1), kit.roles.sister(2)]
    for host in silent:  # the 2-cpu sisters: only the primary keeps 2 cpus
        nemesis.stop_mom(host)
    job_id = kit.submit()
    kit.mom.expect(f"Job;{job_id};{re.escape(NEED.format(keep=ORIGINAL_SELECT))}", kit.since, START_TIMEOUT)
    kit.mom.expect("could not prune the job to its original select .*; job deleted", kit.since, 30)
    kit.server_log.expect(f"Job;{job_id};hook rejected request, requiring job to be deleted", kit.since, 30)
    # Exiting: it stays E until the silent sisters answer (after the heal), then it finishes.
    pbs.jobs.wait(job_id, job_state=("E", "F"), timeout=60)
    initial = kit.start_records(job_id, "S")["S"].fields["exec_vnode"]
    assert set(silent) <= set(hosts_of(initial)), initial
    assert not kit.accounting.of(job_id, "s", kit.since)
