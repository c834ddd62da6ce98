"""The suite's jobs: a job started with a `sleep` task on each of its hosts (start_job), the
extra_select job whose mpiprocs/ompthreads are checked before and after a release (MpiJob), and
the job's tasks as ps sees them (task_pids)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from pbs_harness.common.waits import wait_until
from pbs_harness.pbs.parsers import parse_select
from pbs_harness.pbs.substates import RUNNING
from ptl_tests import jobscripts
from ptl_tests.ramp_down.assignment import Assignment
from ptl_tests.ramp_down_helpers import Roles, TaskEnvReport, extra_select, standard_select

SLEEP = 3017  # the job's tasks run `sleep 3017`: easy to find with ps on each host
PLAIN_HOST = "<plain host>"  # in parameters: replaced by the plain host's name inside the test


def task_pids(cluster, owner: str, host: str) -> list[str]:
    res = cluster.hosts[host].run(["pgrep", "-u", owner, "-f", f"^/bin/sleep {SLEEP}$"])
    return res.stdout.split()


def wait_tasks_gone(cluster, owner: str, host: str, timeout: float = 30) -> None:
    """Wait until no task of the job (its `sleep SLEEP`) runs on `host` any more."""
    wait_until(
        lambda: task_pids(cluster, owner, host),
        lambda p: not p,
        timeout=timeout,
        describe=f"no job task on {host}",
    )


def start_job(pbs, cluster, roles: Roles, *, select: str | None = None, attributes=None, args=(), script=None):
    """Submit a job (by default the standard one), wait until it runs with a sleep task on each of
    its hosts; returns (job id, its qstat before any release, a time just before submission)."""
    since = datetime.now() - timedelta(seconds=1)
    job_id = pbs.jobs.submit(
        script or jobscripts.sleep_on_every_chunk(str(cluster.prefix), SLEEP),
        user=roles.owner,
        select=select or standard_select(roles),
        place="scatter",
        attributes=attributes,
        cwd=cluster.inventory.home(roles.owner),
        args=["-j", "oe", "-o", "/dev/null", *args],
    )
    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=60)
    hosts = Assignment.of(job["exec_vnode"]).hosts()
    wait_until(
        lambda: {h: task_pids(cluster, roles.owner, h) for h in hosts},
        lambda pids: all(pids.values()),
        timeout=30,
        describe="the job's sleep task on every host",
    )
    return job_id, job, since


def mpi_request(select: str) -> dict[str, tuple[int, int]]:
    """host -> (mpiprocs, ompthreads) of each chunk of the request."""
    return {
        c.resources["host"]: (int(c.resources["mpiprocs"]), int(c.resources["ompthreads"]))
        for c in parse_select(select)
    }


def nodefile(cluster, primary: str, job_id: str) -> list[str]:
    """The job's $PBS_NODEFILE as the primary mom wrote it (PBS_HOME/aux/<job id>)."""
    return cluster.hosts[primary].run(["cat", f"{cluster.pbs_home}/aux/{job_id}"]).stdout.split()


@dataclass
class MpiJob:
    """The extra_select job and how its mpiprocs/ompthreads must look at any moment."""

    pbs: object
    cluster: object
    roles: Roles
    report: TaskEnvReport

    def check(self, job_id: str, phase: str) -> None:
        """Every chunk left in exec_vnode keeps the mpiprocs/ompthreads its request gave it, whether
        the chunk was cut or not: in schedselect and Resource_List.select; Resource_List.mpiprocs is
        their sum and there is no job-wide ompthreads (only resources assigned to vnodes are summed);
        exec_vnode carries neither. $PBS_NODEFILE lists each chunk's host mpiprocs times, in chunk
        order, and pbsdsh runs one task per line with the chunk's ompthreads as OMP_NUM_THREADS."""
        __tracebackhide__ = True
        job = self.pbs.jobs.status(job_id)
        chunks = Assignment.of(job["exec_vnode"]).chunks
        hosts = [c[0].host for c in chunks]
        want = [mpi_request(extra_select(self.roles))[h] for h in hosts]
        for name, value in (("schedselect", job["schedselect"]), ("select", job["Resource_List"]["select"])):
            got = [(c.resources.get("mpiprocs"), c.resources.get("ompthreads")) for c in parse_select(value)]
            assert got == [(str(m), str(o)) for m, o in want], f"{name} {value}: expected (mpiprocs, ompthreads) {want}"
        mpiprocs = sum(m for m, _ in want)
        rl = job["Resource_List"]
        assert int(rl["mpiprocs"]) == mpiprocs, f"Resource_List.mpiprocs {rl['mpiprocs']}: expected {mpiprocs}"
        assert "ompthreads" not in rl, f"Resource_List.ompthreads {rl.get('ompthreads')}: expected none"
        carried = [s for c in chunks for s in c if {"mpiprocs", "ompthreads"} & set(s.resources)]
        assert not carried, f"exec_vnode {job['exec_vnode']}: expected no mpiprocs/ompthreads, found them on {carried}"
        lines = [h for h, (m, _) in zip(hosts, want, strict=True) for _ in range(m)]
        wait_until(
            lambda: nodefile(self.cluster, self.roles.primary, job_id),
            lambda got: got == lines,
            timeout=30,
            describe=f"$PBS_NODEFILE = {lines}",
        )
        tasks = Counter((h, str(o)) for h, (m, o) in zip(hosts, want, strict=True) for _ in range(m))
        if phase == "after":
            self.report.go()
        recorded = wait_until(
            self.report.lines,
            lambda got: "done" in got if phase == "after" else len(self.report.records(got, phase)) >= len(lines),
            timeout=60,
            describe=f"the {phase} tasks recorded in {self.report.where()}",
        )
        got = Counter(self.report.records(recorded, phase))
        assert got == tasks, f"the {phase} tasks (host, OMP_NUM_THREADS): expected {tasks}, found {recorded}"


def start_standard_job(pbs, cluster, roles, request, extra: bool):
    """The standard job, or with `extra` the extra_select one (its mpiprocs/ompthreads layout checked
    before any release); returns (job id, qstat, since, MpiJob or None)."""
    if not extra:
        return (*start_job(pbs, cluster, roles), None)
    mpi = MpiJob(pbs, cluster, roles, request.getfixturevalue("task_env_report"))
    script = mpi.report.script(str(cluster.prefix), SLEEP)
    job_id, before, since = start_job(pbs, cluster, roles, select=extra_select(roles), script=script)
    mpi.check(job_id, "before")
    return job_id, before, since, mpi


def with_extra(*values: str) -> list:
    """Each value as is, then again with mpiprocs/ompthreads (id suffix -extra)."""
    return [pytest.param(v, False, id=v) for v in values] + [pytest.param(v, True, id=f"{v}-extra") for v in values]
