"""keep_select: pbs_release_nodes -k (RD-1), with a select (custom resources of every type, a
consumable host resource, part of a super-chunk) or a node count, and its errors."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pbs_harness.pbs.evidence import pick
from pbs_harness.pbs.evidence.logs import mom_log
from pbs_harness.pbs.parsers import parse_exec_host, parse_select
from ptl_tests.ramp_down.assignment import Assignment, assert_job_matches, unchanged
from ptl_tests.ramp_down.evidence import accounting, released_vnode_logs
from ptl_tests.ramp_down.jobs import start_job, task_pids
from ptl_tests.ramp_down_helpers import (
    CUSTOM_RESOURCES,
    CustomResource,
    Roles,
    node_count_order,
    resource_terms,
    satisfy_chunk_need,
    standard_select,
)

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.ramp_down,
    pytest.mark.needs_moms(3),
    pytest.mark.requires_feature("pbs_release_nodes"),
]


@pytest.fixture(scope="module")
def custom_resources(pbs):
    """The custom resources of CUSTOM_RESOURCES, defined for this module. Resource definitions are
    not part of the baseline, so they are deleted here; a definition cannot be deleted while any job
    (finished ones in the history too) requests it, so those jobs are purged from the history first."""
    for r in CUSTOM_RESOURCES:
        pbs.server.qmgr(f"create resource {r.name} type={r.type},flag=h")
    yield CUSTOM_RESOURCES
    for job_id, job in pbs.jobs.all(history=True).items():
        if "rd_" in str(job.get("schedselect", "")):
            pbs.jobs.forget(job_id)
    problems = [
        f"{r.name}: {res.stderr.strip()}"
        for r in CUSTOM_RESOURCES
        if not (res := pbs.server.qmgr(f"delete resource {r.name}")).ok
    ]
    assert not problems, f"custom resources left defined: {problems}"


def keep_hosts(roles: Roles) -> list[str]:
    """The keep_select sisters: three plain 2-cpu hosts, the plain host first (one chunk each)."""
    return roles.plain_hosts(3)


def keep_layout_select(roles: Roles, resources: tuple[CustomResource, ...]) -> str:
    """Primary chunk + one 'kept'-valued 1-cpu chunk + two 'other'-valued chunks of 2 and 1 cpus."""
    kept, other = resource_terms(resources, "kept"), resource_terms(resources, "other")
    a, b, c = keep_hosts(roles)
    return f"ncpus=1:host={roles.primary}+ncpus=1{kept}:host={a}+ncpus=2{other}:host={b}+ncpus=1{other}:host={c}"


@dataclass(frozen=True)
class KeepCase:
    resources: tuple[CustomResource, ...]
    keep: str  # the -k value
    kept: tuple[int, ...]  # which keep hosts stay, in the order of the -k select: the new exec_vnode follows it
    as_root: bool = False  # else the owner releases


def keep_cases():
    for r in CUSTOM_RESOURCES:
        both = f"select=ncpus=2{resource_terms((r,), 'other')}+ncpus=1{resource_terms((r,), 'kept')}"
        yield pytest.param(KeepCase((r,), both, (1, 0)), id=f"{r.type}-full")
    mixed = CUSTOM_RESOURCES
    both = f"select=ncpus=2{resource_terms(mixed, 'other')}+ncpus=1{resource_terms(mixed, 'kept')}"
    yield pytest.param(KeepCase(mixed, both, (1, 0), as_root=True), id="mixed-full-as-root")
    partial = f"select=1{resource_terms(mixed, 'kept')}"
    yield pytest.param(KeepCase(mixed, partial, (0,)), id="mixed-partial")


def custom_values(select: str) -> list[dict[str, str]]:
    """The rd_* resources of each chunk of a select value (values lower-cased: True/true)."""
    out = []
    for chunk in parse_select(select):
        values = {k: str(v).lower() for k, v in chunk.resources.items() if k.startswith("rd_")}
        out += [values] * chunk.count
    return out


@pytest.mark.spec("RD-1", "RD-3", "RD-4")
@pytest.mark.guards("RD-1", "RD-4")
@pytest.mark.parametrize("case", list(keep_cases()))
def test_keep_select_with_custom_resources(pbs, cluster, roles, custom_resources, request, *, case: KeepCase) -> None:
    """-k select=... keeps the primary's chunk plus the chunks matching the select, by the chunks'
    custom resources of every type, in the order of the -k select; the other hosts are released."""
    hosts = keep_hosts(roles)
    kept_hosts = [hosts[i] for i in case.kept]
    if any(r.type == "boolean" for r in case.resources):
        # The scheduler checks booleans (unset means False): the kept host must offer True.
        kept_host, name = (
            hosts[0],
            pick.first([r.name for r in case.resources if r.type == "boolean"], "a boolean resource"),
        )
        assert pbs.server.set({f"resources_available.{name}": True}, obj="node", name=kept_host).ok
        request.addfinalizer(lambda: pbs.server.unset(f"resources_available.{name}", obj="node", name=kept_host))
    job_id, before, since = start_job(pbs, cluster, roles, select=keep_layout_select(roles, case.resources))
    assigned = Assignment.of(before["exec_vnode"])
    by_host = {chunk[0].host: chunk for chunk in assigned.chunks}
    expected = Assignment((by_host[roles.primary], *(by_host[h] for h in kept_hosts)))
    released = assigned.vnodes() - expected.vnodes()

    res = pbs.jobs.release_nodes(job_id, keep=case.keep, user=None if case.as_root else roles.owner)
    assert res.ok, res.stderr

    job = pbs.jobs.status(job_id)
    assert_job_matches(job, expected)
    requested = dict(zip(assigned.hosts(), parse_select(before["Resource_List"]["select"]), strict=True))
    kept_request = "+".join(str(requested[h]) for h in (roles.primary, *kept_hosts))
    assert custom_values(job["Resource_List"]["select"]) == custom_values(kept_request)
    pbs.nodes.wait_state(sorted(released), "free", timeout=30)
    _, c = accounting(pbs).expect(job_id, "uc", since, timeout=30)
    assert Assignment.of(c.fields["exec_vnode"]) == expected


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
def test_keep_select_consumable_host_resource(pbs, cluster, roles) -> None:
    """-k select=1:localssd=1 keeps the chunk holding the consumable localssd; its host keeps it assigned."""
    ssd_host = roles.ssd_host()
    select = f"ncpus=1:host={roles.primary}+ncpus=1:localssd=1:host={ssd_host}+ncpus=2:host={roles.plain}"
    job_id, before, _ = start_job(pbs, cluster, roles, select=select)
    assert pbs.nodes.status(ssd_host)["resources_assigned"]["localssd"] == 1

    res = pbs.jobs.release_nodes(job_id, keep="select=1:localssd=1", user=roles.owner)
    assert res.ok, res.stderr

    expected = Assignment.of(before["exec_vnode"]).without({roles.plain})
    job = pbs.jobs.status(job_id)
    assert_job_matches(job, expected)
    assert "localssd=1" in job["exec_vnode"]
    assert job["Resource_List"]["localssd"] == 1
    pbs.nodes.wait_state([roles.plain], "free", timeout=30)
    assert pbs.nodes.status(ssd_host)["resources_assigned"]["localssd"] == 1


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
@pytest.mark.parametrize(
    ("layout", "count"), [("four single-vnode sisters", "2"), ("super-chunk and plain sister", "1")]
)
def test_keep_node_count(pbs, cluster, roles, layout: str, count: str) -> None:
    """-k N keeps the primary's chunk and N sister chunks, whole (a super-chunk stays whole)."""
    select = keep_layout_select(roles, ()) if layout.startswith("four") else standard_select(roles)
    job_id, before, _ = start_job(pbs, cluster, roles, select=select)
    assigned = Assignment.of(before["exec_vnode"])

    res = pbs.jobs.release_nodes(job_id, keep=count, user=roles.owner)
    assert res.ok, res.stderr

    job = pbs.jobs.status(job_id)
    after = Assignment.of(job["exec_vnode"])
    assert len(after.chunks) == 1 + int(count)
    assert after.chunks[0] == assigned.chunks[0]  # the primary's chunk
    assert all(chunk in assigned.chunks for chunk in after.chunks), "kept chunks are kept whole"
    released = assigned.vnodes() - after.vnodes()
    assert_job_matches(job, assigned.without(released))
    pbs.nodes.wait_state(sorted(released), "free", timeout=30)


@pytest.mark.spec("RD-1", "RD-3", "RD-4")
@pytest.mark.guards("RD-1", "RD-3", "RD-4")
def test_keep_select_takes_part_of_a_superchunk(pbs, cluster, roles, conformance) -> None:
    """PTL keep_select #17: a -k chunk asking fewer cpus than the super-chunk has keeps only part of it.

    The plain host's chunk has 1 cpu, so only the 3-cpu super-chunk can give ncpus=2; the server walks
    its vnodes in exec_vnode order and keeps them until 2 cpus are reached (satisfy_chunk_need), the
    third vnode leaves exec_vnode and the plain host leaves the job. The host keeps the job (a part
    of it is kept). The new select is made of the matched chunks' own requests (vnparse.c:
    append_and_group_sched_sel(have->chunkspec)), so Resource_List and schedselect keep ncpus=3 for
    the cut chunk (Resource_List.ncpus = 1 + 3) while exec_vnode holds 2 of its cpus: recorded as a
    difference from "qstat shows the updated Resource_List values" (PTL expects the same)."""
    select = f"ncpus=1:host={roles.primary}+ncpus=3:host={roles.multi}+ncpus=1:host={roles.plain}"
    job_id, before, since = start_job(pbs, cluster, roles, select=select)
    assigned = Assignment.of(before["exec_vnode"])
    assert [c[0].host for c in assigned.chunks] == [roles.primary, roles.multi, roles.plain], before["exec_vnode"]
    ms_chunk, multi_chunk, _ = assigned.chunks
    kept_part = satisfy_chunk_need(multi_chunk, {"ncpus": "2"})
    expected = Assignment((ms_chunk, kept_part))
    dropped = {s.vnode for s in multi_chunk} - expected.vnodes()
    assert len(dropped) == 1, f"3 one-cpu vnodes, 2 cpus kept: {before['exec_vnode']}"
    requested = parse_select(before["schedselect"])

    res = pbs.jobs.release_nodes(job_id, keep="select=ncpus=2", user=roles.owner)
    assert res.ok, res.stderr

    job = pbs.jobs.status(job_id)
    assert Assignment.of(job["exec_vnode"]) == expected, job["exec_vnode"]
    assert [e.host for e in parse_exec_host(job["exec_host"])] == [roles.primary, roles.multi]
    kept_requests = [requested[0].resources, requested[1].resources]
    assert [c.resources for c in parse_select(job["schedselect"])] == kept_requests, job["schedselect"]
    assert [c.resources for c in parse_select(job["Resource_List"]["select"])] == kept_requests
    requested_cpus = sum(int(r["ncpus"]) for r in kept_requests)
    held_cpus = sum(c for c, _ in expected.per_chunk())
    assert (int(job["Resource_List"]["ncpus"]), held_cpus) == (requested_cpus, 3)
    assert int(job["Resource_List"]["nodect"]) == 2
    conformance.difference(
        "RD-1",
        spec_says="At every successful pbs_release_nodes call, qstat will show the updated exec_host, exec_vnode, "
        "Resource_List* values",
        openpbs_does="after -k select=ncpus=2 keeps 2 of the 3 cpus of a super-chunk, schedselect, "
        "Resource_List.select and Resource_List.ncpus keep the chunk's request ncpus=3 while exec_vnode holds 2",
        evidence=f"exec_vnode={job['exec_vnode']} schedselect={job['schedselect']} "
        f"Resource_List.ncpus={job['Resource_List']['ncpus']}",
    )
    # the plain host leaves the job; the multi-vnode host keeps it (its task lives, no DELETE_JOB2)
    released_vnode_logs(cluster, roles, job_id, assigned.only({roles.plain}), since)
    pbs.nodes.wait_state([roles.plain], "free", timeout=30)
    mom_log(cluster, roles.multi).absent(f"Job;{job_id};DELETE_JOB2", since)
    assert task_pids(cluster, roles.owner, roles.multi)
    u, c = accounting(pbs).expect(job_id, "uc", since, timeout=30)
    assert u.fields["exec_vnode"] == before["exec_vnode"]
    assert Assignment.of(c.fields["exec_vnode"]) == expected


# PTL keep_select #22's chunks on four single-vnode sisters (four plain hosts, in their order): the
# second and third with the boolean (one resource more)
NODE_COUNT_CHUNKS = (
    "ncpus=1:rd_str=abc:rd_long=7:rd_size=7kb:rd_float=7.1",
    "ncpus=1:rd_str=def:rd_bool=True:rd_long=9:rd_size=9kb:rd_float=9.1",
    "ncpus=2:rd_str=def:rd_bool=True:rd_long=9:rd_size=9kb:rd_float=9.1",
    "ncpus=2:rd_str=xyz:rd_long=10:rd_size=10kb:rd_float=10.1",
)


@pytest.mark.spec("RD-1", "RD-3", "RD-4")
@pytest.mark.guards("RD-1", "RD-4")
def test_keep_node_count_with_mixed_custom_resources(pbs, cluster, roles, custom_resources, request) -> None:
    """PTL keep_select #22: -k 2 on chunks carrying custom resources of every type keeps the primary's
    chunk and the first two sister chunks of the server's order (node_count_order): the two without
    rd_bool have one resource less and come first (like PTL's abc and xyz chunks), the 1-cpu one
    before the 2-cpu one. They are kept whole, with their custom values; the other two hosts are freed."""
    sisters = roles.plain_hosts(len(NODE_COUNT_CHUNKS))
    for host in sisters[1:3]:  # the scheduler checks booleans (unset means False)
        assert pbs.server.set({"resources_available.rd_bool": True}, obj="node", name=host).ok
        request.addfinalizer(lambda h=host: pbs.server.unset("resources_available.rd_bool", obj="node", name=h))
    chunks = (f"{spec}:host={h}" for h, spec in zip(sisters, NODE_COUNT_CHUNKS, strict=True))
    select = f"ncpus=1:host={roles.primary}+" + "+".join(chunks)
    job_id, before, since = start_job(pbs, cluster, roles, select=select)
    assigned = Assignment.of(before["exec_vnode"])
    by_host = {chunk[0].host: chunk for chunk in assigned.chunks}
    requested = dict(zip(assigned.hosts(), parse_select(before["schedselect"]), strict=True))
    kept_hosts = node_count_order({h: c for h, c in requested.items() if h != roles.primary})[:2]
    assert kept_hosts == [sisters[0], sisters[3]]  # the reasoning above, spelled out
    expected = Assignment((by_host[roles.primary], *(by_host[h] for h in kept_hosts)))
    released = assigned.vnodes() - expected.vnodes()

    res = pbs.jobs.release_nodes(job_id, keep="2", user=roles.owner)
    assert res.ok, res.stderr

    job = pbs.jobs.status(job_id)
    assert_job_matches(job, expected)
    kept_request = "+".join(str(requested[h]) for h in (roles.primary, *kept_hosts))
    assert custom_values(job["Resource_List"]["select"]) == custom_values(kept_request)
    assert custom_values(job["schedselect"]) == custom_values(kept_request)
    pbs.nodes.wait_state(sorted(released), "free", timeout=30)
    _, c = accounting(pbs).expect(job_id, "uc", since, timeout=30)
    assert Assignment.of(c.fields["exec_vnode"]) == expected


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
@pytest.mark.parametrize(
    ("keep", "stderr"),
    [
        ("place=scatter", 'pbs_release_nodes: only a "select=" string is valid in -k option'),
        ("select=rd_unknown=1", "pbs_release_nodes: Unknown resource: rd_unknown"),
        ("select=ncpus=4", "pbs_release_nodes: Server returned error 15010 for job"),
        ("5", "pbs_release_nodes: Server returned error 15010 for job"),
    ],
)
def test_keep_select_errors_change_nothing(pbs, roles, running_job, keep: str, stderr: str) -> None:
    """Bad -k values are refused and leave the job alone; a select the job's chunks cannot satisfy
    (no 4-cpu chunk, more chunks than the job has) gets the bare PBSE_SYSTEM reply."""
    job_id, before, since = running_job
    res = pbs.jobs.release_nodes(job_id, keep=keep, user=roles.owner)
    assert not res.ok
    assert res.stderr.strip().startswith(stderr), res.stderr
    unchanged(pbs, job_id, before)
    assert accounting(pbs).of(job_id, "uc", since) == []
