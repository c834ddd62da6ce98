"""Jobs: submit, status (with history), signal, alter, rerun, hold/release, delete, release nodes."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from pbs_harness.common.waits import wait_until
from pbs_harness.pbs.base import PbsCommands
from pbs_harness.pbs.evidence.pick import Attributes
from pbs_harness.remote.transport import CommandError, CommandResult


class Jobs(PbsCommands):
    def submit(
        self,
        script: str | None = None,
        *,
        user: str,
        select: str | None = None,
        place: str | None = None,
        resources: Mapping[str, object] | None = None,
        attributes: Mapping[str, object] | None = None,
        array: str | None = None,
        args: Sequence[str] = (),
        command: Sequence[str] | None = None,
        cwd: str | None = None,
    ) -> str:
        """qsub as `user`: script body on stdin, or `-- command`; returns the job id."""
        argv: list[str] = []
        if select:
            argv += ["-l", f"select={select}"]
        if place:
            argv += ["-l", f"place={place}"]
        for key, value in (resources or {}).items():
            argv += ["-l", f"{key}={value}"]
        for key, value in (attributes or {}).items():
            argv += ["-W", f"{key}={value}"]
        if array:
            argv += ["-J", array]
        argv += list(args)
        if command:
            argv += ["--", *command]
        line = self.line("qsub", *argv)
        if cwd:
            line = f"cd {shlex.quote(cwd)} && {line}"
        res = self.host.run(line, user=user, stdin=None if command else (script or ""))
        if not res.ok:
            raise CommandError(res)
        return res.stdout.strip()

    def status(self, job_id: str, *, history: bool = True) -> dict[str, Any]:
        """`qstat -f -F json` of one job (`-x` for history); {} when PBS does not know it."""
        args = ["-fx" if history else "-f", "-F", "json", job_id]
        if "[]" in job_id:
            args.insert(0, "-t")
        data = self.run_json("qstat", *args)
        found = (data or {}).get("Jobs", {}).get(job_id)
        return found if found is not None else Attributes(what=f"job {job_id} (qstat knows no such job)")

    def all(self, *, history: bool = False) -> dict[str, dict[str, Any]]:
        data = self.run_json("qstat", "-fx" if history else "-f", "-t", "-F", "json")
        return (data or {}).get("Jobs", {})

    def wait(
        self, job_id: str, *, job_state: str | Sequence[str], substate: int | None = None, timeout: float
    ) -> dict[str, Any]:
        """Wait until the job is in job_state (one or any of several) and, if given, substate."""
        states = {job_state} if isinstance(job_state, str) else set(job_state)

        def matches(job: dict[str, Any]) -> bool:
            return job.get("job_state") in states and (substate is None or job.get("substate") == substate)

        want = "|".join(sorted(states)) + (f" substate={substate}" if substate is not None else "")
        return wait_until(
            lambda: self.status(job_id),
            matches,
            timeout=timeout,
            describe=f"job {job_id} job_state={want}",
        )

    def wait_gone(self, job_id: str, *, timeout: float) -> None:
        """Wait until the job has finished (F in history) or is unknown."""
        wait_until(
            lambda: self.status(job_id),
            lambda j: not j or j.get("job_state") == "F",
            timeout=timeout,
            describe=f"job {job_id} finished",
        )

    def delete(self, job_id: str, *, force: bool = False, user: str | None = None) -> CommandResult:
        args = ["-W", "force"] if force else []
        return self.run("qdel", *args, job_id, user=user)

    def purge(self, job_id: str, *, timeout: float = 60) -> None:
        """Delete the job (and its subjobs) by force, wait until it has finished, then remove it
        from the job history too (`qdel -x -W force`)."""
        self.delete(job_id, force=True)
        wait_until(
            lambda: self.status(job_id),
            lambda j: not j or j.get("job_state") in ("F", "X"),
            timeout=timeout,
            describe=f"job {job_id} finished",
        )
        self.forget(job_id)

    def forget(self, *job_ids: str) -> CommandResult:
        """Remove finished jobs from the job history (`qdel -x -W force`)."""
        return self.run("qdel", "-x", "-W", "force", *job_ids)

    def signal(self, job_id: str, signal: str, *, user: str | None = None, check: bool = False) -> CommandResult:
        """qsig -s SIGNAL (e.g. admin-suspend, admin-resume, suspend, resume, TERM); check=True
        raises CommandError when qsig fails."""
        __tracebackhide__ = True
        return (self.check if check else self.run)("qsig", "-s", signal, job_id, user=user)

    def alter(self, job_id: str, *args: str, user: str | None = None) -> CommandResult:
        return self.run("qalter", *args, job_id, user=user)

    def rerun(self, job_id: str, *, user: str | None = None) -> CommandResult:
        return self.run("qrerun", job_id, user=user)

    def hold(self, job_id: str, hold: str = "u", *, user: str | None = None) -> CommandResult:
        return self.run("qhold", "-h", hold, job_id, user=user)

    def release(self, job_id: str, hold: str = "u", *, user: str | None = None) -> CommandResult:
        return self.run("qrls", "-h", hold, job_id, user=user)

    def release_nodes(
        self,
        job_id: str | None = None,
        vnodes: Sequence[str] = (),
        *,
        all_sisters: bool = False,
        keep: str | None = None,
        user: str | None = None,
    ) -> CommandResult:
        """pbs_release_nodes; returns the result (errors are evidence, not exceptions)."""
        args: list[str] = ["-j", job_id] if job_id else []
        if all_sisters:
            args.append("-a")
        if keep is not None:
            args += ["-k", keep]
        return self.run("pbs_release_nodes", *args, *vnodes, user=user)
