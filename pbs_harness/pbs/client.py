"""PBS commands run on a cluster host, with `-F json` output parsed to dicts."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from pbs_harness.cluster import Cluster
from pbs_harness.transport import CommandError, RemoteHost
from pbs_harness.waits import wait_until


def parse_json(text: str) -> dict[str, Any]:
    # qstat/pbsnodes may emit control characters inside strings (job environments): be lenient.
    return json.loads(text, strict=False) if text.strip() else {}


class Pbs:
    """Client side of one PBS complex: submit, query and wait."""

    def __init__(self, cluster: Cluster, host: RemoteHost | None = None) -> None:
        self.cluster = cluster
        self.host = host or cluster.client

    def cmd(self, name: str, *args: str) -> str:
        return shlex.join([self.cluster.bin(name), *args])

    def qsub(
        self,
        script: str | None = None,
        *,
        args: Sequence[str] = (),
        user: str,
        command: Sequence[str] | None = None,
        cwd: str | None = None,
    ) -> str:
        """Submit a job (script body on stdin, or `-- command`) as `user`; return its id."""
        line = self.cmd("qsub", *args, *(["--", *command] if command else []))
        if cwd:
            line = f"cd {shlex.quote(cwd)} && {line}"
        res = self.host.run(line, user=user, stdin=None if command else (script or ""))
        if not res.ok:
            raise CommandError(res)
        return res.stdout.strip()

    def job(self, job_id: str) -> dict[str, Any]:
        """Status of one job (with history), or {} when PBS no longer knows it."""
        res = self.host.run(self.cmd("qstat", "-fx", "-F", "json", job_id))
        if not res.ok:
            return {}
        return parse_json(res.stdout).get("Jobs", {}).get(job_id, {})

    def nodes(self) -> dict[str, dict[str, Any]]:
        res = self.host.check(self.cmd("pbsnodes", "-av", "-F", "json"))
        return parse_json(res.stdout).get("nodes", {})

    def wait_job(self, job_id: str, *, job_state: str, timeout: float) -> dict[str, Any]:
        return wait_until(
            lambda: self.job(job_id),
            lambda j: j.get("job_state") == job_state,
            timeout=timeout,
            describe=f"job {job_id} job_state={job_state}",
        )

    def wait_nodes_free(self, names: Sequence[str], timeout: float = 60) -> dict[str, dict[str, Any]]:
        return wait_until(
            self.nodes,
            lambda nodes: all(nodes.get(n, {}).get("state") == "free" for n in names),
            timeout=timeout,
            describe=f"nodes {', '.join(names)} free",
        )
