"""Admin suspend and the node 'maintenance' state (spec: shared/specs/admin-suspend-maintenance.txt).

Each test is one scenario; the evidence is job and node state from `-F json`, the processes of
the job seen with ps on their hosts, shipped strings from the CLI, and the server, scheduler and
mom logs and the accounting records. PTL's 23 scenarios of pbs_admin_suspend.py map to these tests
in docs/suites/admin_suspend.md.

Hosts and users are taken by role from the `topology` fixture (pbs_harness/topology.py): "plain"
hosts are execution hosts other than the server host that have a single (natural) vnode; the
multi-vnode host is one with more vnodes than its natural one; the localssd vnode offers the custom
resource `localssd`; the job owner, another user, the PBS operator and the PBS manager are the test
accounts of the inventory. A need the cluster cannot meet skips the test.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest

from pbs_harness.evidence.accounting import AccountingReader
from pbs_harness.evidence.logs import mom_log, sched_log, server_log
from pbs_harness.pbs.base import parse_json
from pbs_harness.pbs.nodes import states
from pbs_harness.pbs.parsers import vnodes_of
from pbs_harness.plugin import call_failed
from pbs_harness.waits import wait_until
from ptl_tests.admin_suspend_helpers import (
    ATTRRO,
    BAD_NODE_VALUE,
    BADSTATE,
    JOBEXIST,
    PERM,
    RUNNING,
    SCHED_SUSPENDED,
    SUSPENDED,
    WRONG_RESUME,
    Kit,
    hook_log_vnode_maintenance,
    maintenance_jobs,
    proc_state,
    qmgr_on_a_terminal,
    terminal_lines,
    wait_nodes,
    wait_procs,
)
from ptl_tests.hook_files import create_hook

pytestmark = [pytest.mark.acceptance, pytest.mark.admin_suspend]

FREE = {"free"}
MAINT = {"maintenance"}

# Jobs (and work directories) of failed tests: they stay for the evidence and the harness's
# restore; the job history is purged before any server restart of this module and at its end,
# the directories at its end (see admin_suspend_helpers for why the history matters).
LEFT_BEHIND: list[str] = []
LEFT_DIRS: list[str] = []


def purge_left_behind(kit_or_pbs) -> None:
    pbs = getattr(kit_or_pbs, "pbs", kit_or_pbs)
    while LEFT_BEHIND:
        job_id = LEFT_BEHIND.pop()
        pbs.jobs.delete(job_id, force=True)
        pbs.jobs.forget(job_id)


@pytest.fixture(scope="module", autouse=True)
def _purge_at_module_end(pbs):
    yield
    purge_left_behind(pbs)
    while LEFT_DIRS:
        pbs.cluster.client.run(["rm", "-rf", LEFT_DIRS.pop()])


@pytest.fixture
def kit(request, pbs, cluster, topology):
    k = Kit(pbs, cluster, topology.users.owner)
    yield k
    if call_failed(request.node):
        LEFT_BEHIND.extend(k.jobs)  # keep the state for the evidence folder; purged later
        LEFT_DIRS.append(k.dir)
    else:
        k.cleanup()


def accounting(cluster) -> AccountingReader:
    return AccountingReader(cluster.server, str(cluster.pbs_home))


def cli_error(cmd: str, message: str, job_id: str) -> str:
    """What a job command prints for a server error (src/lib/Libcmds/err_handling.c prt_job_err)."""
    return f"{cmd}: {message} {job_id}\n"


def chunks_on(hosts: list[str]) -> str:
    return "+".join(f"1:ncpus=1:host={h}" for h in hosts)


# ---------------------------------------------------------------------------------------------
# admin-suspend and admin-resume
# ---------------------------------------------------------------------------------------------


@pytest.mark.needs_moms(3)
@pytest.mark.spec("AS-2", "AS-1", "AS-4")
@pytest.mark.guards("AS-2", "AS-1", "AS-4")
def test_admin_suspend_stops_the_job_on_every_host_and_puts_all_its_vnodes_in_maintenance(
    kit, pbs, cluster, topology
) -> None:
    hosts = topology.plain_hosts(3)
    job = kit.sleepers(chunks_on(hosts))
    assert {p.host for p in job.procs} == set(hosts)  # a sleep per chunk, on every host of the job
    since = datetime.now()

    kit.admin(job.job_id, "admin-suspend")

    status = pbs.jobs.wait(job.job_id, job_state="S", substate=SUSPENDED, timeout=10)
    wait_procs(cluster, job.procs, "stopped")
    nodes = wait_nodes(pbs, {h: (MAINT, [job.job_id]) for h in hosts})
    others = [n for n in nodes if n not in vnodes_of(status["exec_vnode"])]
    assert not [n for n in others if "maintenance" in states(nodes[n]) or maintenance_jobs(nodes[n])]
    server_log(cluster).expect(
        rf";Job;{re.escape(job.job_id)};admin-suspend job by root@{re.escape(topology.server.name)}$", since, timeout=10
    )
    accounting(cluster).wait_for(job.job_id, "z", 1, since, timeout=10)


@pytest.mark.needs_moms(2)
@pytest.mark.spec("AS-3", "AS-4")
@pytest.mark.guards("AS-3", "AS-4")
def test_admin_resume_resumes_at_once_with_scheduling_off(kit, pbs, cluster, topology) -> None:
    hosts = topology.plain_hosts(2)
    job = kit.sleepers(chunks_on(hosts))
    kit.admin(job.job_id, "admin-suspend")
    wait_procs(cluster, job.procs, "stopped")
    wait_nodes(pbs, {h: (MAINT, [job.job_id]) for h in hosts})
    pbs.server.set({"scheduling": False})
    try:
        since = datetime.now()
        kit.admin(job.job_id, "admin-resume")

        pbs.jobs.wait(job.job_id, job_state="R", substate=RUNNING, timeout=10)
        wait_procs(cluster, job.procs, "running")  # the same processes continue
        nodes = wait_nodes(pbs, {h: (FREE, []) for h in hosts})
        assert all(nodes[h]["resources_assigned"]["ncpus"] == 1 for h in hosts)
        # No scheduling cycle looked at the job: the server resumed it directly.
        sched_log(cluster).absent(rf";Job;{re.escape(job.job_id)};", since)
        accounting(cluster).wait_for(job.job_id, "r", 1, since, timeout=10)
    finally:
        pbs.server.set({"scheduling": True})


@pytest.mark.spec("AS-3", "AS-interactions")
def test_plain_resume_waits_for_the_scheduler_unlike_admin_resume(kit, pbs, cluster, topology) -> None:
    (host,) = topology.plain_hosts(1)
    job = kit.sleepers(chunks_on([host]))
    pbs.server.set({"scheduling": False})
    try:
        kit.admin(job.job_id, "suspend")
        pbs.jobs.wait(job.job_id, job_state="S", substate=SUSPENDED, timeout=10)
        wait_procs(cluster, job.procs, "stopped")
        wait_nodes(pbs, {host: (FREE, [])})  # a plain suspend never means maintenance

        kit.admin(job.job_id, "resume")
        # 'resume' only marks the job for the scheduler, which is off: still suspended, still stopped.
        pbs.jobs.wait(job.job_id, job_state="S", substate=SCHED_SUSPENDED, timeout=10)
        assert all(proc_state(cluster, p).startswith("T") for p in job.procs)
    finally:
        pbs.server.set({"scheduling": True})
    pbs.jobs.wait(job.job_id, job_state="R", substate=RUNNING, timeout=30)
    wait_procs(cluster, job.procs, "running")


@pytest.mark.needs_moms(2)
@pytest.mark.spec("AS-1", "AS-3", "AS-4")
@pytest.mark.guards("AS-1", "AS-3", "AS-4")
def test_a_node_leaves_maintenance_only_when_its_last_admin_suspended_job_is_resumed(
    kit, pbs, cluster, topology, conformance
) -> None:
    shared, other = topology.plain_hosts(2)
    a = kit.sleepers(chunks_on([shared, other]))
    b = kit.sleepers(chunks_on([shared]))

    kit.admin(a.job_id, "admin-suspend")
    wait_nodes(pbs, {shared: (MAINT, [a.job_id]), other: (MAINT, [a.job_id])})
    # Other jobs on a node in maintenance keep running until they are suspended themselves.
    assert pbs.jobs.status(b.job_id)["substate"] == RUNNING
    wait_procs(cluster, b.procs, "running")

    kit.admin(b.job_id, "admin-suspend")
    wait_nodes(pbs, {shared: (MAINT, [a.job_id, b.job_id]), other: (MAINT, [a.job_id])})
    shown = pbs.nodes.run("pbsnodes", "-v", shared).stdout
    listing = re.search(r"^\s*maintenance_jobs = (.*)$", shown, re.M)
    assert listing, shown
    assert listing[1] == f"{a.job_id},{b.job_id}"
    conformance.difference(
        "AS-4",
        spec_says='the example shows "maintenance_jobs = 1351.mars, 1352.mars" (comma and space)',
        openpbs_does="pbsnodes prints the ids joined by a bare comma",
        evidence=listing[0].strip(),
    )

    kit.admin(a.job_id, "admin-resume")
    wait_nodes(pbs, {shared: (MAINT, [b.job_id]), other: (FREE, [])})
    pbs.jobs.wait(a.job_id, job_state="R", substate=RUNNING, timeout=10)

    kit.admin(b.job_id, "admin-resume")
    # Out of maintenance; both jobs run again on `shared` (all of its cpus when it has two).
    busy = {"job-busy"} if pbs.nodes.status(shared)["resources_available"]["ncpus"] == 2 else FREE
    wait_nodes(pbs, {shared: (busy, []), other: (FREE, [])})
    wait_procs(cluster, a.procs + b.procs, "running")


@pytest.mark.spec("AS-misc", "AS-1")
@pytest.mark.guards("AS-misc", "AS-1")
def test_on_a_multi_vnode_host_only_the_vnodes_of_the_job_enter_maintenance(kit, pbs, cluster, topology) -> None:
    multi = topology.multi_vnode_host(min_vnodes=3)
    first, second, *rest = multi.vnodes
    untouched = [multi.name, *rest]
    job = kit.sleepers(f"1:ncpus=1:vnode={first}+1:ncpus=1:vnode={second}", place="vscatter:excl")
    wait_nodes(pbs, {first: ({"job-exclusive"}, []), second: ({"job-exclusive"}, [])})

    kit.admin(job.job_id, "admin-suspend")
    wait_procs(cluster, job.procs, "stopped")
    nodes = wait_nodes(pbs, {first: (MAINT, [job.job_id]), second: (MAINT, [job.job_id])})
    assert {n: (states(nodes[n]), maintenance_jobs(nodes[n])) for n in untouched} == {n: (FREE, []) for n in untouched}
    # The scheduler still uses the host's other vnodes.
    other = pbs.jobs.status(kit.running(f"1:ncpus=1:host={multi.name}"))
    assert not {first, second} & set(vnodes_of(other["exec_vnode"])), other["exec_vnode"]

    kit.admin(job.job_id, "admin-resume")
    wait_nodes(pbs, {first: ({"job-exclusive"}, []), second: ({"job-exclusive"}, [])})
    wait_procs(cluster, job.procs, "running")


# ---------------------------------------------------------------------------------------------
# Interactions with suspend/resume, wrong states, permissions
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("suspend", "resume"),
    [("suspend", "admin-resume"), ("admin-suspend", "resume"), (None, "admin-resume")],
    ids=["suspend-then-admin-resume", "admin-suspend-then-resume", "running-then-admin-resume"],
)
@pytest.mark.spec("AS-interactions")
@pytest.mark.guards("AS-interactions")
def test_the_wrong_resume_signal_is_rejected_and_changes_nothing(kit, pbs, topology, suspend, resume) -> None:
    (host,) = topology.plain_hosts(1)
    cluster = pbs.cluster
    job = kit.sleepers(chunks_on([host]))
    if suspend:
        kit.admin(job.job_id, suspend)
        wait_procs(cluster, job.procs, "stopped")

    res = kit.qsig(job.job_id, resume)

    assert not res.ok
    assert res.stderr == cli_error("qsig", WRONG_RESUME, job.job_id)
    if suspend:
        pbs.jobs.wait(job.job_id, job_state="S", substate=SUSPENDED, timeout=10)
        assert all(proc_state(cluster, p).startswith("T") for p in job.procs)
    else:
        pbs.jobs.wait(job.job_id, job_state="R", substate=RUNNING, timeout=10)
    # Only admin-suspend means maintenance (PTL test_list_jobs_2: no maintenance_jobs otherwise).
    expected = (MAINT, [job.job_id]) if suspend == "admin-suspend" else (FREE, [])
    wait_nodes(pbs, {host: expected})


@pytest.mark.spec("AS-2")
@pytest.mark.guards("AS-2")
def test_admin_suspend_of_a_job_that_is_not_running_is_rejected(kit, pbs, topology) -> None:
    (host,) = topology.plain_hosts(1)
    held = kit.submit(f"1:ncpus=1:host={host}", args=["-h"])
    res = kit.qsig(held, "admin-suspend")
    assert (res.ok, res.stderr) == (False, cli_error("qsig", BADSTATE, held))
    assert pbs.jobs.status(held)["job_state"] == "H"

    running = kit.running(f"1:ncpus=1:host={host}")
    kit.admin(running, "admin-suspend")
    again = kit.qsig(running, "admin-suspend")  # already admin-suspended
    assert (again.ok, again.stderr) == (False, cli_error("qsig", BADSTATE, running))
    wait_nodes(pbs, {host: (MAINT, [running])})  # listed once


@pytest.mark.spec("AS-2", "AS-3")
@pytest.mark.guards("AS-2", "AS-3")
def test_unprivileged_users_cannot_admin_suspend_or_resume_but_operators_and_managers_can(
    kit, pbs, cluster, topology
) -> None:
    (host,) = topology.plain_hosts(1)
    operator, manager = topology.users.account("operator"), topology.users.account("manager")
    job = kit.sleepers(chunks_on([host]))
    for role in ("owner", "other"):
        res = kit.qsig(job.job_id, "admin-suspend", user=topology.users.account(role))
        assert (res.ok, res.stderr) == (False, cli_error("qsig", PERM, job.job_id)), role
    assert pbs.jobs.status(job.job_id)["substate"] == RUNNING
    assert all(not proc_state(cluster, p).startswith("T") for p in job.procs)
    wait_nodes(pbs, {host: (FREE, [])})

    since = datetime.now()
    kit.admin(job.job_id, "admin-suspend", user=operator)
    pbs.jobs.wait(job.job_id, job_state="S", substate=SUSPENDED, timeout=10)
    wait_nodes(pbs, {host: (MAINT, [job.job_id])})
    server_log(cluster).expect(
        rf";Job;{re.escape(job.job_id)};admin-suspend job by {re.escape(operator)}@", since, timeout=10
    )

    for role in ("owner", "other"):
        res = kit.qsig(job.job_id, "admin-resume", user=topology.users.account(role))
        assert (res.ok, res.stderr) == (False, cli_error("qsig", PERM, job.job_id)), role
    assert pbs.jobs.status(job.job_id)["substate"] == SUSPENDED

    kit.admin(job.job_id, "admin-resume", user=manager)
    pbs.jobs.wait(job.job_id, job_state="R", substate=RUNNING, timeout=10)
    wait_nodes(pbs, {host: (FREE, [])})


@pytest.mark.spec("AS-4")
@pytest.mark.guards("AS-4")
def test_maintenance_jobs_is_read_only_for_everyone_and_shown_to_managers_only(kit, pbs, cluster, topology) -> None:
    (host,) = topology.plain_hosts(1)
    job = kit.running(f"1:ncpus=1:host={host}")
    kit.admin(job, "admin-suspend")
    wait_nodes(pbs, {host: (MAINT, [job])})

    users = {role: topology.users.account(role) for role in ("root", "manager", "operator", "owner")}
    seen = {}
    for role, user in users.items():
        res = pbs.nodes.run("pbsnodes", "-v", host, "-F", "json", user=user)
        node = parse_json(res.stdout)["nodes"][host]
        seen[role] = (node["state"], node.get("maintenance_jobs"))
    # Shipped flags ATR_DFLAG_SvWR | ATR_DFLAG_MGRD (master_node_attr_def.xml): managers read it.
    assert seen == {
        "root": ("maintenance", job),
        "manager": ("maintenance", job),
        "operator": ("maintenance", None),
        "owner": ("maintenance", None),
    }

    directive = f"set node {host} maintenance_jobs={job}"
    read_only = f"qmgr obj={host} svr=default: {ATTRRO} maintenance_jobs"
    for role in ("root", "manager", "operator"):
        res = qmgr_on_a_terminal(cluster, directive, user=users[role])
        assert terminal_lines(res) == [read_only, "qmgr: Error (15003) returned from server"], role
    res = qmgr_on_a_terminal(cluster, directive, user=users["owner"])
    assert terminal_lines(res) == [f"qmgr obj={host} svr=default: {PERM}", "qmgr: Error (15007) returned from server"]
    # Without a terminal qmgr keeps quiet about read-only node attributes (src/cmds/qmgr.c) but fails.
    quiet = pbs.server.qmgr(directive)
    assert (quiet.rc, quiet.stdout, quiet.stderr) == (15003 % 256, "", "")
    wait_nodes(pbs, {host: (MAINT, [job])})


@pytest.mark.spec("AS-1")
@pytest.mark.guards("AS-1")
def test_qmgr_cannot_put_a_node_into_maintenance(pbs, topology) -> None:
    (host,) = topology.plain_hosts(1)
    res = pbs.server.qmgr(f"set node {host} state=maintenance")
    assert (res.rc, res.stderr) == (
        15067 % 256,
        f"qmgr obj={host} svr=default: {BAD_NODE_VALUE} state\nqmgr: Error (15067) returned from server\n",
    )
    wait_nodes(pbs, {host: (FREE, [])})


# ---------------------------------------------------------------------------------------------
# Scheduler
# ---------------------------------------------------------------------------------------------


@pytest.mark.needs_moms(2)
@pytest.mark.spec("AS-1")
@pytest.mark.guards("AS-1")
def test_no_job_starts_on_a_maintenance_vnode_and_queued_work_runs_after_admin_resume(
    kit, pbs, cluster, topology
) -> None:
    # The direct check (a job pinned to the vnode) needs no custom resource; a vnode offering
    # localssd, when the cluster has one, adds a job that asks for the resource instead of the name.
    ssd = topology.vnodes_with("localssd")
    node = ssd[0] if ssd else topology.plain_hosts(1)[0]
    held_id = kit.running(f"1:ncpus=1:vnode={node}")
    kit.admin(held_id, "admin-suspend")
    nodes = wait_nodes(pbs, {node: (MAINT, [held_id])})
    free_cpus = nodes[node]["resources_available"]["ncpus"] - nodes[node].get("resources_assigned", {}).get("ncpus", 0)
    assert free_cpus >= 1  # the suspended job released its cpu: there is room, only maintenance is in the way

    pinned = kit.submit(f"1:ncpus=1:vnode={node}")
    waiting = [(pinned, "vnode")] + ([(kit.submit("1:ncpus=1:localssd=1"), "localssd")] if ssd else [])
    for job_id, resource in waiting:
        job = wait_until(
            lambda j=job_id: pbs.jobs.status(j),
            lambda j: str(j.get("comment", "")).startswith("Not Running"),
            timeout=30,
            describe=f"scheduler comment on {job_id}",
        )
        assert job["job_state"] == "Q"
        assert job["comment"].rstrip() == f"Not Running: Insufficient amount of resource: {resource}"
    if ssd:
        kit.purge(pinned)  # leave the vnode's second cpu to the localssd job
    after = waiting[-1][0]

    kit.admin(held_id, "admin-resume")
    wait_nodes(pbs, {node: (FREE, [])})
    # admin-resume does not start a scheduling cycle; the next cycle (started here) runs the job.
    pbs.server.set({"scheduling": True})
    ran = pbs.jobs.wait(after, job_state="R", timeout=30)
    assert vnodes_of(ran["exec_vnode"]) == [node]


@pytest.mark.spec("AS-1", "AS-interactions")
@pytest.mark.guards("AS-1", "AS-interactions")
def test_a_preempted_job_never_puts_its_node_into_maintenance_and_is_not_resumed_there(
    kit, pbs, cluster, topology
) -> None:
    (host,) = topology.plain_hosts(1)
    sched = pbs.server.qmgr("list sched default").stdout
    prio = int(re.search(r"preempt_queue_prio = (\d+)", sched)[1]) if "preempt_queue_prio" in sched else 150
    queue = "asexpress"
    pbs.server.qmgr(f"create queue {queue} queue_type=execution,priority={prio},enabled=True,started=True")
    try:
        ncpus = pbs.nodes.status(host)["resources_available"]["ncpus"]
        low_id = kit.running(f"1:ncpus={ncpus}:host={host}")
        high = kit.submit(f"1:ncpus={ncpus}:host={host}", queue=queue)
        pbs.jobs.wait(high, job_state="R", substate=RUNNING, timeout=60)
        pbs.jobs.wait(low_id, job_state="S", substate=SCHED_SUSPENDED, timeout=30)
        wait_nodes(pbs, {host: ({"job-busy"}, [])})  # preemption: no maintenance
        res = kit.qsig(low_id, "admin-resume")
        assert (res.ok, res.stderr) == (False, cli_error("qsig", WRONG_RESUME, low_id))

        since = datetime.now()
        kit.admin(high, "admin-suspend")
        wait_nodes(pbs, {host: (MAINT, [high])})
        # The suspend released the node and started a cycle; the scheduler looked at the preempted
        # job and left it suspended: it does not resume jobs onto a node in maintenance.
        sched_log(cluster).expect(rf";Job;{re.escape(low_id)};Considering job to run", since, timeout=30)
        assert pbs.jobs.status(low_id)["substate"] == SCHED_SUSPENDED

        kit.admin(high, "admin-resume")
        pbs.jobs.wait(high, job_state="R", substate=RUNNING, timeout=10)
        wait_nodes(pbs, {host: ({"job-busy"}, [])})
        assert pbs.jobs.status(low_id)["substate"] == SCHED_SUSPENDED
        kit.purge(high)
        pbs.jobs.wait(low_id, job_state="R", substate=RUNNING, timeout=30)  # normal service again
    finally:
        kit.cleanup()
        pbs.server.qmgr(f"delete queue {queue}")


@pytest.mark.spec("AS-1", "AS-interactions")
@pytest.mark.guards("AS-1")
def test_a_plainly_suspended_job_is_not_resumed_by_the_scheduler_on_a_maintenance_node(
    kit, pbs, cluster, topology
) -> None:
    """The spec: the scheduler "will also not resume any suspended jobs that were suspended via the
    'suspend' pseudo signal". Job A is suspended with `suspend` and asked back with `resume` (which
    only hands it to the scheduler) while job B's admin-suspend holds the node in maintenance: A stays
    suspended through a scheduling cycle; after B's admin-resume the scheduler resumes A."""
    (host,) = topology.plain_hosts(1, ncpus=2)
    a = kit.sleepers(f"1:ncpus=1:host={host}")
    b = kit.sleepers(f"1:ncpus=1:host={host}")
    kit.admin(a.job_id, "suspend")
    wait_procs(cluster, a.procs, "stopped")
    kit.admin(b.job_id, "admin-suspend")
    wait_nodes(pbs, {host: (MAINT, [b.job_id])})

    since = datetime.now()
    kit.admin(a.job_id, "resume")
    pbs.server.set({"scheduling": True})  # a cycle that sees A waiting to be resumed
    sched_log(cluster).expect(rf";Job;{re.escape(a.job_id)};Considering job to run", since, timeout=30)
    job = pbs.jobs.status(a.job_id)
    assert (job["job_state"], job["substate"]) == ("S", SCHED_SUSPENDED), job
    assert all(proc_state(cluster, p).startswith("T") for p in a.procs)
    wait_nodes(pbs, {host: (MAINT, [b.job_id])})

    kit.admin(b.job_id, "admin-resume")
    pbs.server.set({"scheduling": True})
    pbs.jobs.wait(a.job_id, job_state="R", substate=RUNNING, timeout=30)
    wait_procs(cluster, a.procs + b.procs, "running")


# ---------------------------------------------------------------------------------------------
# Lifecycle: delete, rerun, offline, restart, arrays, repeated cycles
# ---------------------------------------------------------------------------------------------


@pytest.mark.needs_moms(2)
@pytest.mark.parametrize("force", [False, True], ids=["qdel", "qdel-W-force"])
@pytest.mark.spec("AS-1", "AS-4")
@pytest.mark.guards("AS-1", "AS-4")
def test_deleting_an_admin_suspended_job_frees_its_vnodes(kit, pbs, cluster, topology, force) -> None:
    hosts = topology.plain_hosts(2)
    job = kit.sleepers(chunks_on(hosts))
    kit.admin(job.job_id, "admin-suspend")
    wait_nodes(pbs, {h: (MAINT, [job.job_id]) for h in hosts})
    wait_procs(cluster, job.procs, "stopped")

    res = pbs.jobs.delete(job.job_id, force=force)
    assert res.ok, res

    done = pbs.jobs.wait(job.job_id, job_state="F", timeout=90)
    # The stopped processes cannot act on SIGTERM: they end by SIGKILL (256 + 9).
    assert done["Exit_status"] == 265
    wait_procs(cluster, job.procs, "gone")
    wait_nodes(pbs, {h: (FREE, []) for h in hosts})


@pytest.mark.spec("AS-1", "AS-4")
@pytest.mark.guards("AS-1", "AS-4")
def test_qrerun_force_requeues_an_admin_suspended_job_and_frees_its_vnodes(kit, pbs, cluster, topology) -> None:
    (host,) = topology.plain_hosts(1)
    job = kit.sleepers(chunks_on([host]))
    kit.admin(job.job_id, "admin-suspend")
    wait_nodes(pbs, {host: (MAINT, [job.job_id])})

    plain = pbs.jobs.rerun(job.job_id)
    assert (plain.ok, plain.stderr) == (False, cli_error("qrerun", BADSTATE, job.job_id))
    wait_nodes(pbs, {host: (MAINT, [job.job_id])})

    since = datetime.now()
    forced = pbs.jobs.run("qrerun", "-W", "force", job.job_id)
    assert forced.ok, forced
    again = pbs.jobs.wait(job.job_id, job_state="R", substate=RUNNING, timeout=60)
    assert again["run_count"] == 2
    wait_procs(cluster, job.procs, "gone")  # the first run's processes
    nodes = pbs.nodes.all()
    assert all("maintenance" not in states(n) and not maintenance_jobs(n) for n in nodes.values())
    accounting(cluster).wait_for(job.job_id, "R", 1, since, timeout=10)


@pytest.mark.spec("AS-1")
@pytest.mark.guards("AS-1")
def test_a_node_offlined_during_maintenance_stays_offline_after_admin_resume(kit, pbs, cluster, topology) -> None:
    (host,) = topology.plain_hosts(1)
    job = kit.running(f"1:ncpus=1:host={host}")
    kit.admin(job, "admin-suspend")
    try:
        pbs.nodes.offline(host, comment="admin_suspend suite: maintenance")
        wait_nodes(pbs, {host: ({"offline", "maintenance"}, [job])})
        waiting = kit.submit(f"1:ncpus=1:host={host}")

        kit.admin(job, "admin-resume")
        pbs.jobs.wait(job, job_state="R", substate=RUNNING, timeout=10)
        wait_nodes(pbs, {host: ({"offline"}, [])})
        since = datetime.now()
        pbs.server.set({"scheduling": True})  # a cycle: the offline node still gets nothing
        sched_log(cluster).expect(rf";Job;{re.escape(waiting)};Considering job to run", since, 30)
        assert pbs.jobs.status(waiting)["job_state"] == "Q"
    finally:
        pbs.nodes.clear_offline(host)
        pbs.server.unset("comment", obj="node", name=host)


@pytest.mark.spec("AS-1", "AS-4")
@pytest.mark.guards("AS-1", "AS-4")
def test_a_server_restart_keeps_maintenance_and_maintenance_jobs(kit, pbs, cluster, topology) -> None:
    (host,) = topology.plain_hosts(1)
    job = kit.sleepers(chunks_on([host]))
    kit.admin(job.job_id, "admin-suspend")
    wait_nodes(pbs, {host: (MAINT, [job.job_id])})
    purge_left_behind(kit)

    pbs.server.restart()

    wait_nodes(pbs, {host: (MAINT, [job.job_id])})
    pbs.jobs.wait(job.job_id, job_state="S", substate=SUSPENDED, timeout=10)
    assert all(proc_state(cluster, p).startswith("T") for p in job.procs)
    kit.admin(job.job_id, "admin-resume")
    pbs.jobs.wait(job.job_id, job_state="R", substate=RUNNING, timeout=10)
    wait_nodes(pbs, {host: (FREE, [])})
    wait_procs(cluster, job.procs, "running")


def subjob_ids(array_id: str, indices: range) -> list[str]:
    seq, rest = array_id.split("[]", 1)
    return [f"{seq}[{i}]{rest}" for i in indices]


@pytest.mark.spec("AS-misc", "AS-2", "AS-4")
@pytest.mark.guards("AS-2", "AS-4")
def test_admin_suspended_subjobs_stay_suspended_across_a_server_restart(kit, pbs, topology, conformance) -> None:
    (host,) = topology.plain_hosts(1)
    array = kit.submit(f"1:ncpus=1:host={host}", array="1-2")
    subjobs = subjob_ids(array, range(1, 3))
    for sub in subjobs:
        pbs.jobs.wait(sub, job_state="R", substate=RUNNING, timeout=60)
        kit.admin(sub, "admin-suspend")
    wait_nodes(pbs, {host: (MAINT, subjobs)})
    purge_left_behind(kit)

    pbs.server.restart()

    # Spec: "Sub jobs are requeued upon server restart. Any node which only had admin-suspended
    # subjobs will return to the free state after a server restart." 23.06.06 recovers subjobs
    # like any job (pbsd_init.c: JOB_SUBSTATE_SUSPEND keeps its state and the node maintenance).
    nodes = wait_nodes(pbs, {host: (MAINT, subjobs)})
    after = {sub: (pbs.jobs.status(sub)["job_state"], pbs.jobs.status(sub)["substate"]) for sub in subjobs}
    assert after == {sub: ("S", SUSPENDED) for sub in subjobs}
    conformance.difference(
        "AS-misc",
        spec_says="subjobs are requeued upon server restart; a node that only had admin-suspended subjobs "
        "returns to the free state",
        openpbs_does="after the restart the subjobs are still admin-suspended (S, substate 43) and the node "
        "stays in maintenance with both subjobs in maintenance_jobs",
        evidence=f"{host}: state={nodes[host]['state']} maintenance_jobs={nodes[host].get('maintenance_jobs')}; "
        f"subjobs {after}",
    )

    for sub in subjobs:
        kit.admin(sub, "admin-resume")
        pbs.jobs.wait(sub, job_state="R", substate=RUNNING, timeout=10)
    wait_nodes(pbs, {host: ({"job-busy"} if len(subjobs) >= nodes[host]["resources_available"]["ncpus"] else FREE, [])})


STALE_MAINTENANCE = (
    "OpenPBS 23.06.06 bug: node attributes are saved with `attributes = attributes || hstore(...)` "
    "(src/lib/Libdb/pgsql/db_node.c), so an emptied maintenance_jobs is never removed from the database; "
    "pbsd_init.c then puts the node back into maintenance for every listed job that still exists (running, "
    "or finished and kept in the job history). Observed: after admin-suspend, admin-resume (node free) and a "
    "server restart, pbsnodes shows state = maintenance, maintenance_jobs = <the resumed, running job>."
)


class StaleMaintenance(AssertionError):
    """The node came back in maintenance after a restart, naming a job that is not admin-suspended."""


@pytest.mark.xfail(strict=True, raises=StaleMaintenance, reason=STALE_MAINTENANCE)
@pytest.mark.spec("AS-1", "AS-3")
@pytest.mark.guards("AS-1")
def test_a_server_restart_after_the_last_admin_resume_keeps_the_node_out_of_maintenance(
    kit, pbs, topology, baseline, conformance
) -> None:
    (host,) = topology.plain_hosts(1)
    job = kit.running(f"1:ncpus=1:host={host}")
    kit.admin(job, "admin-suspend")
    wait_nodes(pbs, {host: (MAINT, [job])})
    kit.admin(job, "admin-resume")
    wait_nodes(pbs, {host: (FREE, [])})
    purge_left_behind(kit)
    try:
        nodes = pbs.server.restart()
        seen = (states(nodes[host]), maintenance_jobs(nodes[host]))
        if seen == (MAINT, [job]):
            evidence = (
                f"{host}: state={nodes[host]['state']} maintenance_jobs={nodes[host].get('maintenance_jobs')}"
                f" (job {job} is {pbs.jobs.status(job).get('job_state')})"
            )
            conformance.difference(
                "AS-1",
                spec_says="the node leaves 'maintenance' when the last admin-suspended job is admin-resumed",
                openpbs_does="a server restart puts the node back into maintenance, listing the resumed job",
                evidence=evidence,
            )
            raise StaleMaintenance(evidence)
        assert seen == (FREE, [])
    finally:
        kit.cleanup()
        rescue_from_stale_maintenance(pbs, host, baseline)


def rescue_from_stale_maintenance(pbs, host: str, baseline) -> None:
    """A node stuck in maintenance by the stale database value cannot be taken out of it (qmgr may
    not set the state; no admin-suspended job is left to resume): delete and re-create the node (no
    job may be on it), then put back resources the mom does not report (set by the inventory)."""
    if "maintenance" not in states(pbs.nodes.status(host)):
        return
    pbs.server.qmgr(f"delete node {host}")
    pbs.server.qmgr(f"create node {host}")
    node = pbs.nodes.wait_state([host], "free", timeout=60)[host]
    for res, value in (baseline.nodes.get(host, {}).get("resources_available") or {}).items():
        if node.get("resources_available", {}).get(res) != value:
            pbs.server.set({f"resources_available.{res}": value}, obj="node", name=host)


@pytest.mark.needs_moms(2)
@pytest.mark.spec("AS-2", "AS-3", "AS-4")
@pytest.mark.guards("AS-2", "AS-3", "AS-4")
def test_repeated_admin_suspend_and_resume_cycles_leave_no_residue(kit, pbs, cluster, topology) -> None:
    hosts = topology.plain_hosts(2)
    job = kit.sleepers(chunks_on(hosts))
    since = datetime.now()
    cycles = 5
    for _ in range(cycles):
        kit.admin(job.job_id, "admin-suspend")
        pbs.jobs.wait(job.job_id, job_state="S", substate=SUSPENDED, timeout=10)
        wait_procs(cluster, job.procs, "stopped")
        wait_nodes(pbs, {h: (MAINT, [job.job_id]) for h in hosts})
        kit.admin(job.job_id, "admin-resume")
        pbs.jobs.wait(job.job_id, job_state="R", substate=RUNNING, timeout=10)
        wait_procs(cluster, job.procs, "running")
        wait_nodes(pbs, {h: (FREE, []) for h in hosts})
    nodes = pbs.nodes.all()
    assert [nodes[h]["resources_assigned"]["ncpus"] for h in hosts] == [1] * len(hosts)
    records = accounting(cluster).wait_for(job.job_id, "zr", 2 * cycles, since, timeout=10)
    assert "".join(r.type for r in records) == "zr" * cycles


# ---------------------------------------------------------------------------------------------
# Reservations
# ---------------------------------------------------------------------------------------------


def rsub_time(delta: timedelta) -> str:
    return (datetime.now() + delta).strftime("%Y%m%d%H%M.%S")


@pytest.mark.spec("AS-misc")
@pytest.mark.guards("AS-misc")
def test_a_confirmed_reservation_on_a_maintenance_vnode_is_degraded_then_moved(kit, pbs, cluster) -> None:
    pbs.server.set({"reserve_retry_time": 5})  # reconfirm soon (shipped default 600 s)
    rid = None
    try:
        rid, _ = pbs.resv.submit(
            "-R", rsub_time(timedelta(hours=1)), "-D", "600", "-l", "select=1:ncpus=1", user=kit.user
        )
        resv = pbs.resv.wait_state(rid, "RESV_CONFIRMED", timeout=30)
        (vnode,) = vnodes_of(resv["resv_nodes"])
        job = kit.running(f"1:ncpus=1:vnode={vnode}", resources={"walltime": "00:10:00"})
        since = datetime.now()

        kit.admin(job, "admin-suspend")

        degraded = pbs.resv.wait_state(rid, "RESV_DEGRADED", timeout=10)
        assert degraded["reserve_substate"] == "10"
        server_log(cluster).expect(
            rf";Resv;{re.escape(rid)};An attempt to reconfirm reservation will be made on", since, timeout=10
        )
        # PBS looks for other nodes: the reservation is confirmed again, away from the vnode.
        moved = pbs.resv.wait_state(rid, "RESV_CONFIRMED", timeout=60)
        assert vnode not in vnodes_of(moved["resv_nodes"]), moved["resv_nodes"]
        confirm = accounting(cluster).wait_for(rid, "Y", 1, since, timeout=10)[-1]
        assert confirm.get("nodes") == moved["resv_nodes"]
    finally:
        if rid:
            pbs.resv.delete(rid)
        pbs.server.unset("reserve_retry_time")


@pytest.mark.spec("AS-misc")
def test_a_running_reservation_ends_while_its_job_is_admin_suspended(kit, pbs, cluster) -> None:
    rid, _ = pbs.resv.submit(
        "-R", rsub_time(timedelta(seconds=10)), "-D", "20", "-l", "select=1:ncpus=1", user=kit.user
    )
    resv = pbs.resv.wait_state(rid, "RESV_CONFIRMED", timeout=30)
    (vnode,) = vnodes_of(resv["resv_nodes"])
    job = kit.submit(queue=rid.split(".", 1)[0])
    pbs.jobs.wait(job, job_state="R", substate=RUNNING, timeout=60)
    assert pbs.resv.status(rid)["reserve_state"] == "RESV_RUNNING"

    kit.admin(job, "admin-suspend")
    wait_nodes(pbs, {vnode: (MAINT, [job])})
    ncpus = pbs.nodes.status(vnode)["resources_available"]["ncpus"]
    outside = kit.submit(f"1:ncpus={ncpus}:vnode={vnode}")  # needs the whole vnode

    # At the reservation's end PBS deletes its jobs: the stopped job dies by SIGKILL.
    done = pbs.jobs.wait(job, job_state="F", timeout=120)
    assert done["Exit_status"] == 265
    wait_until(lambda: pbs.resv.status(rid), lambda r: not r, timeout=60, describe=f"reservation {rid} gone")
    node = pbs.nodes.status(vnode)
    assert "maintenance" not in states(node)
    assert not maintenance_jobs(node)
    ran = pbs.jobs.wait(outside, job_state="R", timeout=60)
    assert vnodes_of(ran["exec_vnode"]) == [vnode]


# ---------------------------------------------------------------------------------------------
# Hooks
# ---------------------------------------------------------------------------------------------


@pytest.mark.spec("AS-4", "AS-1")
@pytest.mark.guards("AS-4", "AS-1")
def test_hooks_see_maintenance_jobs_and_the_maintenance_state(kit, pbs, cluster, topology) -> None:
    (host,) = topology.plain_hosts(1)
    hook = "as_probe"
    create_hook(pbs, hook, hook_log_vnode_maintenance(host))
    try:
        job = kit.running(f"1:ncpus=1:host={host}")

        def probe_line() -> str:
            since = datetime.now()
            name = f"as{len(kit.jobs)}"  # the name Kit.submit gives the next job
            kit.submit(f"1:ncpus=1:host={host}", args=["-h"])  # queuejob runs the hook
            return server_log(cluster).expect(rf"admin_suspend probe {name}: {re.escape(host)} ", since, 10).raw

        assert probe_line().endswith("maintenance_jobs=None maintenance=False")
        kit.admin(job, "admin-suspend")
        wait_nodes(pbs, {host: (MAINT, [job])})
        assert probe_line().endswith(f"maintenance_jobs={job} maintenance=True")
        kit.admin(job, "admin-resume")
        wait_nodes(pbs, {host: (FREE, [])})
        assert probe_line().endswith("maintenance_jobs=None maintenance=False")
    finally:
        pbs.hooks.delete(hook)


# ---------------------------------------------------------------------------------------------
# Fault: a sister host crashes and boots during maintenance
# ---------------------------------------------------------------------------------------------


@pytest.mark.needs_moms(3)
@pytest.mark.spec("AS-1", "AS-3")
@pytest.mark.guards("AS-1")
def test_a_sister_host_that_crashes_and_boots_during_maintenance(kit, pbs, topology, nemesis, conformance):
    primary, survivor, victim = topology.plain_hosts(3)
    cluster = pbs.cluster
    job = kit.sleepers(chunks_on([primary, survivor, victim]))
    jid = job.job_id
    kit.admin(jid, "admin-suspend")
    wait_procs(cluster, job.procs, "stopped")
    since = datetime.now()

    fault = nemesis.crash_host(victim)
    # The server sees the mom go; maintenance (a server-side state bit) stays with the down node.
    wait_nodes(pbs, {victim: ({"down", "maintenance"}, [jid]), primary: (MAINT, [jid])})
    # The primary mom keeps the suspended job (im_eof spares substate SUSPEND, mom_comm.c).
    mom_log(cluster, primary).expect(
        rf";Job;{re.escape(jid)};.*lost communication with {re.escape(victim)}, not killing job yet", since, 30
    )
    assert pbs.jobs.status(jid)["substate"] == SUSPENDED

    nemesis.heal(fault)
    # The booted mom is back; the node is still in maintenance. The mom started without -p
    # discarded its part of the job (init_abort_jobs: a sister junks its job files).
    wait_nodes(pbs, {victim: (MAINT, [jid]), primary: (MAINT, [jid]), survivor: (MAINT, [jid])}, timeout=90)
    lost = [p for p in job.procs if p.host == victim]
    kept = [p for p in job.procs if p.host != victim]
    assert [proc_state(cluster, p) for p in lost] == [""] * len(lost)
    assert all(proc_state(cluster, p).startswith("T") for p in kept)

    since = datetime.now()
    res = kit.qsig(jid, "admin-resume")

    # The primary resumed its own tasks and the survivor's; the booted sister answered PBSE_JOBEXIST
    # (15009, "does not know the job"), which comes back to qsig. Releasing the re-assigned
    # resources also cleared the admin-suspend flag and the maintenance of every node.
    assert (res.ok, res.stderr) == (False, cli_error("qsig", JOBEXIST, jid))
    mom_log(cluster, primary).expect(rf";Job;{re.escape(jid)};im_request, RESUME returned ERROR 15009", since, 30)
    nodes = wait_nodes(pbs, {h: (FREE, []) for h in (primary, survivor, victim)})
    after = pbs.jobs.status(jid)
    assert (after["job_state"], after["substate"]) == ("S", SUSPENDED)
    running_again = wait_procs(cluster, kept, "running")
    conformance.difference(
        "AS-3",
        spec_says="admin-resume resumes the admin-suspended job; the nodes leave maintenance when the last "
        "admin-suspended job is admin-resumed",
        openpbs_does="when a sister host crashed and booted during maintenance, admin-resume fails, yet every "
        "node leaves maintenance and the job's processes on the other hosts run again while PBS still shows the "
        "job suspended with its resources released",
        evidence=f"{res.stderr.strip()}; job {after['job_state']}/{after['substate']}; nodes "
        f"{ {h: nodes[h]['state'] for h in (primary, survivor, victim)} }; processes "
        f"{ {(p.host, p.pid): s for p, s in running_again.items()} }",
    )
    # The job can still be deleted, which ends it everywhere.
    kit.purge(jid)
    wait_procs(cluster, kept, "gone", timeout=60)
