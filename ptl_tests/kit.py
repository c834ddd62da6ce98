"""A test's jobs: `JobKit`, the one way the suites submit "a job of this test".

A kit belongs to one test. It makes a private directory in the job owner's home on every host a job
may write on (pbs_harness/suite/jobfiles.py: the client alone where the homes are shared), submits jobs
named <name_prefix><n> (n counts the kit's submissions from 0) whose output PBS delivers into that
directory on the submission host, remembers their ids, reads what the jobs write into the directory
wherever they ran (`read`), and at `cleanup` removes the directory everywhere (and, for suites that
need it, deletes AND purges the jobs from the job history).

`submit` has one signature in every suite: the script first (None: a `sleep`), everything else
by keyword, e.g. `kit.submit(select="1:ncpus=1", args=["-h"])` or `kit.submit(script, place="free")`.
A suite's kit is a subclass that sets the class attributes below (its defaults) and adds only
its own evidence readers (ptl_tests/admin_suspend_helpers.py, ptl_tests/reliable_startup_helpers.py).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar, Literal

from pbs_harness.pbs.client import Pbs
from pbs_harness.pbs.substates import RUNNING
from pbs_harness.remote.cluster import Cluster
from pbs_harness.suite.faults import Nemesis
from pbs_harness.suite.jobfiles import JobFiles


class _Default(enum.Enum):
    KIT = "the kit's default"


KIT_DEFAULT = _Default.KIT
"""`select` / `place` not given: the kit's `default_select` / `default_place` (None: no -l)."""

Default = Literal[_Default.KIT]


class JobKit:
    """Per-test jobs of `user` (the job owner), in a private directory `dir` of the owner's home;
    `since` is a moment just before the kit was made (the start of the test's log windows);
    `nemesis` (the test's) keeps reads and removals away from hosts its faults took out of reach."""

    name_prefix: ClassVar[str] = "job"  # job names: <name_prefix>0, <name_prefix>1, ...
    dir_prefix: ClassVar[str] = "pbsh-job-"  # the directory: <home of user>/<dir_prefix><8 hex digits>
    default_select: ClassVar[str | None] = None
    default_place: ClassVar[str | None] = None
    sleep: ClassVar[int] = 600  # seconds the default job (no script) sleeps
    submit_in_dir: ClassVar[bool] = False  # qsub runs with the kit's directory as its working directory
    purge_at_cleanup: ClassVar[bool] = True  # cleanup deletes the kit's jobs and purges them from the history

    def __init__(self, pbs: Pbs, cluster: Cluster, user: str, nemesis: Nemesis | None = None) -> None:
        self.pbs, self.cluster, self.user = pbs, cluster, user
        self.files = JobFiles(cluster, nemesis)
        self.dir = f"{cluster.inventory.home(user)}/{self.dir_prefix}{uuid.uuid4().hex[:8]}"
        self.files.make_dir(self.dir, user)
        self.since = datetime.now() - timedelta(seconds=1)
        self.count = 0  # jobs submitted so far
        self.jobs: list[str] = []  # their ids (cleared by cleanup)

    @property
    def prefix(self) -> str:
        """PBS_EXEC on the cluster's hosts, for job scripts."""
        return str(self.cluster.prefix)

    @property
    def next_name(self) -> str:
        """The name `submit` gives the next job (its output file is <dir>/<name>.out)."""
        return f"{self.name_prefix}{self.count}"

    def path(self, file: str) -> str:
        """A file in the kit's directory."""
        return f"{self.dir}/{file}"

    def read(self, file: str) -> str:
        """What the kit's jobs wrote into `file` of its directory, on whichever hosts they ran
        ("" while none has): JobFiles.read."""
        return self.files.read(self.path(file))

    def where(self, file: str) -> str:
        """`file` and where `read` looks, for wait descriptions."""
        return f"{self.path(file)} {self.files.where()}"

    def submit(
        self,
        script: str | None = None,
        *,
        select: str | Default | None = KIT_DEFAULT,
        place: str | Default | None = KIT_DEFAULT,
        queue: str | None = None,
        array: str | None = None,
        resources: Mapping[str, object] | None = None,
        attributes: Mapping[str, object] | None = None,
        args: Sequence[str] = (),
        user: str | None = None,
    ) -> str:
        """qsub as `user` (default the kit's owner) of `script`, or of a `sleep` when it is None;
        output (stdout and stderr joined) into the kit's directory; returns the job id.

        select/place: None asks for none, not given the kit's default. resources: more `-l k=v`,
        attributes: `-W k=v`, array: `-J`, queue: `-q`; args are extra qsub options."""
        name = self.next_name
        qargs = ["-N", name, "-j", "oe", "-o", self.path(f"{name}.out"), *args]
        if queue:
            qargs += ["-q", queue]
        job_id = self.pbs.jobs.submit(
            script,
            user=user or self.user,
            select=self.default_select if select is KIT_DEFAULT else select,
            place=self.default_place if place is KIT_DEFAULT else place,
            resources=resources,
            attributes=attributes,
            array=array,
            args=qargs,
            command=None if script else ["/bin/sleep", str(self.sleep)],
            cwd=self.dir if self.submit_in_dir else None,
        )
        self.count += 1
        self.jobs.append(job_id)
        return job_id

    def running(self, script: str | None = None, *, timeout: float = 60, **submit: Any) -> str:
        """`submit`, then wait until the job runs (state R, substate RUNNING); returns its id."""
        job_id = self.submit(script, **submit)
        self.pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=timeout)
        return job_id

    def purge(self, job_id: str) -> None:
        """Delete the job (and its subjobs) by force, then remove it from the job history."""
        self.pbs.jobs.purge(job_id)

    def cleanup(self) -> None:
        """Purge the kit's jobs (when `purge_at_cleanup`) and remove its directory from every host."""
        if self.purge_at_cleanup:
            for job_id in self.jobs:
                self.purge(job_id)
        self.jobs.clear()
        self.files.remove(self.dir)
