"""pbs_release_nodes refused (RD-1): the primary, a vnode outside the job, another user, usage errors,
an unknown job, a Cray node; each leaves the job unchanged with no u/c record. And --version."""

from __future__ import annotations

import re

import pytest

from ptl_tests.ramp_down.assignment import unchanged
from ptl_tests.ramp_down.evidence import accounting
from ptl_tests.ramp_down.jobs import PLAIN_HOST
from ptl_tests.ramp_down_helpers import SUPERCHUNK_VNODES

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.ramp_down,
    pytest.mark.needs_moms(3),
    pytest.mark.requires_feature("pbs_release_nodes"),
]


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
def test_error_primary_execution_host(pbs, roles, running_job, conformance) -> None:
    job_id, before, since = running_job
    res = pbs.jobs.release_nodes(job_id, [roles.primary], user=roles.owner)
    assert not res.ok
    assert (
        res.stderr.strip() == f"pbs_release_nodes: Can't free '{roles.primary}' since it's on a primary execution host"
    )
    conformance.difference(
        "RD-1",
        spec_says="pbs_release_nodes: Can't free '<vnode>' since it's on an MS host",
        openpbs_does=res.stderr.strip(),
        evidence=res.stderr.strip(),
    )
    unchanged(pbs, job_id, before)
    assert accounting(pbs).of(job_id, "uc", since) == []


class BareSystemError(AssertionError):
    """pbs_release_nodes of a vnode outside the job answered with the bare PBSE_SYSTEM text."""


# What OpenPBS 23.06.06 prints instead of naming the vnode (the job id may follow).
BARE_15010 = re.compile(r"pbs_release_nodes: Server returned error 15010 for job( \S+)?")


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
@pytest.mark.parametrize("where", ["vnode of a job host", "host outside the job"])
@pytest.mark.xfail(
    strict=True,
    raises=BareSystemError,
    reason="OpenPBS (master, 23.06.06, 22.05.11) answers a vnode that is not part of the job with a bare "
    "'pbs_release_nodes: Server returned error 15010 for job' (PBSE_SYSTEM) instead of naming the vnode",
)
def test_error_vnode_not_part_of_the_job(pbs, roles, running_job, conformance, where: str) -> None:
    job_id, before, since = running_job
    if where == "host outside the job":
        vnode = roles.plain_hosts(2)[1]  # a plain host the standard job does not use
    else:
        spare = sorted(v for v in pbs.nodes.all() if v.startswith(f"{roles.multi}[") and v not in before["exec_vnode"])
        if not spare:
            pytest.skip(
                f"needs a vnode of the multi-vnode host that the job does not use (more than {SUPERCHUNK_VNODES}): "
                "add one to its openpbs_mom_vnode_layouts entry"
            )
        vnode = spare[-1]
    res = pbs.jobs.release_nodes(job_id, [vnode], user=roles.owner)
    assert not res.ok
    unchanged(pbs, job_id, before)
    assert accounting(pbs).of(job_id, "uc", since) == []
    conformance.difference(
        "RD-1",
        spec_says=f"pbs_release_nodes: these nodes are not part of the job: {vnode}",
        openpbs_does=res.stderr.strip(),
        evidence=f"pbs_release_nodes -j {job_id} {vnode} -> {res.stderr.strip()}",
    )
    if BARE_15010.fullmatch(res.stderr.strip()):
        raise BareSystemError(res.stderr.strip())
    assert f"not part of the job: {vnode}" in res.stderr, res.stderr.strip()


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
def test_error_not_the_owner(pbs, roles, running_job) -> None:
    job_id, before, since = running_job
    res = pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.other)
    assert not res.ok
    assert res.stderr.strip() == "pbs_release_nodes: Unauthorized Request"
    unchanged(pbs, job_id, before)
    assert accounting(pbs).of(job_id, "uc", since) == []


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
@pytest.mark.parametrize(
    ("args", "stderr_start"),
    [
        (["-a", PLAIN_HOST], "usage: pbs_release_nodes"),
        (["-a", "-k", "1"], "pbs_release_nodes: -a and -k options cannot be used together"),
        (["-k", "1", PLAIN_HOST], "pbs_release_nodes: cannot supply node list with -k option"),
    ],
)
def test_usage_errors_change_nothing(pbs, cluster, roles, running_job, *, args: list[str], stderr_start: str) -> None:
    job_id, before, since = running_job
    args = [roles.plain if a == PLAIN_HOST else a for a in args]
    res = pbs.jobs.run("pbs_release_nodes", "-j", job_id, *args, user=roles.owner)
    assert not res.ok
    assert res.stderr.startswith(stderr_start), res.stderr
    unchanged(pbs, job_id, before)
    assert accounting(pbs).of(job_id, "uc", since) == []


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
def test_error_unknown_job(pbs, roles) -> None:
    res = pbs.jobs.release_nodes("999999", [roles.plain], user=roles.owner)
    assert not res.ok
    assert res.stderr.strip().startswith("pbs_release_nodes: Unknown Job Id 999999")


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
def test_version_names_the_servers_openpbs(pbs, roles) -> None:
    """`pbs_release_nodes --version` (the spec's third usage line), as any user: the version line
    every OpenPBS client prints, naming the version the server reports."""
    res = pbs.jobs.run("pbs_release_nodes", "--version", user=roles.owner)
    assert (res.ok, res.stderr) == (True, "")
    assert res.stdout.strip() == f"pbs_version = {pbs.server.status()['pbs_version']}"


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
@pytest.mark.parametrize(
    ("args", "stderr_start"),
    [
        ([], "usage: pbs_release_nodes"),
        (["-j", "23"], "usage: pbs_release_nodes"),
        (["-a"], "pbs_release_nodes: No jobid given"),
    ],
    ids=["no arguments", "job only", "-a outside a job"],
)
def test_usage_errors_without_a_job(pbs, roles, args: list[str], stderr_start: str) -> None:
    res = pbs.jobs.run("pbs_release_nodes", *args, user=roles.owner)
    assert not res.ok
    assert res.stderr.startswith(stderr_start), res.stderr


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
def test_error_cray_node(pbs, roles, running_job, request, conformance) -> None:
    """A vnode typed as a Cray XC node cannot be released (vntype is restored before the baseline check)."""
    job_id, before, since = running_job
    assert pbs.server.set({"resources_available.vntype": "cray_login"}, obj="node", name=roles.plain).ok
    request.addfinalizer(lambda: pbs.server.unset("resources_available.vntype", obj="node", name=roles.plain))
    res = pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner)
    assert not res.ok
    assert res.stderr.strip() == f"pbs_release_nodes: not currently supported on Cray X* series nodes: {roles.plain}"
    unchanged(pbs, job_id, before)
    assert accounting(pbs).of(job_id, "uc", since) == []
    conformance.difference(
        "RD-1",
        spec_says=f"pbs_release_nodes: not currently supported on Cray XC systems nodes: {roles.plain}",
        openpbs_does=res.stderr.strip(),
        evidence=res.stderr.strip(),
    )
