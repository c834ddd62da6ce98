"""Smoke: a multi-host job really runs on three hosts of the deployed cluster."""

from __future__ import annotations

import uuid

import pytest

from pbs_harness.pbs.client import Pbs
from ptl_tests import jobscripts

pytestmark = [pytest.mark.acceptance, pytest.mark.smoke, pytest.mark.ci]


def exec_hosts(exec_host: str) -> list[str]:
    """Host names of an exec_host value such as 'a/0*2+b/1'."""
    return [chunk.split("/")[0] for chunk in exec_host.split("+")]


def test_scatter_job_runs_on_three_hosts(pbs: Pbs, cluster) -> None:
    user = "pbsuser1"
    out = f"/home/{user}/smoke-{uuid.uuid4().hex[:8]}.out"
    job_id = pbs.qsub(
        jobscripts.nodefile_and_pbsdsh(str(cluster.prefix)),
        args=["-l", "select=3:ncpus=1", "-l", "place=scatter", "-j", "oe", "-o", out, "-N", "smoke"],
        user=user,
        cwd=f"/home/{user}",
    )
    try:
        job = pbs.wait_job(job_id, job_state="F", timeout=90)
        hosts = exec_hosts(job["exec_host"])
        assert len(hosts) == 3
        assert len(set(hosts)) == 3, f"place=scatter put chunks on the same host: {job['exec_host']}"
        assert job["Exit_status"] == 0
        assert job["euser"] == user

        # The output file was delivered back to the submit host.
        text = pbs.host.check(["cat", out]).stdout
        assert sorted(jobscripts.section(text, "nodefile")) == sorted(hosts)
        assert sorted(jobscripts.section(text, "pbsdsh")) == sorted(hosts)
    finally:
        # Leave no job behind if an assertion or a wait failed early.
        pbs.host.run(pbs.cmd("qdel", "-x", "-W", "force", job_id))
        pbs.host.run(["rm", "-f", out])
