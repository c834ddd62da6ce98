"""Part B: a sister host crashing while it joins the job (its execjob_begin hook still sleeping)."""

from __future__ import annotations

import pytest

from ptl_tests.reliable_startup.sister_waits import install, wait_prerun_on
from ptl_tests.reliable_startup_helpers import (
    JOIN_ALARM,
    LAUNCH_DELAY,
    assert_assignment,
    expected_prune,
    pad_hook,
    prune_hook,
    set_mom_options,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.reliable_startup, pytest.mark.needs_moms(5)]


# ---------------------------------------------------------------------------------------------
# A sister host crash (the test restarts the primary mom at its end)


@pytest.mark.needs_faults("crash", "boot")
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

    job = kit.started(job_id, timeout=alarm + 30)
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
