"""The two known races between the primary mom and its job starter, each pinned in a test of its own: the
harness makes the losing interleaving happen every time (pbs_harness.suite.faults.interleave: gdb holds one
process at the system call where the window opens, until the other has visibly done its part), so each
test is a strict xfail naming one OpenPBS bug. When upstream fixes one, its test passes and turns the run
red (XPASS(strict)) until the xfail is removed.

The other tests of the suite meet these races only by chance (a loaded machine) and then run their scenario
again on a fresh job (defect_retry; met on every attempt they fail). These two tests are where the races
themselves are asserted, whatever the load. A hold that did not make its interleaving is a harness failure
(HoldNotEngaged), never taken for the bug or for its fix.
"""

from __future__ import annotations

import re

import pytest

from pbs_harness.common.waits import WaitTimeout
from pbs_harness.pbs.evidence import pick
from pbs_harness.suite import defects
from pbs_harness.suite.faults.interleave import (
    ACK_AND_RECORD_WAITING,
    READER_PAST_ZERO_TIMEOUT_READ,
    HoldNotEngaged,
    SyscallHold,
)
from ptl_tests.hook_files import install_hooks
from ptl_tests.reliable_startup.jobs import START_TIMEOUT
from ptl_tests.reliable_startup.kept_jobs import SisterKeptPrunedJob
from ptl_tests.reliable_startup_helpers import IGNORING, hosts_of, pad_hook, prune_hook, set_short_alarms

pytestmark = [pytest.mark.acceptance, pytest.mark.reliable_startup, pytest.mark.needs_moms(6)]

# $sister_join_job_alarm and $job_launch_delay on the primary for these tests: the starter's failed-host loop
# runs one pass per second for $job_launch_delay passes, and must outlast a hold and a sister's late failure.
HOLD_ALARMS = 30
LATE = 10  # seconds the failing sister's prologue hook sleeps before it raises (race 2)

SPLIT_RECORD = (
    "OpenPBS bug (master cd7ab5e, 23.06.06, 22.05.11): the primary mom sends a failed host to the job starter "
    "as two writes, its size (size_t) then its name (src/resmom/mom_comm.c, job_start_error: write_pipe_data "
    "of &r_size, then of nodename), but the starter reads the name with NO timeout right after the size "
    "(start_exec.c, get_failed_moms_and_vnodes: read_pipe_data(pipefd, r_size, 0)). When the name is not in "
    "the pipe yet, it stays there and the next pass reads it as the size of another name: a name and its NUL "
    "of exactly 8 bytes is lost (the failed sister is missing from the launch hook's vnode_list_fail), any "
    "other length leaves the starter blocked in read(2) for good (the job stays R/41)."
)
ACK_BEFORE_NAME = (
    "OpenPBS bug (master cd7ab5e, 23.06.06, 22.05.11): each pass of the job starter's failed-host loop polls "
    "the failed-host pipe for 1 s, then the prologue-ack pipe with no wait, and leaves the loop as soon as "
    "the ack says IM_ALL_OKAY (src/resmom/start_exec.c, get_failed_moms_and_vnodes and "
    "prologue_hook_all_okay_from_sisters_moms). When the sister whose prologue fails answers last, the "
    "primary writes its name and then the ack at once (mom_comm.c, IM_EXEC_PROLOGUE error: job_start_error(), "
    "then 'all job prologue hooks from sisters executed'); a starter that reaches the ack poll after both "
    "writes reads the ack and never the name: the failed sister is missing from the launch hook's "
    "vnode_list_fail."
)


class SplitRecordMisread(AssertionError):
    """The starter lost a failed host whose name reached the pipe after its size, or got stuck on it."""


class FailedHostBehindAck(AssertionError):
    """The starter left its loop on the prologue ack with a failed host's name still unread in the pipe."""


def _primary_knew(kit, job_id: str, failed: str) -> None:
    """The primary logged that it ignored the sister's failure: what the starter should then learn."""
    kit.mom.expect(f"Job;{re.escape(job_id)};{IGNORING.format(host=failed)}", kit.since, timeout=30)


def _assert_listed_as_failed(kit, job_id: str, job: dict, failed: str, *, bug: type[AssertionError], made: str) -> None:
    """The launch hook listed the failed sister in vnode_list_fail (else `bug`, with what it listed and the
    hold's record `made`), and the job runs without it."""
    try:
        kit.mom.expect(f"launch: found vnode_list_fail\\[{failed}\\]", kit.since, timeout=10)
    except WaitTimeout as exc:
        listed = [ln.message for ln in kit.mom.matching("launch: found vnode_list_fail", kit.since)]
        raise bug(
            f"{failed}'s prologue failed and the primary ignored it, but the launch hook of job {job_id} listed "
            f"as failed: {listed or 'nothing'}; exec_vnode {job['exec_vnode']}; {made}"
        ) from exc
    assert failed not in hosts_of(job["exec_vnode"]), job["exec_vnode"]


@pytest.mark.xfail(strict=True, raises=SplitRecordMisread, reason=SPLIT_RECORD)
# Where its failed sister is pruned all the same (it depends on the host name's length, see the docs),
# that sister keeps the job: the restore finds it and reports it as that bug.
@pytest.mark.leak_of.with_args(SisterKeptPrunedJob)
@pytest.mark.spec("RJS-5")
def test_a_failed_host_whose_name_reaches_the_starter_after_its_size_is_in_vnode_list_fail(kit, nemesis) -> None:
    """The primary is held right after it wrote a failed sister's size, until the starter has taken the size
    and, finding no name, gone back to its 1 s poll; then the name follows. The starter must still learn the
    sister failed: the launch hook lists it in vnode_list_fail and the job runs without it."""
    pbs, cluster, primary, failed = kit.pbs, kit.cluster, kit.roles.primary, kit.roles.sister(2)
    set_short_alarms(pbs, cluster, primary, seconds=HOLD_ALARMS)
    failing = nemesis.reject_hook("execjob_prologue", (failed,), how="exception")
    install_hooks(pbs, cluster, {"pad": pad_hook(), "launch": prune_hook()}, [failing])
    mom = int(cluster.hosts[primary].check(["pgrep", "-o", "-x", "pbs_mom"]).stdout.split()[0])
    # The size write: 8 bytes whose value is the failed sister's name length and NUL; held as it returns.
    size = len(failed) + 1
    hold = nemesis.start(
        SyscallHold(
            cluster,
            primary,
            "write",
            f"$rax == 8 && $rdx == 8 && *(unsigned long *)$rsi == {size}",
            READER_PAST_ZERO_TIMEOUT_READ,
            pid=mom,
        )
    )
    job_id = kit.submit()
    released = hold.released(timeout=START_TIMEOUT)
    nemesis.heal(hold)
    _primary_knew(kit, job_id, failed)
    made = f"hold: {released}"
    try:
        job = kit.started(job_id, timeout=START_TIMEOUT)
    except WaitTimeout as exc:
        stuck = defects.stuck_starter_on(cluster.hosts[primary], younger_than=START_TIMEOUT * 3)
        if stuck:
            raise SplitRecordMisread(f"job {job_id} never starts: {stuck}; {made}") from exc
        raise
    _assert_listed_as_failed(kit, job_id, job, failed, bug=SplitRecordMisread, made=made)


@pytest.mark.xfail(strict=True, raises=FailedHostBehindAck, reason=ACK_BEFORE_NAME)
# Its sister, pruned after its prologue failed, keeps the job too (found by the restore; reported as that bug).
@pytest.mark.leak_of.with_args(SisterKeptPrunedJob)
@pytest.mark.spec("RJS-5")
def test_a_failed_sister_answering_last_is_in_vnode_list_fail(kit, nemesis) -> None:
    """The starter is held as it is about to poll the prologue ack, until the primary has written both the
    last sister's failure and the ack (its prologue hook raises after LATE s, the others have answered).
    The starter must still learn the sister failed: the launch hook lists it in vnode_list_fail."""
    pbs, cluster, primary, failed = kit.pbs, kit.cluster, kit.roles.primary, kit.roles.sister(2)
    set_short_alarms(pbs, cluster, primary, seconds=HOLD_ALARMS)
    failing = nemesis.reject_hook("execjob_prologue", (failed,), how="late_exception", seconds=LATE)
    install_hooks(pbs, cluster, {"pad": pad_hook(), "launch": prune_hook()}, [failing])
    job_id = kit.submit()
    # Single-pipe polls on entry ($rax is -ENOSYS there); the hold picks the loop's ack poll among them
    # (interleave.ack_poll_of_the_loop). No failure may be waiting yet (checked from the hold's record).
    hold = nemesis.start(
        SyscallHold(
            cluster,
            primary,
            "poll",
            "$rax == -38 && $rsi == 1",
            ACK_AND_RECORD_WAITING,
            find_timeout=LATE,
        )
    )
    released = hold.released(timeout=START_TIMEOUT)
    held = pick.first([e for e in hold.events() if e["event"] == "held"], "the hold's 'held' event")
    nemesis.heal(hold)
    if held.get("waiting_at_hold"):
        raise HoldNotEngaged(f"a failed host's record was already waiting when the starter was held: {held}")
    _primary_knew(kit, job_id, failed)
    made = f"hold: {released}"
    job = kit.started(job_id, timeout=START_TIMEOUT)
    _assert_listed_as_failed(kit, job_id, job, failed, bug=FailedHostBehindAck, made=made)
