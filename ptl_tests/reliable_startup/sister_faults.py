"""Part A's sister faults: how a sister fails before the job starts (a hook rejecting or raising, a
stopped, partitioned or paused mom), what the primary mom logs about it, and how a test starts one."""

from __future__ import annotations

from dataclasses import dataclass

from ptl_tests.hook_files import install_hooks
from ptl_tests.reliable_startup_helpers import SHORT_ALARM, START_ERROR, StartupKit

JOIN_TIMEOUT = f"sister_join_job_alarm wait time {SHORT_ALARM} secs exceeded"


@dataclass(frozen=True)
class SisterFault:
    """How a sister fails before the job starts, and what the primary mom logs about it. The
    sister is named by its number (Roles.sister): sisters 1 and 2 hold the padded job's 2-cpu
    chunks after the primary's, sisters 3 and 4 its 1-cpu chunks."""

    name: str
    sister: int  # which sister fails (1..4), resolved to a host at run time
    how: str  # begin-reject, begin-exception, prologue-reject, prologue-exception, mom-stop, partition, pause
    start_error: str | None = None  # what the primary could not do with it (hook faults); None: a silent sister

    @property
    def by_hook(self) -> bool:
        return self.how.startswith(("begin-", "prologue-"))

    def evidence(self, host: str) -> str:
        """Regex of the failure in the primary mom's log."""
        return START_ERROR.format(host=host, what=self.start_error) if self.start_error else JOIN_TIMEOUT

    def inject(self, nemesis, host: str):
        """Start the fault on `host`. Hook faults first (the moms must receive them), silent ones last."""
        event, _, kind = self.how.partition("-")
        if self.by_hook:
            return nemesis.reject_hook(f"execjob_{event}", (host,), how=kind)
        start = {"mom-stop": nemesis.stop_mom, "partition": nemesis.partition, "pause": nemesis.pause_host}
        return start[self.how](host)


def start_with_fault(kit: StartupKit, nemesis, fault: SisterFault, hooks) -> None:
    """Install the test's hooks and the fault on its sister: hook faults before the moms' hook sync,
    silent faults after it (a stopped, partitioned or paused mom cannot receive hook files)."""
    host = kit.roles.sister(fault.sister)
    install_hooks(kit.pbs, kit.cluster, hooks, [fault.inject(nemesis, host)] if fault.by_hook else [])
    if not fault.by_hook:
        fault.inject(nemesis, host)


def begin_reject(sister: int) -> SisterFault:
    """Sister `sister`'s execjob_begin hook rejects the job."""
    return SisterFault(f"begin-reject-sister-{sister}", sister, "begin-reject", "JOIN_JOB")
