"""Reliable job startup, part A: interfaces, padding and pruning, job shapes (spec:
shared/specs/reliable-job-startup.txt). Faults after the start and the mom timers are in
test_reliable_startup_faults.py.

Layout and the standard job are described in ptl_tests/reliable_startup_helpers.py: the job asks
for three chunks, a queuejob hook pads it to five (the primary + four sisters), the prune hook brings it
back to three with release_nodes(keep_select=<saved select>). Expected pruned values are computed
from the job's own initial exec_vnode (its 'S' record) and the hosts that failed, with the shipped
rule, then compared with exec_vnode/exec_host/schedselect/Resource_List, the 's' record, the
primary mom's "pruned from/to" lines, $PBS_NODEFILE, pbsdsh and pbs_tmrsh inside the job.

Each fault test asserts that the failed sister WAS in the initial assignment (the 'S' record and
"pruned from exec_vnode=..."), so a pass proves tolerance was exercised, and names the failure in
the primary mom's log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from pbs_harness.pbs.parsers import parse_select, size_kb
from pbs_harness.waits import WaitTimeout, wait_until
from ptl_tests import jobscripts
from ptl_tests.hook_files import install_hooks, wait_mom_hooks
from ptl_tests.reliable_startup_helpers import (
    COULD_NOT_SATISFY,
    HAVE,
    IGNORING,
    NEED,
    NOT_TOLERANT,
    ORIGINAL_SELECT,
    PADDED_SELECT,
    PRUNED_TO,
    REJECTED_BY,
    RUNNING,
    SHORT_ALARM,
    SLEEP,
    START_ERROR,
    Roles,
    StartupKit,
    assert_assignment,
    assigned_totals,
    chunks_of,
    clear_node_order,
    expected_prune,
    hosts_of,
    met_empty_fail_list,
    pad_hook,
    prune_hook,
    select_chunks,
    select_probe_hook,
    set_node_order,
    set_short_alarms,
    suite_roles,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.reliable_startup, pytest.mark.needs_moms(6)]

START_TIMEOUT = 90  # short alarms: a padded job starts within ~2 x SHORT_ALARM plus a scheduling cycle


@pytest.fixture(scope="module")
def roles(topology) -> Roles:
    """The primary (server host), sisters 1..4 (plain 2-cpu hosts) and the multi-vnode host."""
    return suite_roles(topology)


@pytest.fixture
def kit(pbs, cluster, roles):
    k = StartupKit(pbs, cluster, roles)
    yield k
    k.cleanup()


@pytest.fixture(autouse=True)
def _node_order(pbs, roles):
    """Deterministic placement: the padded job lands on the primary, then sisters 1..4, in that order."""
    set_node_order(pbs, roles.node_order)
    yield
    clear_node_order(pbs, roles.node_order)


@pytest.fixture
def short_alarms(pbs, cluster, roles):
    return set_short_alarms(pbs, cluster, roles.primary)


def report_job(kit: StartupKit, name: str, indexes: int = 4) -> str:
    """A job script writing its nodefile, `pbsdsh -n i` for i < indexes and pbs_tmrsh to every host."""
    hosts = list(kit.roles.all_hosts)
    return jobscripts.pruned_job_report(str(kit.cluster.prefix), kit.report_path(name), indexes, hosts, SLEEP)


@pytest.fixture(scope="module")
def names(cluster, roles) -> dict[str, str]:
    """What `hostname` prints on each host (the job's tools print that, exec_host the node name);
    read once, while no host is paused or partitioned."""
    return {n: cluster.hosts[n].check(["hostname"]).stdout.strip() for n in roles.all_hosts}


def assert_reach(report: str, job_id: str, kept: list[str], names: dict[str, str]) -> None:
    """The job's report (report_job): the nodefile lists the kept hosts; `pbsdsh -n i` runs on the
    i-th kept host (modulo their number); pbs_tmrsh reaches the kept hosts and refuses the others
    (`names` has every host of the report, in its order)."""
    __tracebackhide__ = True
    assert jobscripts.section(report, "nodefile") == [names[h] for h in kept]
    tasks = jobscripts.section(report, "tasks")
    # pbsdsh takes the index modulo the job's node count: index 3 lands on node 0 of 3 nodes.
    pbsdsh = [t for t in tasks if t.startswith("pbsdsh-")]
    assert pbsdsh == [f"pbsdsh-{i} {names[kept[i % len(kept)]]}" for i in range(len(pbsdsh))], tasks
    assert [t for t in tasks if t.startswith("tmrsh-")] == [f"tmrsh-{h} {names[h]}" for h in names if h in kept]
    tmrsh = dict(line.split(" ", 1) for line in jobscripts.section(report, "tmrsh"))
    for host in names:
        if host in kept:
            assert tmrsh[host] == "rc=0", tmrsh
        else:
            assert f'host "{host}" is not a node in job <{job_id}>' in tmrsh[host], tmrsh


JOIN_TIMEOUT = f"sister_join_job_alarm wait time {SHORT_ALARM} secs exceeded"


@dataclass(frozen=True)
class SisterFault:
    """How a sister fails before the job starts, and what the primary mom logs about it. The
    sister is named by its number (Roles.sister): sisters 1 and 2 hold the padded job's 2-cpu
    chunks after the primary's, sisters 3 and 4 its 1-cpu chunks."""

    name: str
    sister: int  # which sister fails (1..4), resolved to a host at run time
    how: str  # begin-reject, begin-exception, prologue-reject, prologue-exception, mom-stop, partition, pause
    start_error: str | None = None  # what the primary could not do with it (hook faults); None: a silent sister

    @property
    def by_hook(self) -> bool:
        return self.how.startswith(("begin-", "prologue-"))

    def evidence(self, host: str) -> str:
        """Regex of the failure in the primary mom's log."""
        return START_ERROR.format(host=host, what=self.start_error) if self.start_error else JOIN_TIMEOUT

    def inject(self, nemesis, host: str):
        """Start the fault on `host`. Hook faults first (the moms must receive them), silent ones last."""
        event, _, kind = self.how.partition("-")
        if self.by_hook:
            return nemesis.reject_hook(f"execjob_{event}", (host,), how=kind)
        start = {"mom-stop": nemesis.stop_mom, "partition": nemesis.partition, "pause": nemesis.pause_host}
        return start[self.how](host)


def start_with_fault(kit: StartupKit, nemesis, fault: SisterFault, hooks) -> None:
    """Install the test's hooks and the fault on its sister: hook faults before the moms' hook sync,
    silent faults after it (a stopped, partitioned or paused mom cannot receive hook files)."""
    host = kit.roles.sister(fault.sister)
    install_hooks(kit.pbs, kit.cluster, hooks, [fault.inject(nemesis, host)] if fault.by_hook else [])
    if not fault.by_hook:
        fault.inject(nemesis, host)


# A hook fault's sister must be in the launch hook's vnode_list_fail: those cases guard RJS-5. A
# silent sister is not listed (a recorded difference), so those cases pin the shipped other side.
LISTED_AS_FAILED = pytest.mark.guards("RJS-5")
SISTER_FAULTS = [
    # PTL t4: execjob_begin rejects on a sister that holds a big chunk.
    pytest.param(SisterFault("begin-reject", 1, "begin-reject", "JOIN_JOB"), marks=LISTED_AS_FAILED),
    pytest.param(SisterFault("begin-exception", 2, "begin-exception", "JOIN_JOB"), marks=LISTED_AS_FAILED),
    # PTL t5: execjob_prologue raises on a sister.
    pytest.param(
        SisterFault("prologue-exception", 2, "prologue-exception", "IM_EXEC_PROLOGUE"), marks=LISTED_AS_FAILED
    ),
    pytest.param(SisterFault("prologue-reject", 3, "prologue-reject", "IM_EXEC_PROLOGUE"), marks=LISTED_AS_FAILED),
    # Silent sisters: they never answer the join, the primary gives up after $sister_join_job_alarm.
    SisterFault("mom-sigstop", 1, "mom-stop"),
    SisterFault("partition", 2, "partition"),
    SisterFault("pause", 1, "pause"),
]


@pytest.mark.spec("RJS-1", "RJS-2", "RJS-5", "RJS-7", "RJS-8", "RJS-case")
@pytest.mark.guards("RJS-1", "RJS-2", "RJS-7", "RJS-8", "RJS-case")
@pytest.mark.parametrize("fault", SISTER_FAULTS, ids=lambda f: f.name)
@pytest.mark.usefixtures("short_alarms")
def test_failed_sister_pruned_away(kit, nemesis, conformance, names, *, fault, request) -> None:
    pbs, failed = kit.pbs, kit.roles.sister(fault.sister)
    start_with_fault(kit, nemesis, fault, {"pad": pad_hook(), "launch": prune_hook()})
    job_id = kit.submit(report_job(kit, "rs0"))
    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=START_TIMEOUT)
    assert job["tolerate_node_failures"] == "job_start"

    recs = kit.start_records(job_id)
    initial = recs["S"].fields["exec_vnode"]
    # Tolerance was exercised: the failed sister was assigned, then pruned away.
    assert failed in hosts_of(initial), f"{failed} not in the initial exec_vnode {initial}"
    assert select_chunks(recs["S"].resource_list["select"]) == select_chunks(PADDED_SELECT)
    assert recs["S"].resource_list["nodect"] == "5"
    pruned_from, pruned_to = kit.pruning(job_id)
    assert pruned_from == initial
    kit.mom.expect(f"Job;{job_id};.*{fault.evidence(failed)}", kit.since, timeout=10)
    if fault.how.startswith(("begin", "prologue")):
        kit.mom.expect(f"Job;{job_id};{IGNORING.format(host=failed)}", kit.since, timeout=10)

    expected = expected_prune(initial, ORIGINAL_SELECT, {failed})
    assert_assignment(job, expected, ORIGINAL_SELECT)
    assert pruned_to == job["exec_vnode"]
    assert recs["s"].fields["exec_vnode"] == job["exec_vnode"]
    assert recs["s"].fields["exec_host"] == job["exec_host"]
    assert select_chunks(recs["s"].resource_list["select"]) == select_chunks(ORIGINAL_SELECT)
    assert recs["s"].resource_list["nodect"] == "3"
    # Each start record's resource_assigned is the sum over its own exec_vnode: 8 cpus padded, 5 pruned.
    for rec in (recs["S"], recs["s"]):
        assigned = (int(rec.fields["resource_assigned.ncpus"]), size_kb(rec.fields["resource_assigned.mem"]))
        assert assigned == assigned_totals(rec.fields["exec_vnode"]), rec.raw
    fail_line = f"launch: found vnode_list_fail\\[{failed}\\]"
    if fault.by_hook:  # the launch hook saw the rejecting sister's vnode in vnode_list_fail
        try:
            kit.mom.expect(fail_line, kit.since, timeout=10)
        except WaitTimeout:
            met_empty_fail_list(kit, request, job_id, failed, knew=IGNORING.format(host=failed))
            raise
    else:  # a sister that never answered the join is pruned away but not listed
        kit.mom.absent(fail_line, kit.since)
        kit.mom.absent("launch: found vnode_list_fail", kit.since)
        conformance.difference(
            "RJS-5",
            spec_says="vnode_list_fail includes vnodes from sister moms that failed to join the job",
            openpbs_does=f"empty in execjob_launch when the sister never answered ({fault.how}); "
            "release_nodes still leaves it out",
            evidence=f"{JOIN_TIMEOUT}; no 'launch: found vnode_list_fail[...]' line; pruned to {pruned_to}",
        )

    kept = [s.host for c in expected for s in c]
    assert_reach(kit.report("rs0"), job_id, kept, names)

    # Healthy sisters that were released are free for other jobs at once.
    released = [h for h in hosts_of(initial) if h not in kept and h != failed]
    pbs.nodes.wait_state(released, "free", timeout=30)
    other = kit.submit(select=f"ncpus=1:host={released[0]}", place=None)
    pbs.jobs.wait(other, job_state="R", timeout=60)


# ---------------------------------------------------------------------------------------------
# Interface 1: tolerate_node_failures, every way of setting it


@pytest.mark.spec("RJS-1")
@pytest.mark.parametrize("value", ["all", "job_start", "none"])
def test_tolerance_set_with_qsub_and_qalter(kit, value) -> None:
    job_id = kit.submit(attributes={"tolerate_node_failures": value}, args=["-h"])
    assert kit.pbs.jobs.status(job_id)["tolerate_node_failures"] == value
    # The owner may change it while the job is queued.
    other = {"all": "job_start", "job_start": "none", "none": "all"}[value]
    res = kit.pbs.jobs.alter(job_id, "-W", f"tolerate_node_failures={other}", user=kit.user)
    assert res.ok, res.stderr
    assert kit.pbs.jobs.status(job_id)["tolerate_node_failures"] == other


@pytest.mark.spec("RJS-1")
@pytest.mark.guards("RJS-1")
def test_tolerance_unset_by_default_and_bad_value_refused(kit) -> None:
    job_id = kit.submit(args=["-h"])
    assert "tolerate_node_failures" not in kit.pbs.jobs.status(job_id)  # unset means 'none'
    res = kit.pbs.jobs.host.run(
        kit.pbs.jobs.line("qsub", "-W", "tolerate_node_failures=yes", "--", "/bin/true"), user=kit.user
    )
    assert not res.ok
    assert res.stderr.startswith("qsub: illegal -W value\n"), res.stderr  # refused by qsub itself (ECL check)
    res = kit.pbs.jobs.alter(job_id, "-W", "tolerate_node_failures=sometimes", user=kit.user)
    assert not res.ok
    # qalter leaves the check to the server: msg_badatval (PBSE_BADATVAL) with the job id
    assert res.stderr.strip() == f"qalter: Illegal attribute or resource value {job_id}", res.stderr
    assert "tolerate_node_failures" not in kit.pbs.jobs.status(job_id)


@pytest.mark.spec("RJS-1")
def test_tolerance_from_default_qsub_arguments(kit) -> None:
    res = kit.pbs.server.set({"default_qsub_arguments": "-Wtolerate_node_failures=all"})
    assert res.ok, res.stderr
    job_id = kit.submit(args=["-h"])
    assert kit.pbs.jobs.status(job_id)["tolerate_node_failures"] == "all"
    # What the user gives on the command line wins over the default.
    own = kit.submit(attributes={"tolerate_node_failures": "job_start"}, args=["-h"])
    assert kit.pbs.jobs.status(own)["tolerate_node_failures"] == "job_start"


@pytest.mark.spec("RJS-1")
def test_tolerance_from_queuejob_hook(kit) -> None:
    install_hooks(kit.pbs, kit.cluster, {"qjob": pad_hook(increment=None, tolerance="all")})
    job_id = kit.submit(args=["-h"])
    assert kit.pbs.jobs.status(job_id)["tolerate_node_failures"] == "all"


# Above this run_count the server holds a job whose starts keep failing: 2 x PBS_MAX_HOPCOUNT (10),
# src/server/req_runjob.c check_failed_attempts().
MAX_FAILED_STARTS = 20


@pytest.mark.spec("RJS-1", "RJS-2")
@pytest.mark.guards("RJS-1")
@pytest.mark.parametrize("tolerance", ["none", "all"])
@pytest.mark.usefixtures("short_alarms")
def test_tolerance_value_decides_a_start_with_a_failed_sister(kit, nemesis, tolerance) -> None:
    """No padding, no pruning hook: one sister's execjob_begin rejects the job. `none`: the start
    fails, the server requeues the job after each attempt and holds it when they run out; `all`:
    the primary ignores the failed sister and the job runs with it still assigned (only a hook's
    release_nodes would take it out)."""
    pbs, failed = kit.pbs, kit.roles.sister(1)
    start_with_fault(kit, nemesis, begin_reject(1), {})
    select = "+".join(f"ncpus=1:host={h}" for h in (kit.roles.primary, failed, kit.roles.sister(2)))
    job_id = kit.submit(select=select, attributes={"tolerate_node_failures": tolerance})
    if tolerance == "none":
        job = pbs.jobs.wait(job_id, job_state="H", timeout=START_TIMEOUT)
        assert (job["Hold_Types"], job["run_count"]) == ("s", MAX_FAILED_STARTS + 1)
        assert job["comment"] == "job held, too many failed attempts to run"
        assert "exec_vnode" not in job
        # The failed sister's error ends each start (seen naming it by address:port, not by name).
        any_host = START_ERROR.format(host=r"\S+", what="JOIN_JOB")
        kit.mom.expect(f"Job;{job_id};{any_host}", kit.since, 10)
        kit.server_log.expect(f"Job;{job_id};Job requeued, execution node  down", kit.since, 10)
        kit.mom.absent(f"Job;{job_id};ignoring error from", kit.since)
        assert "offline" not in pbs.nodes.status(failed)["state"]  # not tolerant: nobody offlines it
    else:
        job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=START_TIMEOUT)
        assert job["run_count"] == 1
        assert failed in hosts_of(job["exec_vnode"]), job["exec_vnode"]  # ignored, not pruned
        kit.mom.expect(f"Job;{job_id};{START_ERROR.format(host=failed, what='JOIN_JOB')}", kit.since, 10)
        kit.mom.expect(f"Job;{job_id};{IGNORING.format(host=failed)}", kit.since, 10)


@pytest.mark.spec("RJS-1", "RJS-2", "RJS-8")
@pytest.mark.guards("RJS-1", "RJS-2", "RJS-8")
def test_qalter_of_running_job_takes_effect_on_rerun(kit, short_alarms) -> None:
    """PTL t7 (last part): a non-tolerant job is not pruned ("no nodes released ..."); qalter
    while it runs changes nothing until the job is rerun, which is then pruned."""
    pbs = kit.pbs
    install_hooks(pbs, kit.cluster, {"launch": prune_hook(keep=ORIGINAL_SELECT, on_failure=None)})
    job_id = kit.submit(select=PADDED_SELECT)
    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=START_TIMEOUT)
    kit.mom.expect(NOT_TOLERANT.format(job=job_id), kit.since, timeout=30)
    assert len(chunks_of(job["exec_vnode"])) == 5
    first = job["exec_vnode"]

    res = pbs.jobs.alter(job_id, "-W", "tolerate_node_failures=job_start", user=kit.user)
    assert res.ok, res.stderr
    job = pbs.jobs.status(job_id)
    assert job["tolerate_node_failures"] == "job_start"
    assert job["exec_vnode"] == first  # consulted only at the next start
    assert not kit.accounting.of(job_id, "s", kit.since)

    res = pbs.jobs.rerun(job_id)
    assert res.ok, res.stderr
    job = wait_until(
        lambda: pbs.jobs.status(job_id),
        lambda j: j.get("job_state") == "R" and j.get("substate") == RUNNING and int(j.get("run_count", 0)) >= 1,
        timeout=START_TIMEOUT,
        describe=f"job {job_id} running again after qrerun",
    )
    second_start = [r for r in kit.accounting.of(job_id, "S", kit.since)]
    assert len(second_start) == 2
    initial = second_start[1].fields["exec_vnode"]
    assert_assignment(job, expected_prune(initial, ORIGINAL_SELECT), ORIGINAL_SELECT)
    assert kit.pruning(job_id) == (initial, job["exec_vnode"])
    assert kit.start_records(job_id, "s")["s"].fields["exec_vnode"] == job["exec_vnode"]


# ---------------------------------------------------------------------------------------------
# Interface 7: increment_chunks, every example of the spec, from a real queuejob hook (PTL t13)

SPEC_SELECT = "ncpus=3:mem=1gb+1:ncpus=2:mem=2gb+2:ncpus=1:mem=3gb"
SPEC_SELECT_5 = "5:ncpus=3:mem=1gb+1:ncpus=2:mem=2gb+2:ncpus=1:mem=3gb"
INCREMENT_EXAMPLES = [
    (SPEC_SELECT, 2, "1:ncpus=3:mem=1gb+3:ncpus=2:mem=2gb+4:ncpus=1:mem=3gb"),
    (SPEC_SELECT, "3", "1:ncpus=3:mem=1gb+4:ncpus=2:mem=2gb+5:ncpus=1:mem=3gb"),
    (SPEC_SELECT, "23.5%", "1:ncpus=3:mem=1gb+2:ncpus=2:mem=2gb+3:ncpus=1:mem=3gb"),
    (SPEC_SELECT, {0: 0, 1: 4, 2: "50%"}, "1:ncpus=3:mem=1gb+5:ncpus=2:mem=2gb+3:ncpus=1:mem=3gb"),
    (SPEC_SELECT_5, "50%", "7:ncpus=3:mem=1gb+2:ncpus=2:mem=2gb+3:ncpus=1:mem=3gb"),
    (SPEC_SELECT_5, {0: "50%", 1: "50%", 2: "50%"}, "7:ncpus=3:mem=1gb+2:ncpus=2:mem=2gb+3:ncpus=1:mem=3gb"),
]


@pytest.mark.spec("RJS-7")
@pytest.mark.guards("RJS-7")
def test_increment_chunks_spec_examples(kit, conformance) -> None:
    cases = [
        (SPEC_SELECT, [spec for sel, spec, _ in INCREMENT_EXAMPLES if sel == SPEC_SELECT]),
        (SPEC_SELECT_5, [spec for sel, spec, _ in INCREMENT_EXAMPLES if sel == SPEC_SELECT_5]),
    ]
    zero = 'pbs.select("ncpus=1+ncpus=2").increment_chunks(0)'
    hook = select_probe_hook("incr", increment_probe=cases, draft_probe=[zero])
    install_hooks(kit.pbs, kit.cluster, {"incr": hook})
    job_id = kit.submit(args=["-h"])
    assert kit.pbs.jobs.status(job_id)["job_state"] == "H"  # the queuejob hook accepted it
    for select in (SPEC_SELECT, SPEC_SELECT_5):
        kit.server_log.expect(f"incr: sel={re.escape(select)}$", kit.since, timeout=20)
    for _, spec, want in INCREMENT_EXAMPLES:
        line = kit.server_log.expect(
            f"incr: sel.increment_chunks\\({re.escape(repr(spec))}\\)=", kit.since, timeout=20
        ).message
        got, _, kind = line.split(")=", 1)[1].rpartition(" [")
        assert got == want, line
        assert kind == "select]", line  # a pbs.select, also where the spec says "would return a string"
    # A plain 0 ("the amount to add") is refused; {0: 0} above is accepted.
    got = kit.server_log.expect(f"incr: draft {re.escape(zero)} -> ", kit.since, 20).message.split(" -> ", 1)[1]
    assert got == "ValueError: bad increment specs", got
    conformance.difference(
        "RJS-7",
        spec_says="if 'increment_spec' is a number (int or long), then it will be the amount to add",
        openpbs_does="increment_chunks(0) raises ValueError('bad increment specs')",
        evidence=got,
    )


@pytest.mark.spec("RJS-draft", "RJS-7")
@pytest.mark.guards("RJS-draft")
def test_early_draft_api_absent(kit, conformance) -> None:
    """select_reliable_startup, select_requested and increment_chunks(first_chunk=...) never shipped."""
    probes = [
        'j.Resource_List["select"].increment_chunks(1, first_chunk=True)',
        "j.select_requested",
        'j.Resource_List["select_reliable_startup"]',
    ]
    hook = select_probe_hook("draft", draft_probe=probes)
    install_hooks(kit.pbs, kit.cluster, {"draft": hook})
    kit.submit(args=["-h"])
    got = {
        p: kit.server_log.expect(f"draft: draft {re.escape(p)} -> ", kit.since, timeout=20).message.split(" -> ", 1)[1]
        for p in probes
    }
    assert got[probes[0]].startswith("TypeError:"), got
    assert "first_chunk" in got[probes[0]], got
    assert got[probes[1]] == "AttributeError: '_job' object has no attribute 'select_requested'", got
    assert got[probes[2]] == "AttributeError: 'pbs_resource' object has no attribute 'select_reliable_startup'", got
    res = kit.pbs.jobs.host.run(
        kit.pbs.jobs.line("qsub", "-l", "select_reliable_startup=ncpus=1", "--", "/bin/true"), user=kit.user
    )
    assert not res.ok
    assert "Unknown resource" in res.stderr, res.stderr
    conformance.difference(
        "RJS-draft",
        spec_says="increment_chunks(increment, first_chunk=False); select_requested attribute; "
        "select_reliable_startup resource",
        openpbs_does=f"increment_chunks(1, first_chunk=True) -> {got[probes[0]]}; "
        f"select_requested -> {got[probes[1]]}; qsub -l select_reliable_startup -> {res.stderr.strip()}",
        evidence=str(got),
    )


# ---------------------------------------------------------------------------------------------
# Interface 8: release_nodes(keep_select)

KEEP_PLUS_ONE = ORIGINAL_SELECT + "+ncpus=1:mem=1gb"


@pytest.mark.spec("RJS-2", "RJS-8", "RJS-case")
@pytest.mark.guards("RJS-2", "RJS-8", "RJS-case")
@pytest.mark.parametrize("keep", [None, KEEP_PLUS_ONE], ids=["keep-original-select", "keep-original-plus-one-chunk"])
def test_prune_without_failures(kit, short_alarms, keep) -> None:
    """PTL t8 (nothing fails: pruned back to the request) and t14 (keep_select with one chunk more)."""
    pbs = kit.pbs
    install_hooks(pbs, kit.cluster, {"pad": pad_hook(), "launch": prune_hook(keep=keep)})
    job_id = kit.submit()
    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=START_TIMEOUT)
    recs = kit.start_records(job_id)
    initial = recs["S"].fields["exec_vnode"]
    want = keep or ORIGINAL_SELECT
    assert select_chunks(job["Resource_List"]["site"]) == select_chunks(ORIGINAL_SELECT)
    assert_assignment(job, expected_prune(initial, want), want)
    assert kit.pruning(job_id) == (initial, job["exec_vnode"])
    assert recs["s"].fields["exec_vnode"] == job["exec_vnode"]
    assert select_chunks(recs["s"].resource_list["select"]) == select_chunks(want)
    kit.mom.expect(f"launch: release_nodes\\(keep_select={re.escape(want)}\\) returned a job", kit.since, 10)
    kit.mom.absent("launch: found vnode_list_fail", kit.since)


@pytest.mark.spec("RJS-8")
@pytest.mark.guards("RJS-8")
@pytest.mark.parametrize("action", ["hold_rerun", "delete"])
def test_impossible_keep_select(kit, short_alarms, conformance, action) -> None:
    """PTL t7 (hold + rerun) and t15 (delete): no chunk of the job has 5 cpus."""
    pbs = kit.pbs
    keep = "ncpus=2:mem=2gb+ncpus=5:mem=3gb"
    install_hooks(pbs, kit.cluster, {"pad": pad_hook(), "launch": prune_hook(keep=keep, on_failure=action)})
    job_id = kit.submit()
    kit.mom.expect(f"Job;{job_id};{re.escape(NEED.format(keep=keep))}", kit.since, START_TIMEOUT)
    kit.mom.expect(f"Job;{job_id};{COULD_NOT_SATISFY} \\(ncpus=5 ssi=0 mem=3145728 ", kit.since, 10)
    have = kit.mom.expect(f"Job;{job_id};{re.escape(HAVE)}", kit.since, 10).message.split(HAVE, 1)[1]
    initial = kit.start_records(job_id, "S")["S"].fields["exec_vnode"]
    assert have == "", have  # shipped: nothing after the colon (see the difference below)
    conformance.difference(
        "RJS-8",
        spec_says="HAVE chunks from job's exec_vnode (<exec_vnode value>",
        openpbs_does="HAVE chunks from job's exec_vnode: (empty)",
        evidence=f"Job;{job_id};{HAVE}{have!r}; the job's exec_vnode was {initial}",
    )
    kit.mom.expect(re.escape(REJECTED_BY.format(event="execjob_launch", hook="launch")), kit.since, 10)
    kit.mom.expect(f"Job;{job_id};unsuccessful at LAUNCH", kit.since, 10)
    if action == "hold_rerun":
        job = pbs.jobs.wait(job_id, job_state="H", timeout=60)
        assert job["Hold_Types"] == "s"
        assert "exec_vnode" not in job
    else:
        pbs.jobs.wait_gone(job_id, timeout=60)
    assert not kit.accounting.of(job_id, "s", kit.since)
    pbs.nodes.wait_count("free", len(pbs.nodes.all()), timeout=60)


@pytest.mark.spec("RJS-8")
@pytest.mark.guards("RJS-8")
def test_release_nodes_outside_prologue_and_launch_returns_none(kit, short_alarms) -> None:
    pbs = kit.pbs
    begin = prune_hook("execjob_begin", keep=ORIGINAL_SELECT, on_failure=None, log_lists=False)
    install_hooks(pbs, kit.cluster, {"pad": pad_hook(), "begin": begin})
    job_id = kit.submit()
    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=START_TIMEOUT)
    kit.mom.expect(f"begin: release_nodes\\(keep_select={re.escape(ORIGINAL_SELECT)}\\) returned None", kit.since, 20)
    assert select_chunks(job["schedselect"]) == select_chunks(PADDED_SELECT)
    assert len(chunks_of(job["exec_vnode"])) == 5
    kit.mom.absent(f"Job;{job_id};{PRUNED_TO}", kit.since)
    assert not kit.accounting.of(job_id, "s", kit.since)


# ---------------------------------------------------------------------------------------------
# Shapes (PTL t11, t12, t16, t17, t20)


def begin_reject(sister: int) -> SisterFault:
    """Sister `sister`'s execjob_begin hook rejects the job."""
    return SisterFault(f"begin-reject-sister-{sister}", sister, "begin-reject", "JOIN_JOB")


def run_pruned(
    kit: StartupKit, nemesis, fault: SisterFault | None, *, keep: str | None = None, event="execjob_launch", **submit
):
    """Hooks (pad + prune), the fault, the job; returns (job id, running job, initial exec_vnode)."""
    hooks = {"pad": pad_hook(), "prune": prune_hook(event, keep=keep)}
    if fault is None:
        install_hooks(kit.pbs, kit.cluster, hooks)
    else:
        start_with_fault(kit, nemesis, fault, hooks)
    job_id = kit.submit(**submit)
    job = kit.pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=START_TIMEOUT)
    initial = kit.start_records(job_id, "S")["S"].fields["exec_vnode"]
    if fault is not None:
        failed = kit.roles.sister(fault.sister)
        assert failed in hosts_of(initial), f"{failed} not in the initial exec_vnode {initial}"
    assert kit.pruning(job_id) == (initial, job["exec_vnode"])
    return job_id, job, initial


@pytest.mark.spec("RJS-2", "RJS-5", "RJS-8")
@pytest.mark.guards("RJS-2", "RJS-5", "RJS-8")
def test_chunk_with_zero_ncpus(kit, nemesis, short_alarms) -> None:
    """PTL t11: a chunk asking for memory only is padded, seen in vnode_list and pruned like any other."""
    select, failed = "ncpus=2:mem=2gb+ncpus=2:mem=2gb+ncpus=0:mem=1gb", kit.roles.sister(3)
    job_id, job, initial = run_pruned(kit, nemesis, begin_reject(3), select=select, script=None)
    zero_hosts = [c[0].host for c in chunks_of(initial) if sum(s.ncpus for s in c) == 0]
    assert len(zero_hosts) == 2, initial
    for host in hosts_of(initial):
        kit.mom.expect(f"launch: found vnode_list\\[{re.escape(host)}\\]", kit.since, 10)
    kit.mom.expect(f"launch: found vnode_list_fail\\[{re.escape(failed)}\\]", kit.since, 10)
    assert_assignment(job, expected_prune(initial, select, {failed}), select)
    s = kit.start_records(job_id, "s")["s"]
    assert s.fields["exec_vnode"] == job["exec_vnode"]


@pytest.mark.spec("RJS-2", "RJS-8")
@pytest.mark.guards("RJS-8")
def test_mpiprocs_and_ompthreads_survive_pruning(kit, nemesis, short_alarms, names) -> None:
    """PTL t12: the pruned job keeps mpiprocs/ompthreads; $PBS_NODEFILE lists each kept host mpiprocs times."""
    select = "+".join(f"ncpus={n}:mem={n}gb:mpiprocs={n}:ompthreads=1" for n in (2, 2, 1))
    _, job, initial = run_pruned(kit, nemesis, begin_reject(1), select=select, script=report_job(kit, "rs0", indexes=1))
    expected = expected_prune(initial, select, {kit.roles.sister(1)})
    assert_assignment(job, expected, select)
    assert int(job["Resource_List"]["mpiprocs"]) == 5
    assert [c.resources.get("mpiprocs") for c in parse_select(job["schedselect"])] == ["2", "2", "1"], job[
        "schedselect"
    ]
    assert [c.resources.get("ompthreads") for c in parse_select(job["schedselect"])] == ["1"] * 3
    mpiprocs = [2, 2, 1]
    want = [names[c[0].host] for c, n in zip(expected, mpiprocs, strict=True) for _ in range(n)]
    assert jobscripts.section(kit.report("rs0"), "nodefile") == want


@pytest.mark.spec("RJS-8")
@pytest.mark.guards("RJS-8")
def test_scatter_excl_keeps_exclusive_vnodes(kit, nemesis, short_alarms) -> None:
    """PTL t16: with place=scatter:excl the kept vnodes stay job-exclusive, the released are free."""
    fault, failed = SisterFault("begin-exception", 1, "begin-exception", "JOIN_JOB"), kit.roles.sister(1)
    job_id, job, initial = run_pruned(kit, nemesis, fault, place="scatter:excl")
    expected = expected_prune(initial, ORIGINAL_SELECT, {failed})
    assert_assignment(job, expected, ORIGINAL_SELECT)
    kept = [s.host for c in expected for s in c]
    released = [h for h in hosts_of(initial) if h not in kept and h != failed]
    kit.pbs.nodes.wait_state(kept, "job-exclusive", timeout=30)
    kit.pbs.nodes.wait_state(released, "free", timeout=30)
    assert kit.start_records(job_id, "s")["s"].fields["Resource_List.place"] == "scatter:excl"


@pytest.mark.spec("RJS-2", "RJS-8")
@pytest.mark.guards("RJS-2", "RJS-8")
def test_place_free_breaks_a_super_chunk(kit, nemesis, short_alarms) -> None:
    """PTL t17: with place=free a padded chunk spans two vnodes of the multi-vnode host; keep_select
    takes one cpu of it, so the kept chunk is a part of the super-chunk."""
    select = f"ncpus=1:host={kit.roles.primary}+ncpus=2:host={kit.roles.multi}"
    keep = "ncpus=1+ncpus=1"
    job_id, job, initial = run_pruned(kit, nemesis, None, keep=keep, select=select, place="free")
    assert [len(c) for c in chunks_of(initial)] == [1, 2, 2], initial  # super-chunks over the multi-vnode host
    expected = expected_prune(initial, keep)
    assert [s.vnode for s in expected[1]] == [chunks_of(initial)[1][0].vnode]
    assert_assignment(job, expected, keep)
    s = kit.start_records(job_id, "s")["s"]
    assert chunks_of(s.fields["exec_vnode"]) == expected


@pytest.mark.spec("RJS-2", "RJS-8")
@pytest.mark.guards("RJS-2", "RJS-8")
def test_job_array_pruned_per_subjob_in_prologue(kit, nemesis, short_alarms) -> None:
    """PTL t20: every subjob is padded, started on the failed sister too, and pruned by an
    execjob_prologue hook; each has its own 'S' and 's' record."""
    pbs = kit.pbs
    select, failed = "ncpus=1+ncpus=1", kit.roles.sister(2)
    hooks = {"pad": pad_hook(), "prolo": prune_hook("execjob_prologue")}
    start_with_fault(kit, nemesis, begin_reject(2), hooks)
    # One subjob at a time: when two subjobs were pruned in the same second, one of them stayed
    # in substate 41 (seen once; see docs/suites/reliable_startup.md).
    array_id = kit.submit(select=select, array="1-2", attributes={"max_run_subjobs": 1})
    pbs.jobs.wait(array_id, job_state="B", timeout=START_TIMEOUT)
    for index in (1, 2):
        sub = array_id.replace("[]", f"[{index}]")
        if index == 2:  # the first subjob leaves, the second one starts
            pbs.jobs.delete(array_id.replace("[]", "[1]"))
        job = pbs.jobs.wait(sub, job_state="R", substate=RUNNING, timeout=START_TIMEOUT)
        recs = kit.start_records(sub)
        initial = recs["S"].fields["exec_vnode"]
        assert failed in hosts_of(initial), f"{sub}: {initial}"
        assert select_chunks(recs["S"].resource_list["select"]) == select_chunks("1:ncpus=1+2:ncpus=1")
        assert_assignment(job, expected_prune(initial, select, {failed}), select)
        assert recs["s"].fields["exec_vnode"] == job["exec_vnode"]
        assert kit.pruning(sub) == (initial, job["exec_vnode"])
        kit.mom.expect(f"prolo: job.exec_vnode={re.escape(job['exec_vnode'])}", kit.since, 10)


# ---------------------------------------------------------------------------------------------
# The site hook pack (hooks/reliable_startup.py as rjs_pad + rjs_prune)

SITE_HOOKS = ("rjs_pad", "rjs_prune")


def export_config(pbs, hook: str) -> str:
    return pbs.hooks.check("qmgr", "-c", f"export hook {hook} application/x-config default").stdout


@pytest.fixture
def site_hooks(pbs, cluster):
    """Enables rjs_pad/rjs_prune (the baseline disables them again); yields a function importing a
    JSON config into one of them; the deployed configs are imported back and checked afterwards."""
    deployed = {h: export_config(pbs, h) for h in SITE_HOOKS}
    for hook in SITE_HOOKS:
        pbs.server.qmgr(f"set hook {hook} enabled=true")

    def configure(hook: str, text: str) -> None:
        pbs.hooks.import_file(hook, text, "application/x-config")

    yield configure
    for hook, text in deployed.items():
        if export_config(pbs, hook) != text:
            pbs.hooks.import_file(hook, text, "application/x-config")
        assert export_config(pbs, hook) == text, f"{hook} config not restored"


@pytest.mark.spec("RJS-case", "RJS-1", "RJS-2", "RJS-7", "RJS-8")
@pytest.mark.guards("RJS-case", "RJS-1", "RJS-2", "RJS-7", "RJS-8")
def test_site_hook_pack_prunes_a_silent_sister(kit, nemesis, short_alarms, site_hooks, conformance) -> None:
    """The deployed rjs_pad/rjs_prune pair, end to end. rjs_prune keeps release_nodes()'s result
    referenced (hooks/reliable_startup.md): before it did, pbs_python died as the hook ended."""
    pbs, silent = kit.pbs, kit.roles.sister(2)
    wait_mom_hooks(pbs, kit.cluster)
    nemesis.stop_mom(silent)
    job_id = kit.submit()
    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=START_TIMEOUT)
    assert job["tolerate_node_failures"] == "job_start"
    assert select_chunks(job["Resource_List"]["site"]) == select_chunks(ORIGINAL_SELECT)
    recs = kit.start_records(job_id)
    initial = recs["S"].fields["exec_vnode"]
    assert silent in hosts_of(initial), initial
    assert select_chunks(recs["S"].resource_list["select"]) == select_chunks(PADDED_SELECT)
    kit.mom.expect(f"Job;{job_id};{JOIN_TIMEOUT}", kit.since, 10)
    assert_assignment(job, expected_prune(initial, ORIGINAL_SELECT, {silent}), ORIGINAL_SELECT)
    assert kit.pruning(job_id) == (initial, job["exec_vnode"])
    assert recs["s"].fields["exec_vnode"] == job["exec_vnode"]
    kit.mom.expect(f"reliable_startup: pruned to exec_vnode={re.escape(job['exec_vnode'])}", kit.since, 10)
    kit.server_log.expect("reliable_startup: padded select ", kit.since, 10)
    kit.mom.absent("resulted in nonzero exit status", kit.since)
    conformance.difference(
        "RJS-8",
        spec_says="release_nodes() returns the modified job object (a hook may use or drop it)",
        openpbs_does="returns the event's job without a new reference "
        "(pbs_python_svr_internal.c `py_return = py_job;`); a hook that drops it (e.g. a local of a function) "
        "makes pbs_python die by a signal: mom logs 'run_hook, execv of /opt/pbs/bin/pbs_python resulted in "
        "nonzero exit status=-4' and 'Internal server error encountered. Skipping hook rjs_prune', and the job "
        "runs unpruned",
        evidence="seen with rjs_prune before it kept the result (2 runs of 2); "
        "this run, with the reference kept, pruned",
    )


@pytest.mark.spec("RJS-case", "RJS-8")
@pytest.mark.guards("RJS-8")
def test_site_hook_pack_deletes_when_pruning_fails(kit, nemesis, short_alarms, site_hooks) -> None:
    """Configured on_prune_failure=delete: both 2-cpu sisters are silent, so the padded job cannot
    be pruned back to two 2-cpu chunks; the hook deletes it."""
    pbs = kit.pbs
    prune_config = '{"on_prune_failure": "delete"}'
    site_hooks("rjs_prune", prune_config)
    wait_mom_hooks(pbs, kit.cluster, {"rjs_prune": (None, prune_config)})  # the deployed body, this config
    silent = [kit.roles.sister(1), kit.roles.sister(2)]
    for host in silent:  # the 2-cpu sisters: only the primary keeps 2 cpus
        nemesis.stop_mom(host)
    job_id = kit.submit()
    kit.mom.expect(f"Job;{job_id};{re.escape(NEED.format(keep=ORIGINAL_SELECT))}", kit.since, START_TIMEOUT)
    kit.mom.expect("could not prune the job to its original select .*; job deleted", kit.since, 30)
    kit.server_log.expect(f"Job;{job_id};hook rejected request, requiring job to be deleted", kit.since, 30)
    # Exiting: it stays E until the silent sisters answer (after the heal), then it finishes.
    pbs.jobs.wait(job_id, job_state=("E", "F"), timeout=60)
    initial = kit.start_records(job_id, "S")["S"].fields["exec_vnode"]
    assert set(silent) <= set(hosts_of(initial)), initial
    assert not kit.accounting.of(job_id, "s", kit.since)


@pytest.mark.spec("RJS-2", "RJS-5", "RJS-8")
@pytest.mark.guards("RJS-2", "RJS-5", "RJS-8")
def test_two_failed_sisters_a_bigger_chunk_serves_the_small_one(kit, nemesis, short_alarms) -> None:
    """PTL t6: both 1-cpu chunks fail (execjob_begin reject on one host, execjob_prologue
    exception on the other), so the 1-cpu chunk of keep_select is cut out of a spare 2-cpu chunk."""
    pbs, at_prologue, at_begin = kit.pbs, kit.roles.sister(3), kit.roles.sister(4)  # the 1-cpu sisters
    # A reject and an exception, as PTL's t6 mixes them.
    begin = nemesis.reject_hook("execjob_begin", (at_begin,), how="reject")
    prologue = nemesis.reject_hook("execjob_prologue", (at_prologue,), how="exception")
    install_hooks(pbs, kit.cluster, {"pad": pad_hook(), "launch": prune_hook()}, [begin, prologue])
    job_id = kit.submit()
    job = pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=START_TIMEOUT)
    initial = kit.start_records(job_id, "S")["S"].fields["exec_vnode"]
    small = [c[0].host for c in chunks_of(initial) if c[0].ncpus == 1]
    assert small == [at_prologue, at_begin], initial  # the failures hit exactly the small chunks
    kit.mom.expect(f"Job;{job_id};{START_ERROR.format(host=at_begin, what='JOIN_JOB')}", kit.since, 10)
    kit.mom.expect(f"Job;{job_id};{START_ERROR.format(host=at_prologue, what='IM_EXEC_PROLOGUE')}", kit.since, 10)
    expected = expected_prune(initial, ORIGINAL_SELECT, {at_prologue, at_begin})
    assert (expected[2][0].ncpus, expected[2][0].host) == (1, hosts_of(initial)[2])
    assert_assignment(job, expected, ORIGINAL_SELECT)
    assert kit.pruning(job_id) == (initial, job["exec_vnode"])
    assert kit.start_records(job_id, "s")["s"].fields["exec_vnode"] == job["exec_vnode"]
