"""Helpers of the admin-suspend suite (the ptl_tests/admin_suspend package).

A `SuspendKit` (ptl_tests/kit.py) per test submits the jobs (plain sleeps, or sleepers whose PIDs are
recorded so their processes can be watched with ps on their hosts), sends qsig as an admin, and cleans
up: jobs are deleted AND purged from the job history, because OpenPBS 23.06.06 keeps a stale
`maintenance_jobs` value in its database after the last admin-suspended job of a node is resumed
or deleted; at the next server start any job still named there that exists (finished jobs in the
history count) puts the node back into maintenance (see docs/suites/admin_suspend.md).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pbs_harness.common.waits import wait_until
from pbs_harness.pbs.client import Pbs
from pbs_harness.pbs.evidence.accounting import AccountingReader
from pbs_harness.pbs.nodes import states
from pbs_harness.pbs.parsers import parse_exec_vnode
from pbs_harness.pbs.substates import RUNNING, SCHED_SUSPENDED, SUSPENDED  # noqa: F401 - the suite's names
from pbs_harness.remote.cluster import Cluster
from pbs_harness.remote.transport import CommandResult
from ptl_tests import jobscripts
from ptl_tests.hook_files import SuiteHook
from ptl_tests.kit import JobKit

# Shipped strings (src/lib/Liblog/pbs_messages.c), as the CLI prints them: "<cmd>: <msg> <job id>".
WRONG_RESUME = "Job can not be resumed with the requested resume signal"  # msg_wrong_resume, PBSE_WRONG_RESUME
PERM = "Unauthorized Request "  # msg_perm, PBSE_PERM (note the trailing space)
BADSTATE = "Request invalid for state of job"  # msg_badstate, PBSE_BADSTATE
ATTRRO = "Cannot set attribute, read only or insufficient permission "  # msg_attrro, PBSE_ATTRRO (+ name)
BAD_NODE_VALUE = "Illegal value for node"  # msg_badnodeatval, PBSE_BADNDATVAL (+ " <attribute>")
JOBEXIST = "Job with requested ID already exists"  # msg_jobexist, PBSE_JOBEXIST

FREE = {"free"}
MAINT = {"maintenance"}


SLEEP = 600  # seconds: longer than any test, the jobs are deleted at the end

# Jobs (and work directories) of failed tests: they stay for the evidence and the harness's
# restore. One list for all the suite's modules: the job history is purged before any server
# restart of the suite (purge_left_behind) and, with the directories, at the end of each of its
# modules (admin_suspend/conftest.py); see the module's docstring for why the history matters.
LEFT_BEHIND: list[str] = []
LEFT_DIRS: list[str] = []


def purge_left_behind(kit_or_pbs) -> None:
    pbs = getattr(kit_or_pbs, "pbs", kit_or_pbs)
    while LEFT_BEHIND:
        job_id = LEFT_BEHIND.pop()
        pbs.jobs.delete(job_id, force=True)
        pbs.jobs.forget(job_id)


def accounting(cluster) -> AccountingReader:
    return AccountingReader(cluster.server, str(cluster.pbs_home))


def cli_error(cmd: str, message: str, job_id: str) -> str:
    """What a job command prints for a server error (src/lib/Libcmds/err_handling.c prt_job_err)."""
    return f"{cmd}: {message} {job_id}\n"


def chunks_on(hosts: list[str]) -> str:
    return "+".join(f"1:ncpus=1:host={h}" for h in hosts)


def hook_log_vnode_maintenance(vnode: str) -> SuiteHook:
    """A queuejob hook logging what hooks see of a vnode's admin-suspend state, tagged with the
    submitted job's name: `admin_suspend probe <name>: <vnode> maintenance_jobs=<value>
    maintenance=<True|False>` (ptl_tests/hooks/log_vnode_maintenance.py)."""
    return SuiteHook("log_vnode_maintenance.py", {"event": "queuejob", "enabled": True}, {"vnode": vnode})


def maintenance_jobs(node: Mapping[str, Any]) -> list[str]:
    """The node's maintenance_jobs as a list ([] when the attribute is not shown)."""
    value = node.get("maintenance_jobs")
    return [v.strip() for v in str(value).split(",") if v.strip()] if value else []


@dataclass(frozen=True)
class Proc:
    """One sleep started by a sleepers job: where it runs and its PID there."""

    host: str
    pid: int
    origin: str  # "script" (the job script) or "task" (pbsdsh)


@dataclass
class Sleepers:
    job_id: str
    procs: list[Proc]


def proc_state(cluster: Cluster, proc: Proc) -> str:
    """`ps -o stat=` of the process on its host ('' when it no longer exists)."""
    return cluster.hosts[proc.host].run(["ps", "-o", "stat=", "-p", str(proc.pid)]).stdout.strip()


def proc_states(cluster: Cluster, procs: Iterable[Proc]) -> dict[Proc, str]:
    return {p: proc_state(cluster, p) for p in procs}


def wait_procs(cluster: Cluster, procs: Sequence[Proc], want: str, timeout: float = 15) -> dict[Proc, str]:
    """Wait until every process is `want`: "stopped" (state T), "running" (exists, not T) or "gone"."""
    checks = {
        "stopped": lambda s: s.startswith("T"),
        "running": lambda s: bool(s) and not s.startswith("T"),
        "gone": lambda s: s == "",
    }
    ok = checks[want]
    return wait_until(
        lambda: proc_states(cluster, procs),
        lambda got: all(ok(s) for s in got.values()),
        timeout=timeout,
        describe=f"processes {[(p.host, p.pid) for p in procs]} {want}",
    )


def wait_nodes(
    pbs: Pbs, want: Mapping[str, tuple[set[str], list[str]]], timeout: float = 30
) -> dict[str, dict[str, Any]]:
    """Wait until each named vnode has exactly the given state set and maintenance_jobs list."""

    def view(nodes: dict[str, dict[str, Any]]) -> dict[str, tuple[set[str], list[str]]]:
        return {n: (states(nodes.get(n, {})), maintenance_jobs(nodes.get(n, {}))) for n in want}

    described = {n: (sorted(s), jobs) for n, (s, jobs) in want.items()}
    return wait_until(
        pbs.nodes.all,
        lambda nodes: view(nodes) == dict(want),
        timeout=timeout,
        describe=f"vnodes (state, maintenance_jobs) = {described}",
    )


def qmgr_on_a_terminal(cluster: Cluster, directive: str, user: str | None = None) -> CommandResult:
    """qmgr -c DIRECTIVE with a pseudo-terminal as stdin (util-linux `script`).

    Without a terminal qmgr prints nothing for a rejected `set node` of a read-only attribute
    (src/cmds/qmgr.c, "bug 4941"); with one it prints the server's message. Output lines come back
    with \\r\\n from the terminal and stderr merged into stdout.
    """
    qmgr = shlex.join([str(cluster.prefix / "bin" / "qmgr"), "-c", directive])
    return cluster.server.run(["script", "-qec", qmgr, "/dev/null"], user=user)


def terminal_lines(res: CommandResult) -> list[str]:
    return [line.rstrip("\r") for line in res.stdout.splitlines() if line.strip()]


class SuspendKit(JobKit):
    """The suite's jobs (`kit` fixture): plain sleeps (`submit`, `running`) and sleepers whose PIDs are
    recorded, qsig as an admin; `cleanup` deletes and purges them (see the module's docstring)."""

    name_prefix = "as"
    dir_prefix = "pbsh-as-"
    sleep = SLEEP
    purge_at_cleanup = True

    def sleepers(self, select: str, *, place: str | None = None, timeout: float = 60) -> Sleepers:
        """A running job with a recorded `sleep` per chunk (pbsdsh) plus one from its script."""
        pid_file = f"{self.next_name}.pids"  # each sleep appends its record on the host it runs on
        script = jobscripts.sleepers_recording_pids(self.prefix, self.path(pid_file), SLEEP)
        job_id = self.submit(script, select=select, place=place)
        job = self.pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=timeout)
        chunks = len(parse_exec_vnode(job["exec_vnode"]))
        records = wait_until(
            lambda: jobscripts.pid_records(self.read(pid_file)),
            lambda recs: len(recs) == chunks + 1,
            timeout=timeout,
            describe=f"{chunks} pbsdsh sleeps and the script's sleep of {job_id} recorded in {self.where(pid_file)}",
        )
        return Sleepers(job_id, [Proc(h, pid, origin) for h, pid, origin in records])

    def qsig(self, job_id: str, signal: str, user: str | None = None) -> CommandResult:
        """qsig -s SIGNAL as `user` (default root on the submit host: a PBS manager)."""
        return self.pbs.jobs.signal(job_id, signal, user=user)

    def admin(self, job_id: str, signal: str, user: str | None = None) -> CommandResult:
        """qsig that must succeed (admin-suspend, admin-resume, suspend, resume)."""
        __tracebackhide__ = True
        return self.pbs.jobs.signal(job_id, signal, user=user, check=True)
