"""Releasing vnodes by name (RD-1, RD-3, RD-4, RD-6): a whole sister host, part of the super-chunk,
a host's vnodes one after the other, every sister (-a), vnodes of several hosts in one call, and a
host shared with another job."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from pbs_harness.common.waits import wait_until
from pbs_harness.pbs.evidence import pick
from pbs_harness.pbs.evidence.logs import mom_log, server_log
from ptl_tests.ramp_down.assignment import Assignment, assert_job_matches, unchanged
from ptl_tests.ramp_down.evidence import accounting, released_vnode_logs
from ptl_tests.ramp_down.jobs import start_job, start_standard_job, task_pids, wait_tasks_gone, with_extra

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.ramp_down,
    pytest.mark.needs_moms(3),
    pytest.mark.requires_feature("pbs_release_nodes"),
]


@pytest.mark.spec("RD-1", "RD-3", "RD-4", "RD-6")
@pytest.mark.guards("RD-1", "RD-3", "RD-4", "RD-6")
def test_release_whole_sister_host(pbs, cluster, roles, running_job) -> None:
    job_id, before, since = running_job
    expected = Assignment.of(before["exec_vnode"]).without({roles.plain})

    res = pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner)
    assert res.ok, res.stderr

    job = pbs.jobs.status(job_id)
    assert job["job_state"] == "R"
    assert_job_matches(job, expected)
    # The host is cleaned: its task is gone, the mom logged the delete, the node is free again.
    pbs.nodes.wait_state([roles.plain], "free", timeout=30)
    wait_tasks_gone(cluster, roles.owner, roles.plain)
    assert task_pids(cluster, roles.owner, roles.multi)
    assert task_pids(cluster, roles.owner, roles.primary)
    released_vnode_logs(cluster, roles, job_id, Assignment.of(before["exec_vnode"]).only({roles.plain}), since)
    mom_log(cluster, roles.multi).absent(f"Job;{job_id};DELETE_JOB2 received", since)
    # 'u' closes the phase with the old assignment and its usage; 'c' opens the next one.
    u, c = accounting(pbs).expect(job_id, "uc", since, timeout=30)
    assert (u.type, c.type) == ("u", "c")
    assert u.fields["exec_vnode"] == before["exec_vnode"]
    assert "walltime" in u.resources_used
    assert Assignment.of(c.fields["exec_vnode"]) == expected
    assert not c.resources_used
    # The released host runs another job.
    other = pbs.jobs.submit(user=roles.other, select=f"ncpus=2:host={roles.plain}", command=["/bin/sleep", "30"])
    pbs.jobs.wait(other, job_state="R", timeout=60)


@pytest.mark.spec("RD-1", "RD-3", "RD-4", "RD-6")
@pytest.mark.guards("RD-1", "RD-3", "RD-4", "RD-6")
@pytest.mark.parametrize(("position", "extra"), with_extra("left", "middle", "right"))
def test_release_part_of_a_superchunk_keeps_the_host(
    pbs, cluster, roles, request, *, position: str, extra: bool
) -> None:
    job_id, before, since, mpi = start_standard_job(pbs, cluster, roles, request, extra)
    assigned = Assignment.of(before["exec_vnode"])
    superchunk = pick.one([c for c in assigned.chunks if c[0].host == roles.multi], f"one chunk on {roles.multi}", str)
    assert len(superchunk) == 3, f"expected a 3-vnode super-chunk on {roles.multi}: {before['exec_vnode']}"
    vnode = superchunk[{"left": 0, "middle": 1, "right": 2}[position]].vnode

    res = pbs.jobs.release_nodes(job_id, [vnode], user=roles.owner)
    assert res.ok, res.stderr

    job = pbs.jobs.status(job_id)
    assert_job_matches(job, assigned.without({vnode}))
    # A partially released host keeps the job: its vnodes stay busy, its task runs, no DELETE_JOB2.
    # PTL observes the released vnode staying job-busy until the host's last vnode goes.
    assert pbs.nodes.status(vnode)["state"] == "job-busy"
    assert task_pids(cluster, roles.owner, roles.multi)
    mom_log(cluster, roles.multi).absent(f"Job;{job_id};DELETE_JOB2", since)
    # no final usage from the host and no deallocation yet: the job still holds the vnode
    mom_log(cluster, roles.primary).absent(rf"Job;{re.escape(job_id)};{roles.multi} cput=", since)
    server_log(cluster).absent(f"clearing job {re.escape(job_id)} from node", since)
    u, c = accounting(pbs).expect(job_id, "uc", since, timeout=30)
    assert u.fields["exec_vnode"] == before["exec_vnode"]
    assert Assignment.of(c.fields["exec_vnode"]) == assigned.without({vnode})
    if mpi:  # the cut super-chunk keeps mpiprocs=3: its host stays three times in $PBS_NODEFILE
        mpi.check(job_id, "after")


@pytest.mark.spec("RD-1", "RD-6")
@pytest.mark.guards("RD-1", "RD-6")
def test_successive_releases_free_the_host_with_its_last_vnode(pbs, cluster, roles, running_job) -> None:
    job_id, before, since = running_job
    assigned = Assignment.of(before["exec_vnode"])
    multi_vnodes = sorted(s.vnode for c in assigned.chunks for s in c if s.host == roles.multi)
    first, rest = multi_vnodes[:1], multi_vnodes[1:]
    multi_log = mom_log(cluster, roles.multi)

    assert pbs.jobs.release_nodes(job_id, first, user=roles.owner).ok
    multi_log.absent(f"Job;{job_id};DELETE_JOB2", since)
    assert task_pids(cluster, roles.owner, roles.multi)

    assert pbs.jobs.release_nodes(job_id, rest, user=roles.owner).ok
    assert_job_matches(pbs.jobs.status(job_id), assigned.without(set(multi_vnodes)))
    released_vnode_logs(cluster, roles, job_id, assigned.only(set(multi_vnodes)), since)
    pbs.nodes.wait_state(multi_vnodes, "free", timeout=30)
    wait_tasks_gone(cluster, roles.owner, roles.multi)
    records = accounting(pbs).wait_for(job_id, "uc", 4, since, timeout=30)
    assert [r.type for r in records] == ["u", "c", "u", "c"]


@pytest.mark.spec("RD-1", "RD-3", "RD-4")
@pytest.mark.guards("RD-1")
@pytest.mark.parametrize("who", ["owner", "root", "manager", "operator"])
def test_release_all_sisters(pbs, cluster, roles, running_job, who: str) -> None:
    job_id, before, since = running_job
    user = roles.topology.users.account(who)
    res = pbs.jobs.release_nodes(job_id, all_sisters=True, user=user)
    assert res.ok, res.stderr
    expected = Assignment(tuple(c for c in Assignment.of(before["exec_vnode"]).chunks if c[0].host == roles.primary))
    assert_job_matches(pbs.jobs.status(job_id), expected)
    pbs.nodes.wait_state([roles.plain, roles.multi], "free", timeout=30)
    accounting(pbs).expect(job_id, "uc", since, timeout=30)


@pytest.mark.spec("RD-1", "RD-3", "RD-4", "RD-6")
@pytest.mark.guards("RD-1", "RD-4", "RD-6")
@pytest.mark.parametrize(
    ("which", "extra"), with_extra("part of the super-chunk and the plain host", "every sister vnode by name")
)
def test_release_vnodes_of_several_hosts_in_one_call(pbs, cluster, roles, request, *, which: str, extra: bool) -> None:
    job_id, before, since, mpi = start_standard_job(pbs, cluster, roles, request, extra)
    assigned = Assignment.of(before["exec_vnode"])
    superchunk = pick.one([c for c in assigned.chunks if c[0].host == roles.multi], f"one chunk on {roles.multi}", str)
    multi = [s.vnode for s in superchunk]
    vnodes = [*multi[1:], roles.plain] if which.startswith("part") else [*multi, roles.plain]

    res = pbs.jobs.release_nodes(job_id, vnodes, user=roles.owner)
    assert res.ok, res.stderr

    assert_job_matches(pbs.jobs.status(job_id), assigned.without(set(vnodes)))
    freed_hosts = {roles.plain} if which.startswith("part") else {roles.plain, roles.multi}
    released_vnode_logs(
        cluster, roles, job_id, assigned.only({v for v in vnodes if v.split("[")[0] in freed_hosts}), since
    )
    if roles.multi not in freed_hosts:
        mom_log(cluster, roles.multi).absent(f"Job;{job_id};DELETE_JOB2", since)
        assert {pbs.nodes.status(v)["state"] for v in vnodes if v != roles.plain} == {"job-busy"}
    _u, c = accounting(pbs).expect(job_id, "uc", since, timeout=30)
    assert Assignment.of(c.fields["exec_vnode"]) == assigned.without(set(vnodes))
    if mpi:
        mpi.check(job_id, "after")


def task_jobs(cluster, owner: str, host: str) -> Counter:
    """How many of the owner's `sleep` tasks on the host each job has (PBS_JOBID of their environment)."""
    pids = " ".join(task_pids(cluster, owner, host))
    if not pids:
        return Counter()
    out = cluster.hosts[host].run(f"for p in {pids}; do tr '\\0' '\\n' < /proc/$p/environ | grep '^PBS_JOBID='; done")
    return Counter(line.split("=", 1)[1] for line in out.stdout.split())


def node_jobs(pbs, vnode: str) -> list[str]:
    """Job ids of a vnode's `jobs` attribute (entries "<job id>/<cpu index>")."""
    jobs = pbs.nodes.status(vnode).get("jobs") or []
    entries = jobs if isinstance(jobs, list) else str(jobs).split(",")
    return sorted({e.strip().split("/")[0] for e in entries if e.strip()})


@pytest.mark.spec("RD-1", "RD-6")
@pytest.mark.guards("RD-1", "RD-6")
def test_release_a_shared_host_from_one_job_only(pbs, cluster, roles) -> None:
    """PTL #46 test_release_multi_jobs: two jobs share the same 2-cpu hosts (one cpu each); releasing
    the plain host from the first ends only its task there: DELETE_JOB2 and the primary mom's cput line
    for the first job only, the second job's task, assignment and cpu on the plain host stay."""
    shared = roles.plain_hosts(2)[1]  # another plain host, shared by both jobs too
    select = f"ncpus=1:host={roles.primary}+ncpus=1:host={roles.plain}+ncpus=1:host={shared}"
    first, first_before, since = start_job(pbs, cluster, roles, select=select)
    second, second_before, _ = start_job(pbs, cluster, roles, select=select)
    both = Counter({first: 1, second: 1})
    for host in (roles.plain, shared):
        wait_until(
            lambda h=host: task_jobs(cluster, roles.owner, h),
            lambda got: got == both,
            timeout=30,
            describe=f"{host} tasks",
        )
    assert node_jobs(pbs, roles.plain) == sorted([first, second])

    res = pbs.jobs.release_nodes(first, [roles.plain], user=roles.owner)
    assert res.ok, res.stderr

    assert_job_matches(pbs.jobs.status(first), Assignment.of(first_before["exec_vnode"]).without({roles.plain}))
    plain_log = mom_log(cluster, roles.plain)
    ms_log = mom_log(cluster, roles.primary)
    plain_log.expect(f"Job;{re.escape(first)};DELETE_JOB2 received", since, 30)
    ms_log.expect(rf"Job;{re.escape(first)};{roles.plain} cput=\d\d:\d\d:\d\d mem=\d+kb$", since, 30)
    wait_until(
        lambda: task_jobs(cluster, roles.owner, roles.plain),
        lambda got: got == Counter({second: 1}),
        timeout=30,
        describe=f"only {second}'s task left on {roles.plain}",
    )
    assert task_jobs(cluster, roles.owner, shared) == both
    wait_until(
        lambda: node_jobs(pbs, roles.plain), lambda got: got == [second], timeout=30, describe=f"{roles.plain} jobs"
    )
    assert int(pbs.nodes.status(roles.plain)["resources_assigned"]["ncpus"]) == 1  # the second job's chunk
    unchanged(pbs, second, second_before)
    plain_log.absent(f"Job;{re.escape(second)};DELETE_JOB2", since)
    ms_log.absent(rf"Job;{re.escape(second)};{roles.plain} cput=", since)
    accounting(pbs).expect(first, "uc", since, timeout=30)
    assert accounting(pbs).of(second, "uc", since) == []
