"""Node ramp-down: pbs_release_nodes on real OpenPBS (spec: node-ramp-down.txt).

Layout used (inventory/local): pbsh01 is the primary (server host), pbsh02 a plain 2-cpu host,
pbsh06 a multi-vnode host (natural vnode + pbsh06[0..3], 1 cpu / 1gb each). The standard job
pins one chunk to each, so the middle chunk is a super-chunk over three pbsh06 vnodes:

    select = ncpus=1:host=pbsh01 + ncpus=3:mem=2gb:host=pbsh06 + ncpus=2:mem=2gb:host=pbsh02

Expected values after a release are computed from the job's own exec_vnode before the release
(the spec's rule: the released vnodes' slices leave exec_vnode, an emptied chunk leaves the job),
then compared with what OpenPBS reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from pbs_harness.evidence.accounting import AccountingReader
from pbs_harness.evidence.logs import LogReader
from pbs_harness.pbs.interactive import InteractiveJob
from pbs_harness.pbs.parsers import VnodeSlice, parse_exec_host, parse_exec_vnode, parse_select, size_kb
from pbs_harness.waits import wait_until
from ptl_tests import jobscripts

pytestmark = [pytest.mark.acceptance, pytest.mark.ramp_down, pytest.mark.needs_moms(3)]

MS, PLAIN, MULTI = "pbsh01", "pbsh02", "pbsh06"
SELECT = f"ncpus=1:host={MS}+ncpus=3:mem=2gb:host={MULTI}+ncpus=2:mem=2gb:host={PLAIN}"
OWNER, OTHER = "pbsuser1", "pbsuser2"
SLEEP = 3017  # the job's tasks run `sleep 3017`: easy to find with ps on each host


@dataclass(frozen=True)
class Assignment:
    """A job's exec_vnode as chunks of vnode slices, and what follows from it."""

    chunks: tuple[tuple[VnodeSlice, ...], ...]

    @classmethod
    def of(cls, exec_vnode: str) -> Assignment:
        return cls(tuple(tuple(chunk) for chunk in parse_exec_vnode(exec_vnode)))

    def without(self, vnodes: set[str]) -> Assignment:
        kept = (tuple(s for s in chunk if s.vnode not in vnodes) for chunk in self.chunks)
        return Assignment(tuple(chunk for chunk in kept if chunk))

    def hosts(self) -> list[str]:
        return list(dict.fromkeys(s.host for chunk in self.chunks for s in chunk))

    def vnodes(self) -> set[str]:
        return {s.vnode for chunk in self.chunks for s in chunk}

    def per_chunk(self) -> list[tuple[int, int]]:
        """(ncpus, mem kb) of each chunk."""
        return [
            (sum(int(s.resources.get("ncpus", 0)) for s in c), sum(size_kb(s.resources.get("mem", 0)) for s in c))
            for c in self.chunks
        ]


def chunk_totals(select: str) -> list[tuple[int, int]]:
    """(ncpus, mem kb) of each single chunk of a select/schedselect value."""
    out = []
    for chunk in parse_select(select):
        out += [(int(chunk.resources.get("ncpus", 0)), size_kb(chunk.resources.get("mem", 0)))] * chunk.count
    return out


def assert_job_matches(job: dict, expected: Assignment) -> None:
    """exec_vnode, exec_host, Resource_List and schedselect all describe `expected`."""
    __tracebackhide__ = True
    got = Assignment.of(job["exec_vnode"])
    assert got == expected, f"exec_vnode {job['exec_vnode']}"
    assert [e.host for e in parse_exec_host(job["exec_host"])] == expected.hosts()
    rl = job["Resource_List"]
    assert int(rl["ncpus"]) == sum(c for c, _ in expected.per_chunk())
    mem_kb = sum(m for _, m in expected.per_chunk())
    if mem_kb:
        assert size_kb(rl["mem"]) == mem_kb
    else:  # no kept chunk asks for memory: OpenPBS drops Resource_List.mem altogether
        assert "mem" not in rl, rl
    assert int(rl["nodect"]) == len(expected.chunks)
    assert chunk_totals(job["schedselect"]) == expected.per_chunk()
    assert chunk_totals(rl["select"]) == expected.per_chunk()


def task_pids(cluster, host: str) -> list[str]:
    res = cluster.hosts[host].run(["pgrep", "-u", OWNER, "-f", f"^/bin/sleep {SLEEP}$"])
    return res.stdout.split()


@pytest.fixture
def running_job(pbs, cluster):
    """The standard job, running, with a sleep task on each of its three hosts."""
    since = datetime.now() - timedelta(seconds=1)
    job_id = pbs.jobs.submit(
        jobscripts.sleep_on_every_chunk(str(cluster.prefix), SLEEP),
        user=OWNER,
        select=SELECT,
        place="scatter",
        cwd=f"/home/{OWNER}",
        args=["-j", "oe", "-o", "/dev/null"],
    )
    job = pbs.jobs.wait(job_id, job_state="R", substate=42, timeout=60)
    wait_until(
        lambda: {h: task_pids(cluster, h) for h in (MS, MULTI, PLAIN)},
        lambda pids: all(pids.values()),
        timeout=30,
        describe="the job's sleep task on every host",
    )
    return job_id, job, since


def accounting(pbs) -> AccountingReader:
    return AccountingReader(pbs.cluster.server, str(pbs.cluster.pbs_home))


@pytest.mark.spec("RD-1", "RD-3", "RD-4", "RD-6")
def test_release_whole_sister_host(pbs, cluster, running_job) -> None:
    job_id, before, since = running_job
    expected = Assignment.of(before["exec_vnode"]).without({PLAIN})

    res = pbs.jobs.release_nodes(job_id, [PLAIN], user=OWNER)
    assert res.ok, res.stderr

    job = pbs.jobs.status(job_id)
    assert job["job_state"] == "R"
    assert_job_matches(job, expected)
    # The host is cleaned: its task is gone, the mom logged the delete, the node is free again.
    pbs.nodes.wait_state([PLAIN], "free", timeout=30)
    wait_until(lambda: task_pids(cluster, PLAIN), lambda p: not p, timeout=30, describe=f"no job task on {PLAIN}")
    assert task_pids(cluster, MULTI)
    assert task_pids(cluster, MS)
    home = str(cluster.pbs_home)
    LogReader(cluster.hosts[PLAIN], home, "mom").expect(f"Job;{job_id};DELETE_JOB2 received", since, timeout=30)
    LogReader(cluster.hosts[MULTI], home, "mom").absent(f"Job;{job_id};DELETE_JOB2 received", since)
    # 'u' closes the phase with the old assignment and its usage; 'c' opens the next one.
    u, c = accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)
    assert (u.type, c.type) == ("u", "c")
    assert u.fields["exec_vnode"] == before["exec_vnode"]
    assert "walltime" in u.resources_used
    assert Assignment.of(c.fields["exec_vnode"]) == expected
    assert not c.resources_used
    # The released host runs another job.
    other = pbs.jobs.submit(user=OTHER, select=f"ncpus=2:host={PLAIN}", command=["/bin/sleep", "30"])
    pbs.jobs.wait(other, job_state="R", timeout=60)


@pytest.mark.spec("RD-1", "RD-3", "RD-4", "RD-6")
@pytest.mark.parametrize("position", ["left", "middle", "right"])
def test_release_part_of_a_superchunk_keeps_the_host(pbs, cluster, running_job, position: str) -> None:
    job_id, before, since = running_job
    assigned = Assignment.of(before["exec_vnode"])
    superchunk = next(chunk for chunk in assigned.chunks if chunk[0].host == MULTI)
    assert len(superchunk) == 3, f"expected a 3-vnode super-chunk on {MULTI}: {before['exec_vnode']}"
    vnode = superchunk[{"left": 0, "middle": 1, "right": 2}[position]].vnode

    res = pbs.jobs.release_nodes(job_id, [vnode], user=OWNER)
    assert res.ok, res.stderr

    job = pbs.jobs.status(job_id)
    assert_job_matches(job, assigned.without({vnode}))
    # A partially released host keeps the job: its vnodes stay busy, its task runs, no DELETE_JOB2.
    # PTL observes the released vnode staying job-busy until the host's last vnode goes.
    assert pbs.nodes.status(vnode)["state"] == "job-busy"
    assert task_pids(cluster, MULTI)
    LogReader(cluster.hosts[MULTI], str(cluster.pbs_home), "mom").absent(f"Job;{job_id};DELETE_JOB2", since)
    u, c = accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)
    assert u.fields["exec_vnode"] == before["exec_vnode"]
    assert Assignment.of(c.fields["exec_vnode"]) == assigned.without({vnode})


@pytest.mark.spec("RD-1", "RD-6")
def test_successive_releases_free_the_host_with_its_last_vnode(pbs, cluster, running_job) -> None:
    job_id, before, since = running_job
    assigned = Assignment.of(before["exec_vnode"])
    multi_vnodes = sorted(v for v in assigned.vnodes() if v.startswith(MULTI))
    first, rest = multi_vnodes[:1], multi_vnodes[1:]
    home = str(cluster.pbs_home)
    mom_log = LogReader(cluster.hosts[MULTI], home, "mom")

    assert pbs.jobs.release_nodes(job_id, first, user=OWNER).ok
    mom_log.absent(f"Job;{job_id};DELETE_JOB2", since)
    assert task_pids(cluster, MULTI)

    assert pbs.jobs.release_nodes(job_id, rest, user=OWNER).ok
    assert_job_matches(pbs.jobs.status(job_id), assigned.without(set(multi_vnodes)))
    mom_log.expect(f"Job;{job_id};DELETE_JOB2 received", since, timeout=30)
    pbs.nodes.wait_state(multi_vnodes, "free", timeout=30)
    wait_until(lambda: task_pids(cluster, MULTI), lambda p: not p, timeout=30, describe=f"no job task on {MULTI}")
    records = accounting(pbs).wait_for(job_id, "uc", 4, since, timeout=30)
    assert [r.type for r in records] == ["u", "c", "u", "c"]


@pytest.mark.spec("RD-1", "RD-3", "RD-4")
@pytest.mark.parametrize("who", [OWNER, "root", "pbsmgr", "pbsoper"])
def test_release_all_sisters(pbs, cluster, running_job, who: str) -> None:
    job_id, before, since = running_job
    user = None if who == "root" else who
    res = pbs.jobs.release_nodes(job_id, all_sisters=True, user=user)
    assert res.ok, res.stderr
    expected = Assignment(tuple(c for c in Assignment.of(before["exec_vnode"]).chunks if c[0].host == MS))
    assert_job_matches(pbs.jobs.status(job_id), expected)
    pbs.nodes.wait_state([PLAIN, MULTI], "free", timeout=30)
    accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)


@pytest.mark.spec("RD-1", "RD-5")
def test_end_records_after_a_release(pbs, running_job) -> None:
    """'e' closes the last phase with the pruned assignment; 'E' keeps the original request."""
    job_id, before, since = running_job
    assert pbs.jobs.release_nodes(job_id, [PLAIN], user=OWNER).ok
    after = pbs.jobs.status(job_id)
    assert pbs.jobs.delete(job_id, user=OWNER).ok
    pbs.jobs.wait(job_id, job_state="F", timeout=60)
    records = accounting(pbs).wait_for(job_id, "ucE", 3, since, timeout=30)
    e_records = accounting(pbs).of(job_id, "e", since)
    end = records[-1]
    assert end.type == "E"
    assert int(end.resource_list["ncpus"]) == int(before["Resource_List"]["ncpus"])
    assert size_kb(end.resource_list["mem"]) == size_kb(before["Resource_List"]["mem"])
    assert len(e_records) == 1
    assert e_records[0].fields["exec_vnode"] == after["exec_vnode"]
    u = records[0]
    walltime = {r.type: r.resources_used.get("walltime") for r in (u, e_records[0], end)}
    assert all(walltime.values()), walltime


def unchanged(pbs, job_id: str, before: dict) -> None:
    __tracebackhide__ = True
    now = pbs.jobs.status(job_id)
    for key in ("exec_vnode", "exec_host", "schedselect"):
        assert now[key] == before[key], key
    assert now["Resource_List"] == before["Resource_List"]


@pytest.mark.spec("RD-1")
def test_error_primary_execution_host(pbs, running_job, conformance) -> None:
    job_id, before, since = running_job
    res = pbs.jobs.release_nodes(job_id, [MS], user=OWNER)
    assert not res.ok
    assert res.stderr.strip() == f"pbs_release_nodes: Can't free '{MS}' since it's on a primary execution host"
    conformance.difference(
        "RD-1",
        spec_says="pbs_release_nodes: Can't free '<vnode>' since it's on an MS host",
        openpbs_does=res.stderr.strip(),
        evidence=res.stderr.strip(),
    )
    unchanged(pbs, job_id, before)
    assert accounting(pbs).of(job_id, "uc", since) == []


@pytest.mark.spec("RD-1")
@pytest.mark.parametrize("where", ["vnode of a job host", "host outside the job"])
@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="OpenPBS 23.06.06 answers a vnode that is not part of the job with a bare "
    "'pbs_release_nodes: Server returned error 15010 for job' (PBSE_SYSTEM) instead of naming the vnode",
)
def test_error_vnode_not_part_of_the_job(pbs, running_job, conformance, where: str) -> None:
    job_id, before, since = running_job
    if where == "host outside the job":
        vnode = "pbsh03"
    else:
        vnode = sorted(v for v in pbs.nodes.all() if v.startswith(f"{MULTI}[") and v not in before["exec_vnode"])[-1]
    res = pbs.jobs.release_nodes(job_id, [vnode], user=OWNER)
    assert not res.ok
    unchanged(pbs, job_id, before)
    assert accounting(pbs).of(job_id, "uc", since) == []
    conformance.difference(
        "RD-1",
        spec_says=f"pbs_release_nodes: these nodes are not part of the job: {vnode}",
        openpbs_does=res.stderr.strip(),
        evidence=f"pbs_release_nodes -j {job_id} {vnode} -> {res.stderr.strip()}",
    )
    assert f"not part of the job: {vnode}" in res.stderr, res.stderr.strip()


@pytest.mark.spec("RD-1")
def test_error_not_the_owner(pbs, running_job) -> None:
    job_id, before, since = running_job
    res = pbs.jobs.release_nodes(job_id, [PLAIN], user=OTHER)
    assert not res.ok
    assert res.stderr.strip() == "pbs_release_nodes: Unauthorized Request"
    unchanged(pbs, job_id, before)
    assert accounting(pbs).of(job_id, "uc", since) == []


@pytest.mark.spec("RD-1")
@pytest.mark.parametrize(
    ("args", "stderr_start"),
    [
        (["-a", PLAIN], "usage: pbs_release_nodes"),
        (["-a", "-k", "1"], "pbs_release_nodes: -a and -k options cannot be used together"),
        (["-k", "1", PLAIN], "pbs_release_nodes: cannot supply node list with -k option"),
    ],
)
def test_usage_errors_change_nothing(pbs, cluster, running_job, args: list[str], stderr_start: str) -> None:
    job_id, before, since = running_job
    res = pbs.jobs.run("pbs_release_nodes", "-j", job_id, *args, user=OWNER)
    assert not res.ok
    assert res.stderr.startswith(stderr_start), res.stderr
    unchanged(pbs, job_id, before)
    assert accounting(pbs).of(job_id, "uc", since) == []


@pytest.mark.spec("RD-1")
def test_error_unknown_job(pbs) -> None:
    res = pbs.jobs.release_nodes("999999", [PLAIN], user=OWNER)
    assert not res.ok
    assert res.stderr.strip().startswith("pbs_release_nodes: Unknown Job Id 999999")


@pytest.mark.spec("RD-1")
def test_error_job_not_running(pbs) -> None:
    job_id = pbs.jobs.submit(user=OWNER, select=SELECT, place="scatter", args=["-h"], command=["/bin/sleep", "60"])
    pbs.jobs.wait(job_id, job_state="H", timeout=30)
    res = pbs.jobs.release_nodes(job_id, [PLAIN], user=OWNER)
    assert not res.ok
    assert res.stderr.strip() == "pbs_release_nodes: Request invalid for state of job"


@pytest.mark.spec("RD-1")
def test_nodefile_shrinks_and_jobid_comes_from_the_environment_in_an_interactive_job(pbs, cluster) -> None:
    """Inside the job, `pbs_release_nodes HOST` (no -j) uses $PBS_JOBID, and $PBS_NODEFILE loses HOST."""
    args = ["-l", f"select={SELECT}", "-l", "place=scatter"]
    with InteractiveJob(cluster, OWNER, args) as session:
        assert sorted(set(session.run('cat "$PBS_NODEFILE"').split())) == sorted([MS, MULTI, PLAIN])
        pbs.jobs.wait(session.job_id, job_state="R", substate=42, timeout=30)
        out = session.run(f"{cluster.bin('pbs_release_nodes')} {PLAIN}; echo rc=$?")
        assert out.splitlines()[-1] == "rc=0", out
        assert sorted(set(session.run('cat "$PBS_NODEFILE"').split())) == sorted([MS, MULTI])
        assert PLAIN not in [e.host for e in parse_exec_host(pbs.jobs.status(session.job_id)["exec_host"])]
