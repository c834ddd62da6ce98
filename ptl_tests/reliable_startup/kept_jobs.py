"""The known OpenPBS bug in which a sister pruned away as failed in its prologue keeps the job for good:
its class, for the pin (padding_pruning/test_failed_sisters.py) and for every test whose scenario
reproduces it (a sister's execjob_prologue fails or answers after $job_launch_delay, the prune hook
releases it): the leak check finds the job on that sister after the test (pbs_harness.suite.leaks), and
those tests are strict xfails of it."""

from __future__ import annotations

import pytest

from pbs_harness.suite import leaks

SISTER_KEPT_PRUNED_JOB = (
    "OpenPBS bug (master cd7ab5e): a sister that is alive but on a tolerant job's failed list keeps the job "
    "for good, because the primary never tells it to let go: send_sisters_inner (src/resmom/mom_comm.c) "
    "skips every mom on ji_failed_node_list ('not sending request N to failed mom'), so neither the "
    "IM_DELETE_JOB2 of the prune (start_exec.c get_new_exec_vnode_host_schedselect) nor the job's end "
    "reaches it. A sister gets there by failing its execjob_prologue hook (it answers IM_EXEC_PROLOGUE with "
    "the error, SEND_ERR2, and keeps the job) or by answering too late ($job_launch_delay): after the "
    "job is deleted, finished on the server and gone from the primary, the sister still holds the job's "
    "files in mom_priv/jobs (seen for more than 4 minutes, until the cluster was taken down)."
)


class SisterKeptPrunedJob(leaks.Leaked):
    """A sister pruned away as failed (its prologue failed or answered late) still holds the job once it is gone
    everywhere else."""

    @staticmethod
    def matches(found: list[str]) -> bool:
        """Only jobs kept by moms, all on one mom, none of the other leaks, and that mom not the primary:
        reliable_startup's primary is the server host (reliable_startup_helpers: primary =
        topology.server), whose name a job id carries ("14.lv01"), so a primary that kept the job (another
        bug, maybe a regression) is a plain leak, a failure."""
        kept = [_kept(f) for f in found]
        return (
            bool(kept)
            and all(k is not None and k[0] != k[1].partition(".")[2] for k in kept)
            and len({k[0] for k in kept if k is not None}) == 1
        )


def _kept(leak: str) -> tuple[str, str] | None:
    """(mom, job) of a kept job's leak text ("mom lv03: job 14.lv01 = in mom_priv/jobs, ..."), else None."""
    where, _, rest = leak.partition(": job ")
    job, _, value = rest.partition(" = ")
    if not where.startswith("mom ") or value != leaks.KEPT_JOB:
        return None
    return where.removeprefix("mom "), job


# For a test whose scenario reproduces the bug: its leak check raises SisterKeptPrunedJob (leak_of),
# which this strict xfail expects; a body that fails for any other reason fails.
KEPT_PRUNED_JOB = (
    pytest.mark.xfail(strict=True, raises=SisterKeptPrunedJob, reason=SISTER_KEPT_PRUNED_JOB),
    pytest.mark.leak_of.with_args(SisterKeptPrunedJob),
)
