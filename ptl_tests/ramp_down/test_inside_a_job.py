"""pbs_release_nodes inside a job (RD-1): without -j it takes $PBS_JOBID, and $PBS_NODEFILE loses the
released hosts, in an interactive and in a batch job."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest

from pbs_harness.common.waits import wait_until
from pbs_harness.pbs.evidence import pick
from pbs_harness.pbs.interactive import InteractiveJob
from pbs_harness.pbs.parsers import parse_exec_host
from pbs_harness.pbs.substates import RUNNING
from pbs_harness.suite.jobfiles import JobFiles
from ptl_tests import jobscripts
from ptl_tests.ramp_down.assignment import Assignment, assert_job_matches
from ptl_tests.ramp_down.evidence import accounting
from ptl_tests.ramp_down.jobs import PLAIN_HOST, SLEEP
from ptl_tests.ramp_down_helpers import standard_select

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.ramp_down,
    pytest.mark.needs_moms(3),
    pytest.mark.requires_feature("pbs_release_nodes"),
]


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
def test_nodefile_shrinks_and_jobid_comes_from_the_environment_in_an_interactive_job(pbs, cluster, roles) -> None:
    """Inside the job, `pbs_release_nodes HOST` (no -j) uses $PBS_JOBID, and $PBS_NODEFILE loses HOST."""
    args = ["-l", f"select={standard_select(roles)}", "-l", "place=scatter"]
    with InteractiveJob(cluster, roles.owner, args) as session:
        assert sorted(set(session.run('cat "$PBS_NODEFILE"').split())) == sorted(
            [roles.primary, roles.multi, roles.plain]
        )
        pbs.jobs.wait(session.job_id, job_state="R", substate=RUNNING, timeout=30)
        out = session.run(f"{cluster.bin('pbs_release_nodes')} {roles.plain}; echo rc=$?")
        assert out.splitlines()[-1:] == ["rc=0"], out
        assert sorted(set(session.run('cat "$PBS_NODEFILE"').split())) == sorted([roles.primary, roles.multi])
        assert roles.plain not in [e.host for e in parse_exec_host(pbs.jobs.status(session.job_id)["exec_host"])]


@pytest.mark.spec("RD-1", "RD-3", "RD-4")
@pytest.mark.guards("RD-1", "RD-4")
@pytest.mark.parametrize(
    ("release_args", "released_roles"),
    [("-a", ("plain", "multi")), (PLAIN_HOST, ("plain",)), ("-k select=ncpus=3:mem=2gb", ("plain",))],
    ids=["all", "vnode", "keep-select"],
)
def test_release_from_inside_a_batch_job(pbs, cluster, roles, release_args: str, released_roles: tuple) -> None:
    """The job script calls pbs_release_nodes without -j ($PBS_JOBID), and its $PBS_NODEFILE loses the hosts."""
    release_args = roles.plain if release_args == PLAIN_HOST else release_args
    released_hosts = {getattr(roles, role) for role in released_roles}
    home = cluster.inventory.home(roles.owner)
    out_file = f"{home}/rd-inside-{uuid.uuid4().hex[:10]}.out"  # written by the script, on the primary
    files = JobFiles(cluster)
    script = jobscripts.release_nodes_from_inside(str(cluster.prefix), release_args, out_file, SLEEP)
    try:
        since = datetime.now() - timedelta(seconds=1)
        job_id = pbs.jobs.submit(
            script,
            user=roles.owner,
            select=standard_select(roles),
            place="scatter",
            cwd=home,
            args=["-j", "oe", "-o", "/dev/null"],
        )
        u, c = accounting(pbs).expect(job_id, "uc", since, timeout=60)
        out = wait_until(
            lambda: files.read(out_file),
            lambda text: "after:" in text,
            timeout=30,
            describe=f"{out_file} written by the job, read {files.where()}",
        )
    finally:
        files.remove(out_file)
    lines = {ln.split(":", 1)[0]: ln.split(":", 1)[1].split() for ln in out.splitlines() if ":" in ln}
    assert "released" in out.splitlines(), out
    before = pick.field(lines, "before", f"the job's {out_file}")
    after = pick.field(lines, "after", f"the job's {out_file}")
    assert sorted(before) == sorted([roles.primary, roles.multi, roles.plain])
    assert sorted(after) == sorted({roles.primary, roles.multi, roles.plain} - released_hosts)
    original = Assignment.of(u.fields["exec_vnode"])
    expected = Assignment(tuple(ch for ch in original.chunks if ch[0].host not in released_hosts))
    assert_job_matches(pbs.jobs.status(job_id), expected)
    assert Assignment.of(c.fields["exec_vnode"]) == expected
