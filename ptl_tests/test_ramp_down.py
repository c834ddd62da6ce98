"""Node ramp-down: pbs_release_nodes on real OpenPBS (spec: node-ramp-down.txt).

Hosts by role, from the cluster topology (`Roles` in ramp_down_helpers.py): the primary (the server
host), a plain 2-cpu host, and the multi-vnode host (on inventory/local: natural vnode + 4 vnodes,
1 cpu / 1gb each). The standard job pins one chunk to each, so the middle chunk is a super-chunk
over three vnodes of the multi-vnode host:

    select = ncpus=1:host=<primary> + ncpus=3:mem=2gb:host=<multi-vnode host> + ncpus=2:mem=2gb:host=<plain host>

Expected values after a release are computed from the job's own exec_vnode before the release
(the spec's rule: the released vnodes' slices leave exec_vnode, an emptied chunk leaves the job),
then compared with what OpenPBS reports.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from pbs_harness.evidence.accounting import AccountingReader, walltime_seconds
from pbs_harness.evidence.logs import mom_log, server_log
from pbs_harness.pbs.interactive import InteractiveJob
from pbs_harness.pbs.parsers import VnodeSlice, parse_exec_host, parse_exec_vnode, parse_select, size_kb, vnodes_of
from pbs_harness.pbs.substates import RUNNING
from pbs_harness.waits import WaitTimeout, wait_until
from ptl_tests import jobscripts
from ptl_tests.hook_files import create_hook, install_hooks
from ptl_tests.ramp_down_helpers import (
    CUSTOM_RESOURCES,
    PRERUN_SUBSTATE,
    RELNODES_ATTR,
    STAGEOUT_SUBSTATE,
    SUPERCHUNK_VNODES,
    BlockedStageout,
    CustomResource,
    Roles,
    TaskEnvReport,
    extra_select,
    hook_log_event_on_this_host,
    hook_set_release_nodes_on_stageout,
    node_count_order,
    resource_terms,
    satisfy_chunk_need,
    standard_select,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.ramp_down, pytest.mark.needs_moms(3)]

BURN = 4  # seconds of wall time the burning task keeps a cpu busy
DEFAULT_MAX_CHECK_POLL = 120  # seconds: MAX_CHECK_POLL_TIME, src/include/mom_func.h
SLEEP = 3017  # the job's tasks run `sleep 3017`: easy to find with ps on each host
PLAIN_HOST = "<plain host>"  # in parameters: replaced by the plain host's name inside the test


@pytest.fixture(scope="module")
def roles(topology) -> Roles:
    """The suite's hosts and users by role (primary, plain, multi-vnode host, owner, other)."""
    return Roles.of(topology)


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

    def only(self, vnodes: set[str]) -> Assignment:
        return self.without(self.vnodes() - vnodes)

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


def task_pids(cluster, owner: str, host: str) -> list[str]:
    res = cluster.hosts[host].run(["pgrep", "-u", owner, "-f", f"^/bin/sleep {SLEEP}$"])
    return res.stdout.split()


def start_job(pbs, cluster, roles: Roles, *, select: str | None = None, attributes=None, args=(), script=None):
    """Submit a job (by default the standard one), wait until it runs with a sleep task on each of
    its hosts; returns (job id, its qstat before any release, a time just before submission)."""
    since = datetime.now() - timedelta(seconds=1)
    job_id = pbs.jobs.submit(
        script or jobscripts.sleep_on_every_chunk(str(cluster.prefix), SLEEP),
        user=roles.owner,
        select=select or standard_select(roles),
        place="scatter",
        attributes=attributes,
        cwd=f"/home/{roles.owner}",
        args=["-j", "oe", "-o", "/dev/null", *args],
    )
    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=60)
    hosts = Assignment.of(job["exec_vnode"]).hosts()
    wait_until(
        lambda: {h: task_pids(cluster, roles.owner, h) for h in hosts},
        lambda pids: all(pids.values()),
        timeout=30,
        describe="the job's sleep task on every host",
    )
    return job_id, job, since


@pytest.fixture
def running_job(pbs, cluster, roles):
    """The standard job, running, with a sleep task on each of its three hosts."""
    return start_job(pbs, cluster, roles)


def mpi_request(select: str) -> dict[str, tuple[int, int]]:
    """host -> (mpiprocs, ompthreads) of each chunk of the request."""
    return {
        c.resources["host"]: (int(c.resources["mpiprocs"]), int(c.resources["ompthreads"]))
        for c in parse_select(select)
    }


def nodefile(cluster, primary: str, job_id: str) -> list[str]:
    """The job's $PBS_NODEFILE as the primary mom wrote it (PBS_HOME/aux/<job id>)."""
    return cluster.hosts[primary].run(["cat", f"{cluster.pbs_home}/aux/{job_id}"]).stdout.split()


@dataclass
class MpiJob:
    """The extra_select job and how its mpiprocs/ompthreads must look at any moment."""

    pbs: object
    cluster: object
    roles: Roles
    report: TaskEnvReport

    def check(self, job_id: str, phase: str) -> None:
        """Every chunk left in exec_vnode keeps the mpiprocs/ompthreads its request gave it, whether
        the chunk was cut or not: in schedselect and Resource_List.select; Resource_List.mpiprocs is
        their sum and there is no job-wide ompthreads (only resources assigned to vnodes are summed);
        exec_vnode carries neither. $PBS_NODEFILE lists each chunk's host mpiprocs times, in chunk
        order, and pbsdsh runs one task per line with the chunk's ompthreads as OMP_NUM_THREADS."""
        __tracebackhide__ = True
        job = self.pbs.jobs.status(job_id)
        chunks = Assignment.of(job["exec_vnode"]).chunks
        hosts = [c[0].host for c in chunks]
        want = [mpi_request(extra_select(self.roles))[h] for h in hosts]
        for name, value in (("schedselect", job["schedselect"]), ("select", job["Resource_List"]["select"])):
            got = [(int(c.resources["mpiprocs"]), int(c.resources["ompthreads"])) for c in parse_select(value)]
            assert got == want, f"{name} {value}"
        assert int(job["Resource_List"]["mpiprocs"]) == sum(m for m, _ in want)
        assert "ompthreads" not in job["Resource_List"], job["Resource_List"]
        assert not [s for c in chunks for s in c if {"mpiprocs", "ompthreads"} & set(s.resources)], job["exec_vnode"]
        lines = [h for h, (m, _) in zip(hosts, want, strict=True) for _ in range(m)]
        wait_until(
            lambda: nodefile(self.cluster, self.roles.primary, job_id),
            lambda got: got == lines,
            timeout=30,
            describe=f"$PBS_NODEFILE = {lines}",
        )
        tasks = Counter((h, str(o)) for h, (m, o) in zip(hosts, want, strict=True) for _ in range(m))
        if phase == "after":
            self.report.go()
        recorded = wait_until(
            self.report.lines,
            lambda got: "done" in got if phase == "after" else len(self.report.records(got, phase)) >= len(lines),
            timeout=60,
            describe=f"the {phase} tasks recorded in {self.report.path}",
        )
        assert Counter(self.report.records(recorded, phase)) == tasks, recorded


@pytest.fixture
def task_env_report(cluster, roles):
    report = TaskEnvReport.create(cluster.hosts[roles.primary], roles.owner)
    yield report
    report.cleanup()


def start_standard_job(pbs, cluster, roles, request, extra: bool):
    """The standard job, or with `extra` the extra_select one (its mpiprocs/ompthreads layout checked
    before any release); returns (job id, qstat, since, MpiJob or None)."""
    if not extra:
        return (*start_job(pbs, cluster, roles), None)
    mpi = MpiJob(pbs, cluster, roles, request.getfixturevalue("task_env_report"))
    script = mpi.report.script(str(cluster.prefix), SLEEP)
    job_id, before, since = start_job(pbs, cluster, roles, select=extra_select(roles), script=script)
    mpi.check(job_id, "before")
    return job_id, before, since, mpi


def with_extra(*values: str) -> list:
    """Each value as is, then again with mpiprocs/ompthreads (id suffix -extra)."""
    return [pytest.param(v, False, id=v) for v in values] + [pytest.param(v, True, id=f"{v}-extra") for v in values]


def accounting(pbs) -> AccountingReader:
    return AccountingReader(pbs.cluster.server, str(pbs.cluster.pbs_home))


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
    wait_until(
        lambda: task_pids(cluster, roles.owner, roles.plain),
        lambda p: not p,
        timeout=30,
        describe=f"no job task on {roles.plain}",
    )
    assert task_pids(cluster, roles.owner, roles.multi)
    assert task_pids(cluster, roles.owner, roles.primary)
    released_vnode_logs(cluster, roles, job_id, Assignment.of(before["exec_vnode"]).only({roles.plain}), since)
    mom_log(cluster, roles.multi).absent(f"Job;{job_id};DELETE_JOB2 received", since)
    # 'u' closes the phase with the old assignment and its usage; 'c' opens the next one.
    u, c = accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)
    assert (u.type, c.type) == ("u", "c")
    assert u.fields["exec_vnode"] == before["exec_vnode"]
    assert "walltime" in u.resources_used
    assert Assignment.of(c.fields["exec_vnode"]) == expected
    assert not c.resources_used
    # The released host runs another job.
    other = pbs.jobs.submit(user=roles.other, select=f"ncpus=2:host={roles.plain}", command=["/bin/sleep", "30"])
    pbs.jobs.wait(other, job_state="R", timeout=60)


@pytest.mark.spec("RD-4")
@pytest.mark.guards("RD-4")
def test_continue_record_carries_the_new_request_under_its_shipped_names(pbs, roles, running_job, conformance) -> None:
    """The spec's 'c' example names the next phase's request `updated_Resource_List.*` and its usage
    `resources_used_incr.*`; shipped, the record repeats the job's new Resource_List under its own
    name, adds `resource_assigned.*` (the new assignment's totals) and carries no usage at all."""
    job_id, _before, since = running_job
    assert pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner).ok
    after = pbs.jobs.status(job_id)
    _u, c = accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)
    assert c.type == "c"
    for name in ("select", "ncpus", "nodect", "place"):
        assert c.resource_list[name] == str(after["Resource_List"][name]), name
    assert size_kb(c.resource_list["mem"]) == size_kb(after["Resource_List"]["mem"])
    assigned = {k.split(".", 1)[1]: v for k, v in c.fields.items() if k.startswith("resource_assigned.")}
    assert int(assigned["ncpus"]) == int(after["Resource_List"]["ncpus"]), assigned
    renamed = sorted(k for k in c.fields if k.startswith(("updated_Resource_List.", "resources_used_incr.")))
    assert renamed == [], renamed
    assert not c.resources_used
    conformance.difference(
        "RD-4",
        spec_says="'c' record: updated_Resource_List.select=... resources_used_incr.cpupercent=... (spec example)",
        openpbs_does="'c' record: Resource_List.* of the new phase and resource_assigned.*; no "
        "updated_Resource_List.* and no resources_used_incr.* (nor any resources_used.*)",
        evidence=c.raw[:600],
    )


@pytest.mark.spec("RD-1", "RD-3", "RD-4", "RD-6")
@pytest.mark.guards("RD-1", "RD-3", "RD-4", "RD-6")
@pytest.mark.parametrize(("position", "extra"), with_extra("left", "middle", "right"))
def test_release_part_of_a_superchunk_keeps_the_host(
    pbs, cluster, roles, request, *, position: str, extra: bool
) -> None:
    job_id, before, since, mpi = start_standard_job(pbs, cluster, roles, request, extra)
    assigned = Assignment.of(before["exec_vnode"])
    superchunk = next(chunk for chunk in assigned.chunks if chunk[0].host == roles.multi)
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
    u, c = accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)
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
    wait_until(
        lambda: task_pids(cluster, roles.owner, roles.multi),
        lambda p: not p,
        timeout=30,
        describe=f"no job task on {roles.multi}",
    )
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
    accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)


@pytest.mark.spec("RD-1", "RD-5")
@pytest.mark.guards("RD-5")
def test_end_records_after_a_release(pbs, roles, running_job) -> None:
    """'e' closes the last phase with the pruned assignment; 'E' keeps the original request."""
    job_id, before, since = running_job
    assert pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner).ok
    after = pbs.jobs.status(job_id)
    assert pbs.jobs.delete(job_id, user=roles.owner).ok
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
    walltime = {r.type: walltime_seconds(r.resources_used["walltime"]) for r in (u, e_records[0], end)}
    # the phases add up to the whole job (each value is rounded down to a second)
    assert walltime["E"] - 2 <= walltime["u"] + walltime["e"] <= walltime["E"], walltime


@pytest.mark.spec("RD-3", "RD-5")
@pytest.mark.guards("RD-3", "RD-5")
def test_released_sisters_usage_stays_in_the_jobs_totals(pbs, cluster, roles, conformance) -> None:
    """A task on the plain sister burns cpu (the job's only cpu time); released, the sister reports its usage
    to the primary ("<host> cput=... mem=..."). The 'u' record of the phase it ended holds at least the
    usage the job showed when it was released, and the 'E' record's totals hold the sister's final report."""
    # A sister reports the usage it tallied at its last poll (DELETE_JOB2 takes no new sample):
    # poll every second or two on the job's hosts so the burn is tallied soon after it.
    for host in (roles.primary, roles.plain):
        pbs.mom_config.set_options(cluster.hosts[host], {"$min_check_poll": 1, "$max_check_poll": 2})
    script = jobscripts.sleep_on_every_chunk_and_burn_on(str(cluster.prefix), roles.plain, BURN, SLEEP)
    job_id, _before, since = start_job(pbs, cluster, roles, script=script)
    # Only the plain sister burns: once the job shows cpu time, the sister has tallied and reported it.
    # Bounded by a poll at the default $max_check_poll (120 s) in case the HUP did not move the next one.
    tallied = wait_until(
        lambda: pbs.jobs.status(job_id),
        lambda j: walltime_seconds(j.get("resources_used", {}).get("cput", "0")) >= 2,
        timeout=DEFAULT_MAX_CHECK_POLL + 30,
        describe=f"the burn on {roles.plain} tallied in {job_id}'s resources_used.cput",
    )
    shown_cput = walltime_seconds(tallied["resources_used"]["cput"])
    assert pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner).ok
    ms_log = mom_log(cluster, roles.primary)
    line = ms_log.expect(rf"Job;{re.escape(job_id)};{roles.plain} cput=\d\d:\d\d:\d\d mem=\d+kb$", since, 30)
    sister_cput = walltime_seconds(re.search(r"cput=(\S+)", line.message)[1])
    assert sister_cput >= 1, line.raw  # it burned a cpu for BURN seconds
    u, _c = accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)
    # The server writes 'u' as it accepts the release (free_sister_vnodes, node_manager.c), from the
    # usage the primary last reported: the sister's final report reaches the primary only afterwards.
    u_cput = walltime_seconds(u.resources_used["cput"])
    assert u_cput >= shown_cput, (u.resources_used, tallied["resources_used"])
    if u_cput < sister_cput:
        conformance.difference(
            "RD-3",
            spec_says="the 'u' record holds the resources used during the phase it concludes",
            openpbs_does="the 'u' record holds the usage last reported before the release; the released "
            "sister's final report (DELETE_JOB2) is counted only in the job's later totals ('E')",
            evidence=f"u resources_used.cput={u.resources_used['cput']}; primary mom: {line.raw}",
        )

    assert pbs.jobs.delete(job_id, user=roles.owner).ok
    pbs.jobs.wait(job_id, job_state="F", timeout=60)
    records = accounting(pbs).wait_for(job_id, "ucE", 3, since, timeout=30)
    end = records[-1]
    (last,) = accounting(pbs).of(job_id, "e", since)
    cput = {r.type: walltime_seconds(r.resources_used["cput"]) for r in (u, last, end)}
    assert end.type == "E"
    assert cput["E"] >= sister_cput, cput
    # The spec leaves summing 'u' and 'e' to the log parser: they add up to the total within the
    # rounding of each phase's sample to a second (seen: u 2 + e 2 against E 3), plus what the sister
    # burned after its last report and before the release, which 'u' does not hold (see above).
    unreported = max(0, sister_cput - u_cput)
    assert abs(cput["E"] - (cput["u"] + cput["e"])) <= 2 + unreported, (cput, unreported)


def unchanged(pbs, job_id: str, before: dict) -> None:
    __tracebackhide__ = True
    now = pbs.jobs.status(job_id)
    for key in ("exec_vnode", "exec_host", "schedselect"):
        assert now[key] == before[key], key
    assert now["Resource_List"] == before["Resource_List"]


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
    reason="OpenPBS 23.06.06 answers a vnode that is not part of the job with a bare "
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
def test_nodefile_shrinks_and_jobid_comes_from_the_environment_in_an_interactive_job(pbs, cluster, roles) -> None:
    """Inside the job, `pbs_release_nodes HOST` (no -j) uses $PBS_JOBID, and $PBS_NODEFILE loses HOST."""
    args = ["-l", f"select={standard_select(roles)}", "-l", "place=scatter"]
    with InteractiveJob(cluster, roles.owner, args) as session:
        assert sorted(set(session.run('cat "$PBS_NODEFILE"').split())) == sorted(
            [roles.primary, roles.multi, roles.plain]
        )
        pbs.jobs.wait(session.job_id, job_state="R", substate=RUNNING, timeout=30)
        out = session.run(f"{cluster.bin('pbs_release_nodes')} {roles.plain}; echo rc=$?")
        assert out.splitlines()[-1] == "rc=0", out
        assert sorted(set(session.run('cat "$PBS_NODEFILE"').split())) == sorted([roles.primary, roles.multi])
        assert roles.plain not in [e.host for e in parse_exec_host(pbs.jobs.status(session.job_id)["exec_host"])]


# --- release_nodes_on_stageout (RD-2) ------------------------------------------------------------


@dataclass(frozen=True)
class StageoutWay:
    """How a test gives the job its release_nodes_on_stageout, and whether sisters then go at stageout."""

    qsub: str | None = None  # -W value at submission
    qalter: str | None = None  # -W value given with qalter on the running job
    hook: tuple[str, bool] | None = None  # (queuejob|modifyjob, value the hook sets)
    default_qsub_arguments: str | None = None
    releases: bool = False

    def shown(self) -> str | None:
        """What qstat shows before the job ends (None: attribute not set)."""
        if self.hook:
            return str(self.hook[1])
        value = self.qalter or self.qsub or self.default_qsub_arguments
        return None if value is None else str(value == "true")


STAGEOUT_WAYS = {
    "qsub-true": StageoutWay(qsub="true", releases=True),
    "qsub-false": StageoutWay(qsub="false"),
    "unset": StageoutWay(),
    "qalter-true": StageoutWay(qalter="true", releases=True),
    "qalter-false-over-qsub-true": StageoutWay(qsub="true", qalter="false"),
    "queuejob-hook-true": StageoutWay(hook=("queuejob", True), releases=True),
    "queuejob-hook-false-over-qsub-true": StageoutWay(qsub="true", hook=("queuejob", False)),
    "modifyjob-hook-true": StageoutWay(hook=("modifyjob", True), releases=True),
    "modifyjob-hook-false-over-qsub-true": StageoutWay(qsub="true", hook=("modifyjob", False)),
    "default_qsub_arguments-true": StageoutWay(default_qsub_arguments="true", releases=True),
}


@pytest.fixture
def blocked_stageout(cluster, roles):
    stageout = BlockedStageout.create(cluster.hosts[roles.primary], roles.owner)
    yield stageout
    stageout.cleanup()


def released_vnode_logs(cluster, roles: Roles, job_id: str, released: Assignment, since: datetime) -> None:
    """The logs of a sister host leaving the job: server DEBUG2 "clearing job J from node V" per vnode
    and "deallocating N cpu(s) from job J" (object: the mom host), the sister's DELETE_JOB2, and
    the primary mom's "<host> cput=... mem=...kb" with the sister's final usage."""
    __tracebackhide__ = True
    srv_log = server_log(cluster)
    ms_log = mom_log(cluster, roles.primary)
    jid = re.escape(job_id)
    for host in released.hosts():
        vnodes = [s for chunk in released.chunks for s in chunk if s.host == host]
        for s in vnodes:
            srv_log.expect(rf";Node;{re.escape(host)};clearing job {jid} from node {re.escape(s.vnode)}$", since, 30)
        cpus = sum(int(s.resources.get("ncpus", 0)) for s in vnodes)
        srv_log.expect(rf";Node;{re.escape(host)};deallocating {cpus} cpu\(s\) from job {jid}$", since, 30)
        mom_log(cluster, host).expect(f"Job;{jid};DELETE_JOB2 received", since, 30)
        ms_log.expect(rf"Job;{jid};{re.escape(host)} cput=\d\d:\d\d:\d\d mem=\d+kb$", since, 30)


# A way that releases the sisters checks their u/c/e records and release logs: those cases guard
# RD-3..6. A way that keeps them pins the other side (no u/c/e records, no DELETE_JOB2).
RELEASE_RECORDS = pytest.mark.guards("RD-3", "RD-4", "RD-5", "RD-6")
STAGEOUT_CASES = [
    pytest.param(way, id=name, marks=RELEASE_RECORDS if way.releases else ()) for name, way in STAGEOUT_WAYS.items()
]


@pytest.mark.spec("RD-2", "RD-3", "RD-4", "RD-5", "RD-6")
@pytest.mark.guards("RD-2")
@pytest.mark.parametrize("way", STAGEOUT_CASES)
def test_release_nodes_on_stageout(pbs, cluster, roles, blocked_stageout, way: StageoutWay) -> None:
    """With release_nodes_on_stageout true, every sister leaves the job when its stageout begins
    (the job is still in E/51 copying files); with false or unset, they stay until the job ends."""
    if way.default_qsub_arguments:
        assert pbs.server.set({"default_qsub_arguments": f"-W {RELNODES_ATTR}={way.default_qsub_arguments}"}).ok
    if way.hook:
        event, value = way.hook
        create_hook(pbs, "rd_stageout", hook_set_release_nodes_on_stageout(value, event))
    attributes = {"stageout": blocked_stageout.attribute(roles.primary)}
    if way.qsub:
        attributes[RELNODES_ATTR] = way.qsub
    job_id, before, since = start_job(pbs, cluster, roles, attributes=attributes)
    if way.qalter:
        res = pbs.jobs.alter(job_id, "-W", f"{RELNODES_ATTR}={way.qalter}", user=roles.owner)
        assert res.ok, res.stderr
    elif way.hook and way.hook[0] == "modifyjob":
        res = pbs.jobs.alter(job_id, "-N", "rd-modified", user=roles.owner)
        assert res.ok, res.stderr
    assert pbs.jobs.status(job_id).get(RELNODES_ATTR) == way.shown()
    assigned = Assignment.of(before["exec_vnode"])
    ms_only = Assignment(tuple(c for c in assigned.chunks if c[0].host == roles.primary))
    sisters = Assignment(tuple(c for c in assigned.chunks if c[0].host != roles.primary))
    sister_vnodes = sorted(sisters.vnodes())

    assert pbs.jobs.delete(job_id, user=roles.owner).ok
    staging = pbs.jobs.wait(job_id, job_state="E", substate=STAGEOUT_SUBSTATE, timeout=60)

    records = accounting(pbs)
    if way.releases:
        assert_job_matches(staging, ms_only)
        pbs.nodes.wait_state(sister_vnodes, "free", timeout=30)
        u, c = records.wait_for(job_id, "uc", 2, since, timeout=30)
        assert u.fields["exec_vnode"] == before["exec_vnode"]
        assert Assignment.of(c.fields["exec_vnode"]) == ms_only
        released_vnode_logs(cluster, roles, job_id, sisters, since)
    else:
        assert_job_matches(staging, assigned)
        assert {v: pbs.nodes.status(v)["state"] for v in sister_vnodes} == dict.fromkeys(sister_vnodes, "job-busy")
        assert records.of(job_id, "uc", since) == []
        for host in sisters.hosts():
            mom_log(cluster, host).absent(f"Job;{job_id};DELETE_JOB2", since)

    assert blocked_stageout.drain() == blocked_stageout.payload
    pbs.jobs.wait(job_id, job_state="F", timeout=60)
    end = records.wait_for(job_id, "E", 1, since, timeout=30)[0]
    assert end.resource_list["select"] == before["Resource_List"]["select"]
    last_phase = records.of(job_id, "e", since)
    if way.releases:
        assert [Assignment.of(e.fields["exec_vnode"]) for e in last_phase] == [ms_only]
    else:
        assert last_phase == []


@pytest.mark.spec("RD-2")
@pytest.mark.guards("RD-2")
@pytest.mark.parametrize("value", ["-1", "11", "tru"])
def test_release_nodes_on_stageout_rejects_bad_values(pbs, roles, value: str) -> None:
    res = pbs.jobs.run("qsub", "-W", f"{RELNODES_ATTR}={value}", "--", "/bin/true", user=roles.owner)
    assert not res.ok
    assert res.stderr.splitlines()[0] == "qsub: illegal -W value", res.stderr
    assert res.stderr.splitlines()[1].startswith("usage: qsub"), res.stderr


# --- keep_select: pbs_release_nodes -k (RD-1) ----------------------------------------------------


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
        kept_host, name = hosts[0], next(r.name for r in case.resources if r.type == "boolean")
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
    _, c = accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)
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
    u, c = accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)
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
    _, c = accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)
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


# --- pbs_release_nodes inside a batch job: $PBS_JOBID, $PBS_NODEFILE (RD-1) ----------------------


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
    out_file = f"/home/{roles.owner}/rd-inside-{uuid.uuid4().hex[:10]}.out"
    host = cluster.hosts[roles.primary]
    script = jobscripts.release_nodes_from_inside(str(cluster.prefix), release_args, out_file, SLEEP)
    try:
        since = datetime.now() - timedelta(seconds=1)
        job_id = pbs.jobs.submit(
            script,
            user=roles.owner,
            select=standard_select(roles),
            place="scatter",
            cwd=f"/home/{roles.owner}",
            args=["-j", "oe", "-o", "/dev/null"],
        )
        u, c = accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=60)
        out = wait_until(
            lambda: host.run(["cat", out_file]).stdout,
            lambda text: "after:" in text,
            timeout=30,
            describe=f"{out_file} written by the job",
        )
    finally:
        host.run(["rm", "-f", out_file])
    lines = {ln.split(":", 1)[0]: ln.split(":", 1)[1].split() for ln in out.splitlines() if ":" in ln}
    assert "released" in out.splitlines(), out
    assert sorted(lines["before"]) == sorted([roles.primary, roles.multi, roles.plain])
    assert sorted(lines["after"]) == sorted({roles.primary, roles.multi, roles.plain} - released_hosts)
    original = Assignment.of(u.fields["exec_vnode"])
    expected = Assignment(tuple(ch for ch in original.chunks if ch[0].host not in released_hosts))
    assert_job_matches(pbs.jobs.status(job_id), expected)
    assert Assignment.of(c.fields["exec_vnode"]) == expected


# --- jobs that are not running, arrays (RD-1) ----------------------------------------------------


def job_in_state(pbs, nemesis, roles: Roles, state: str) -> str:
    """A job of the standard shape in the given state (PRERUN: R, substate 41)."""
    sleep = ["/bin/sleep", str(SLEEP)]
    if state == "H":
        job_id = pbs.jobs.submit(
            user=roles.owner, select=standard_select(roles), place="scatter", args=["-h"], command=sleep
        )
    elif state == "Q":  # asks for more cpus than the plain host has: never runs
        select = f"ncpus=1:host={roles.primary}+ncpus=3:host={roles.plain}"
        job_id = pbs.jobs.submit(user=roles.owner, select=select, place="scatter", command=sleep)
    elif state == "W":
        later = (datetime.now() + timedelta(hours=1)).strftime("%Y%m%d%H%M")
        job_id = pbs.jobs.submit(
            user=roles.owner, select=standard_select(roles), place="scatter", args=["-a", later], command=sleep
        )
    elif state == "F":
        job_id = pbs.jobs.submit(
            user=roles.owner, select=standard_select(roles), place="scatter", command=["/bin/true"]
        )
    else:  # the sister's execjob_begin hook sleeps: the primary waits for it, the job stays in PRERUN
        nemesis.reject_hook("execjob_begin", (roles.plain,), how="sleep", seconds=20)
        job_id = pbs.jobs.submit(user=roles.owner, select=standard_select(roles), place="scatter", command=sleep)
        pbs.jobs.wait(job_id, job_state="R", substate=PRERUN_SUBSTATE, timeout=15)
        return job_id
    pbs.jobs.wait(job_id, job_state=state, timeout=30)
    return job_id


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
@pytest.mark.parametrize(
    ("state", "stderr"),
    [
        ("H", "pbs_release_nodes: Request invalid for state of job"),
        ("Q", "pbs_release_nodes: Request invalid for state of job"),
        ("W", "pbs_release_nodes: Request invalid for state of job"),
        ("prerun", "pbs_release_nodes: Request invalid for state of job"),
        ("F", "pbs_release_nodes: Job has finished"),
    ],
)
def test_error_job_not_running(pbs, roles, nemesis, state: str, stderr: str) -> None:
    since = datetime.now() - timedelta(seconds=1)
    job_id = job_in_state(pbs, nemesis, roles, state)
    before = pbs.jobs.status(job_id)
    res = pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner)
    assert not res.ok
    assert res.stderr.strip() == stderr
    now = pbs.jobs.status(job_id)
    for key in ("exec_vnode", "exec_host", "schedselect", "Resource_List"):
        assert now.get(key) == before.get(key), key
    assert accounting(pbs).of(job_id, "uc", since) == []


@pytest.mark.spec("RD-1", "RD-3", "RD-4")
@pytest.mark.guards("RD-1", "RD-4")
def test_array_parent_refused_subjob_released(pbs, cluster, roles) -> None:
    since = datetime.now() - timedelta(seconds=1)
    array_id = pbs.jobs.submit(
        jobscripts.sleep_on_every_chunk(str(cluster.prefix), SLEEP),
        user=roles.owner,
        select=standard_select(roles),
        place="scatter",
        array="1-2",
        cwd=f"/home/{roles.owner}",
        args=["-j", "oe", "-o", "/dev/null"],
    )
    first = array_id.replace("[]", "[1]")
    before = pbs.jobs.wait(first, job_state="R", substate=RUNNING, timeout=60)

    res = pbs.jobs.release_nodes(array_id, [roles.plain], user=roles.owner)
    assert not res.ok
    assert res.stderr.strip() == "pbs_release_nodes: not supported for Array Jobs or multiple sub-jobs"
    assert accounting(pbs).of(first, "uc", since) == []

    res = pbs.jobs.release_nodes(first, [roles.plain], user=roles.owner)
    assert res.ok, res.stderr
    expected = Assignment.of(before["exec_vnode"]).without({roles.plain})
    assert_job_matches(pbs.jobs.status(first), expected)
    _, c = accounting(pbs).wait_for(first, "uc", 2, since, timeout=30)
    assert Assignment.of(c.fields["exec_vnode"]) == expected


# --- hidden attributes (RD-7) ---------------------------------------------------------------------

HIDDEN = (
    "exec_vnode_orig", "exec_vnode_acct", "exec_vnode_deallocated", "exec_host_orig", "exec_host_acct",
    "schedselect_orig", "resources_used_acct",
)  # fmt: skip


@pytest.mark.spec("RD-7")
@pytest.mark.guards("RD-7")
def test_show_hidden_attribs_exposes_the_phases(pbs, cluster, roles, running_job, conformance) -> None:
    """After a partial release (one super-chunk vnode, still held) and a whole-host release, the
    hidden attributes show the original and the previous phase; only a manager may set the switch."""
    job_id, before, since = running_job
    superchunk = next(c for c in Assignment.of(before["exec_vnode"]).chunks if c[0].host == roles.multi)
    held = superchunk[0].vnode
    assert pbs.jobs.release_nodes(job_id, [held], user=roles.owner).ok
    middle = pbs.jobs.status(job_id)
    assert pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner).ok
    pbs.nodes.wait_state([roles.plain], "free", timeout=30)
    assert not set(HIDDEN) & set(pbs.jobs.status(job_id)), "hidden attributes shown by default"

    refused = pbs.server.set({"show_hidden_attribs": True}, user=roles.topology.users.account("operator"))
    assert not refused.ok
    assert pbs.server.set({"show_hidden_attribs": True}).ok

    job = pbs.jobs.status(job_id)
    assert job["exec_vnode_orig"] == before["exec_vnode"]
    assert job["exec_host_orig"] == before["exec_host"]
    assert job["schedselect_orig"] == before["schedselect"]
    # *_acct: the phase that the last release closed (what its 'u' record shows)
    assert job["exec_vnode_acct"] == middle["exec_vnode"]
    assert job["exec_host_acct"] == middle["exec_host"]
    assert "resources_used_acct" in job
    # the spec also names Resource_List_orig and Resource_List_acct: qstat shows neither
    text = pbs.jobs.run("qstat", "-f", job_id).stdout
    shown = sorted({line.split("=")[0].strip() for line in text.splitlines() if "_orig" in line or "_acct" in line})
    assert not {"Resource_List_orig", "Resource_List_acct"} & set(job)
    assert not [name for name in shown if name.startswith("Resource_List_")], shown
    conformance.difference(
        "RD-7",
        spec_says="show_hidden_attribs=true lets qstat -f show exec_vnode_orig, exec_vnode_acct, "
        "exec_vnode_deallocated, exec_host_orig, exec_host_acct, Resource_List_orig, Resource_List_acct",
        openpbs_does="Resource_List_orig and Resource_List_acct are not shown (qstat -f nor -F json); "
        "schedselect_orig and resources_used_acct are shown besides the others",
        evidence=f"hidden attributes in qstat -f: {shown}",
    )
    # deallocated: released vnodes the job still holds (the partially released host's vnode)
    assert set(vnodes_of(job["exec_vnode_deallocated"])) == {held}, job["exec_vnode_deallocated"]
    records = accounting(pbs).wait_for(job_id, "uc", 4, since, timeout=30)
    assert records[2].fields["exec_vnode"] == job["exec_vnode_acct"]


# --- faults (RD-1, RD-6) ----------------------------------------------------------------------------


@pytest.mark.spec("RD-1", "RD-6")
@pytest.mark.guards("RD-1", "RD-6")
def test_stopped_sister_is_cleaned_when_it_continues(pbs, cluster, roles, nemesis, running_job) -> None:
    """The server prunes the job at once but holds the released host until its mom confirms the cleanup."""
    job_id, before, since = running_job
    fault = nemesis.stop_mom(roles.plain)
    res = pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner)
    assert res.ok, res.stderr
    assert_job_matches(pbs.jobs.status(job_id), Assignment.of(before["exec_vnode"]).without({roles.plain}))
    plain_log = mom_log(cluster, roles.plain)
    assert task_pids(cluster, roles.owner, roles.plain), "the stopped mom cannot have killed the task"
    assert pbs.nodes.status(roles.plain)["state"] != "free"
    plain_log.absent(f"Job;{job_id};DELETE_JOB2", since)

    continued = datetime.now()
    nemesis.heal(fault)
    line = plain_log.expect(f"Job;{job_id};DELETE_JOB2 received", since, timeout=30)
    assert line.time >= continued.replace(microsecond=0)
    pbs.nodes.wait_state([roles.plain], "free", timeout=30)
    wait_until(
        lambda: task_pids(cluster, roles.owner, roles.plain),
        lambda p: not p,
        timeout=30,
        describe=f"no job task on {roles.plain}",
    )
    assert pbs.jobs.status(job_id)["job_state"] == "R"


def wait_rerun(pbs, job_id: str, run_count: int, timeout: float) -> dict:
    return wait_until(
        lambda: pbs.jobs.status(job_id),
        lambda j: j.get("job_state") == "R" and j.get("substate") == RUNNING and j.get("run_count") == run_count,
        timeout=timeout,
        describe=f"job {job_id} running again (run_count={run_count})",
    )


def assert_original_request(job: dict, before: dict, roles: Roles) -> None:
    __tracebackhide__ = True
    assert job["Resource_List"]["select"] == before["Resource_List"]["select"]
    assert job["schedselect"] == before["schedselect"]
    assert job["Resource_List"]["ncpus"] == before["Resource_List"]["ncpus"]
    assert sorted(Assignment.of(job["exec_vnode"]).hosts()) == sorted([roles.primary, roles.multi, roles.plain])


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
@pytest.mark.parametrize("how", ["qrerun", "primary mom killed and restarted"])
def test_rerun_after_a_release_uses_the_original_request(
    pbs, cluster, roles, nemesis, running_job, *, how: str
) -> None:
    job_id, before, since = running_job
    assert pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner).ok
    accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)
    if how == "qrerun":
        assert pbs.jobs.rerun(job_id).ok
    else:
        nemesis.heal(nemesis.kill_mom(roles.primary))
    again = wait_rerun(pbs, job_id, 2, timeout=90)
    assert_original_request(again, before, roles)


def purge_history(pbs) -> None:
    """Remove every finished job from the job history. OpenPBS 23.06.06 keeps a node's emptied
    maintenance_jobs in its database (see docs/suites/admin_suspend.md) and, at the next server
    start, puts the node back into maintenance if a job of that name exists, finished ones included:
    with no history left, a restart here cannot wake a stale name left by another suite."""
    finished = [j for j, job in pbs.jobs.all(history=True).items() if job.get("job_state") == "F"]
    for start in range(0, len(finished), 50):
        pbs.jobs.forget(*finished[start : start + 50])


def restart_server(pbs, shutdown: str) -> None:
    """Empty the job history (see purge_history), restart the server (qterm -t quick or immediate),
    wait until every vnode reported, and start a scheduling cycle."""
    purge_history(pbs)
    pbs.server.restart(shutdown, timeout=60, schedule=True)


class ReleasedHostReassigned(AssertionError):
    """After the restart the released host lists the job although its exec_vnode no longer names it."""


RELEASED_HOST_REASSIGNED = (
    "OpenPBS 23.06.06: after qterm -t quick and a server start, the running job keeps its pruned exec_vnode but "
    "the released (and already freed) host is assigned to it again: pbsnodes shows <plain host> state=job-busy, "
    "jobs=[<job>], resources_assigned ncpus=2 mem=2097152kb while the job's exec_vnode no longer names it, so "
    "the host stays unusable for other jobs; after the job ends the host keeps resources_assigned.ncpus=2 "
    "(the scheduler then says 'Insufficient amount of resource: host') until the next server start"
)


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
@pytest.mark.parametrize(
    "shutdown",
    [
        pytest.param(
            "quick",
            marks=pytest.mark.xfail(strict=True, raises=ReleasedHostReassigned, reason=RELEASED_HOST_REASSIGNED),
        ),
        "immediate",
    ],
)
def test_server_restart_after_a_release(pbs, cluster, roles, running_job, shutdown: str) -> None:
    """quick: the job keeps running with its pruned assignment and the released host stays free;
    immediate: the job is requeued and runs again with its original request."""
    job_id, before, _ = running_job
    assert pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner).ok
    pruned = pbs.jobs.status(job_id)
    pbs.nodes.wait_state([roles.plain], "free", timeout=30)
    restart_server(pbs, shutdown)
    if shutdown == "immediate":
        assert_original_request(wait_rerun(pbs, job_id, 2, timeout=60), before, roles)
        return
    try:
        job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=30)
        assert_job_matches(job, Assignment.of(pruned["exec_vnode"]))
        assert job["run_count"] == 1
        try:
            pbs.nodes.wait_state([roles.plain], "free", timeout=20)
        except WaitTimeout:
            # The known defect, and only it: the host lists the job that no longer names the host.
            node, job = pbs.nodes.status(roles.plain), pbs.jobs.status(job_id)
            hosts = {v.host for chunk in parse_exec_vnode(job["exec_vnode"]) for v in chunk}
            if job_id in str(node.get("jobs", "")) and roles.plain not in hosts:
                raise ReleasedHostReassigned(
                    f"{roles.plain}: state={node.get('state')} jobs={node.get('jobs')} resources_assigned="
                    f"{node.get('resources_assigned')}; {job_id} exec_vnode={job['exec_vnode']}"
                ) from None
            raise
    finally:
        clear_stale_assignment(pbs, job_id)


def clear_stale_assignment(pbs, job_id: str) -> None:
    """The wrongly re-assigned host keeps resources_assigned after the job ends (the scheduler then
    finds no room on it: "Insufficient amount of resource: host"); baseline checks do not compare
    resources_assigned, so end the job and restart the server once more, which recounts it."""
    pbs.jobs.delete(job_id, force=True)
    pbs.jobs.wait_gone(job_id, timeout=60)
    restart_server(pbs, "quick")
    wait_until(
        pbs.nodes.all,
        lambda nodes: not any((n.get("resources_assigned") or {}).get("ncpus") for n in nodes.values()),
        timeout=30,
        describe="no vnode with cpus assigned",
    )


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
def test_released_host_crash_does_not_touch_the_job(pbs, cluster, roles, nemesis, running_job) -> None:
    job_id, _before, _since = running_job
    assert pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner).ok
    pbs.nodes.wait_state([roles.plain], "free", timeout=30)
    pruned = pbs.jobs.status(job_id)
    nemesis.crash_host(roles.plain)
    wait_until(
        lambda: pbs.nodes.status(roles.plain)["state"],
        lambda state: "down" in state,
        timeout=60,
        describe=f"{roles.plain} seen down",
    )
    job = pbs.jobs.status(job_id)
    assert (job["job_state"], job["substate"]) == ("R", 42)
    assert_job_matches(job, Assignment.of(pruned["exec_vnode"]))
    assert task_pids(cluster, roles.owner, roles.primary)
    assert task_pids(cluster, roles.owner, roles.multi)


# --- cleanup on the released host (RD-1) -------------------------------------------------------------


@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
def test_released_host_cleanup_runs_epilogue_and_end_hooks(pbs, cluster, roles, conformance) -> None:
    events = ("execjob_epilogue", "execjob_end")
    hooks = {f"rd_{event.split('_')[1]}": hook_log_event_on_this_host("ramp_down hook", event) for event in events}
    install_hooks(pbs, cluster, hooks)  # every mom holds them and their configs before the job
    job_id, _before, since = start_job(pbs, cluster, roles)
    host = cluster.hosts[roles.plain]
    home = str(cluster.pbs_home)
    tmpdir = f"/var/tmp/pbs.{job_id}"  # noqa: S108 - the job's TMPDIR made by the mom, only looked at

    def job_files() -> list[str]:
        return host.run(f"ls -d {home}/mom_priv/jobs/{job_id}.* {tmpdir} 2>/dev/null").stdout.split()

    present = job_files()
    assert tmpdir in present, present
    assert any("/mom_priv/jobs/" in p for p in present), present

    assert pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner).ok
    plain_log = mom_log(cluster, roles.plain)
    plain_log.expect(f"Job;{job_id};DELETE_JOB2 received", since, timeout=30)
    plain_log.expect(f"ramp_down hook rd_epilogue on {roles.plain}", since, timeout=30)
    pbs.nodes.wait_state([roles.plain], "free", timeout=30)
    wait_until(job_files, lambda p: not p, timeout=30, describe="job files and TMPDIR gone")
    end_line = plain_log.expect(f"ramp_down hook rd_end on {roles.plain}", since, timeout=30)
    conformance.difference(
        "RD-1",
        spec_says="when every vnode of a host is released ... the execjob_end hook will not execute on the host",
        openpbs_does="the execjob_end hook runs on the released host (after execjob_epilogue)",
        evidence=end_line.raw,
    )
    assert pbs.jobs.status(job_id)["job_state"] == "R"
    # the primary and the other sister keep the job: no end hook there yet
    mom_log(cluster, roles.multi).absent("ramp_down hook rd_end", since)


# --- suspend/resume, reservations (RD-1) ---------------------------------------------------------------


@pytest.mark.spec("RD-1", "RD-3", "RD-4")
@pytest.mark.guards("RD-1", "RD-3", "RD-4")
def test_suspended_job_refuses_release_and_resumes_pruned(pbs, cluster, roles, running_job) -> None:
    job_id, _before, since = running_job
    assert pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner).ok
    pruned = pbs.jobs.status(job_id)
    assert pbs.jobs.signal(job_id, "suspend").ok
    suspended = pbs.jobs.wait(job_id, job_state="S", timeout=30)
    multi_vnode = min(s.vnode for c in Assignment.of(pruned["exec_vnode"]).chunks for s in c if s.host == roles.multi)

    res = pbs.jobs.release_nodes(job_id, [multi_vnode], user=roles.owner)
    assert not res.ok
    assert res.stderr.strip() == "pbs_release_nodes: Request invalid for state of job"
    unchanged(pbs, job_id, suspended)
    assert len(accounting(pbs).of(job_id, "uc", since)) == 2

    assert pbs.jobs.signal(job_id, "resume").ok
    resumed = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=30)
    assert_job_matches(resumed, Assignment.of(pruned["exec_vnode"]))
    assert pbs.jobs.release_nodes(job_id, [multi_vnode], user=roles.owner).ok
    # The refused release wrote nothing; the one after the resume closes the pruned phase ('u') and
    # opens one without the vnode ('c'), as the job now shows it.
    records = accounting(pbs).wait_for(job_id, "uc", 4, since, timeout=30)
    assert [r.type for r in records] == ["u", "c", "u", "c"]
    u, c = records[2:]
    assert u.fields["exec_vnode"] == pruned["exec_vnode"]
    after = pbs.jobs.status(job_id)
    assert c.fields["exec_vnode"] == after["exec_vnode"]
    assert Assignment.of(after["exec_vnode"]) == Assignment.of(pruned["exec_vnode"]).without({multi_vnode})


@pytest.mark.spec("RD-1", "RD-3", "RD-4")
@pytest.mark.guards("RD-1")
def test_reservation_id_refused_job_inside_releases(pbs, cluster, roles) -> None:
    start = datetime.now() + timedelta(seconds=15)
    rid, _ = pbs.resv.submit(
        "-R", start.strftime("%Y%m%d%H%M.%S"), "-D", "600",
        "-l", f"select={standard_select(roles)}", "-l", "place=scatter",
        user=roles.owner,
    )  # fmt: skip
    pbs.resv.wait_state(rid, "RESV_RUNNING", timeout=60)
    res = pbs.jobs.release_nodes(rid, [roles.plain], user=roles.owner)
    assert not res.ok
    refused = res.stderr.strip()
    queue = rid.split(".")[0]
    job_id, before, since = start_job(pbs, cluster, roles, args=["-q", queue])
    res = pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner)
    assert res.ok, res.stderr
    assert_job_matches(pbs.jobs.status(job_id), Assignment.of(before["exec_vnode"]).without({roles.plain}))
    accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)
    # The server looks the id up as a job's: a reservation is no job (seen on 23.06.06, any resv state).
    assert refused == f"pbs_release_nodes: Unknown Job Id {rid}", refused


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


@pytest.mark.spec("RD-1", "RD-3", "RD-4", "RD-6")
@pytest.mark.guards("RD-1", "RD-4", "RD-6")
@pytest.mark.parametrize(
    ("which", "extra"), with_extra("part of the super-chunk and the plain host", "every sister vnode by name")
)
def test_release_vnodes_of_several_hosts_in_one_call(pbs, cluster, roles, request, *, which: str, extra: bool) -> None:
    job_id, before, since, mpi = start_standard_job(pbs, cluster, roles, request, extra)
    assigned = Assignment.of(before["exec_vnode"])
    superchunk = next(c for c in assigned.chunks if c[0].host == roles.multi)
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
    _u, c = accounting(pbs).wait_for(job_id, "uc", 2, since, timeout=30)
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
    accounting(pbs).wait_for(first, "uc", 2, since, timeout=30)
    assert accounting(pbs).of(second, "uc", since) == []


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


@pytest.mark.spec("RD-2", "RD-3", "RD-4", "RD-5")
@pytest.mark.guards("RD-2", "RD-3", "RD-4", "RD-5")
def test_release_by_command_then_the_rest_at_stageout(pbs, cluster, roles, blocked_stageout) -> None:
    """Two phases end early: the command releases the plain host, the stageout the multi-vnode host;
    then 'e' closes the primary-only phase and 'E' keeps the original request."""
    attributes = {"stageout": blocked_stageout.attribute(roles.primary), RELNODES_ATTR: "true"}
    job_id, before, since = start_job(pbs, cluster, roles, attributes=attributes)
    assigned = Assignment.of(before["exec_vnode"])
    assert pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner).ok
    assert pbs.jobs.delete(job_id, user=roles.owner).ok
    staging = pbs.jobs.wait(job_id, job_state="E", substate=STAGEOUT_SUBSTATE, timeout=60)
    ms_only = assigned.only({s.vnode for c in assigned.chunks for s in c if s.host == roles.primary})
    assert_job_matches(staging, ms_only)
    released_vnode_logs(cluster, roles, job_id, assigned.without(ms_only.vnodes()), since)
    assert blocked_stageout.drain() == blocked_stageout.payload
    pbs.jobs.wait(job_id, job_state="F", timeout=60)
    records = accounting(pbs).wait_for(job_id, "ucE", 5, since, timeout=30)
    assert [r.type for r in records] == ["u", "c", "u", "c", "E"]
    assert [Assignment.of(r.fields["exec_vnode"]) for r in records[:4]] == [
        assigned,
        assigned.without({roles.plain}),
        assigned.without({roles.plain}),
        ms_only,
    ]
    (last,) = accounting(pbs).of(job_id, "e", since)
    assert Assignment.of(last.fields["exec_vnode"]) == ms_only
    assert records[-1].resource_list["select"] == before["Resource_List"]["select"]
