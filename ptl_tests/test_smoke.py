"""Smoke: a multi-host job really runs on three hosts of the deployed cluster."""

from __future__ import annotations

import uuid

import pytest

from pbs_harness.pbs.client import Pbs
from pbs_harness.pbs.interactive import InteractiveJob
from pbs_harness.pbs.parsers import parse_exec_host
from ptl_tests import jobscripts

pytestmark = [pytest.mark.acceptance, pytest.mark.smoke, pytest.mark.ci]


def test_scatter_job_runs_on_three_hosts(pbs: Pbs, cluster, topology) -> None:
    user = topology.users.owner
    home = cluster.inventory.home(user)
    out = f"{home}/smoke-{uuid.uuid4().hex[:8]}.out"  # delivered to the submission host by PBS (cp or scp)
    job_id = pbs.jobs.submit(
        jobscripts.nodefile_and_pbsdsh(str(cluster.prefix)),
        user=user,
        select="3:ncpus=1",
        place="scatter",
        args=["-j", "oe", "-o", out, "-N", "smoke"],
        cwd=home,
    )
    try:
        job = pbs.jobs.wait(job_id, job_state="F", timeout=90)
        hosts = [e.host for e in parse_exec_host(job["exec_host"])]
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
        pbs.jobs.delete(job_id, force=True)
        pbs.host.run(["rm", "-f", out])


def test_interactive_job_sees_its_hosts(pbs: Pbs, cluster, topology) -> None:
    with InteractiveJob(cluster, topology.users.owner, ["-l", "select=2:ncpus=1", "-l", "place=scatter"]) as session:
        hosts_in_nodefile = sorted(session.run('sort -u "$PBS_NODEFILE"').split())
        job = pbs.jobs.status(session.job_id)
        assert job["job_state"] == "R"
        assert job.get("interactive") in (True, "True", 1)
        exec_hosts = sorted(e.host for e in parse_exec_host(job["exec_host"]))
        assert hosts_in_nodefile == exec_hosts
        assert len(set(exec_hosts)) == 2
    pbs.jobs.wait(session.job_id, job_state="F", timeout=60)
