"""Part B's helpers: the timer windows' tolerances, the hooks installed under fresh names, the job
waiting in R/41 on a sister, and what the primary mom logs (probe markers, the vnodes a hook found
in vnode_list / vnode_list_fail)."""

from __future__ import annotations

import uuid

from pbs_harness.pbs.parsers import size_kb, vnodes_of
from ptl_tests.hook_files import install_hooks
from ptl_tests.reliable_startup_helpers import PRERUN, StartupKit, hosts_of

# How late the primary mom may act on an expired timer, beyond the timer itself: its main loop
# checks the join alarm once per iteration (it sleeps until the next task, a few seconds at most),
# the launch-delay loop counts 1 s pipe reads; plus 1 s for the log stamps' resolution.
JOIN_SLACK = 5
# How early the join alarm may expire, measured from the primary's execjob_begin marker: the alarm
# starts from the mom's main-loop clock (time_now), taken before its begin hooks ran (each hook is
# a process, up to a second), plus 1 s for the stamps' resolution; seen: 12 s for 13 with 2 hooks.
JOIN_EARLY = 2
LAUNCH_SLACK = 3
# How early the launch may come, measured from the primary's execjob_prologue marker: the delay runs
# from before that hook's process logged its marker (as for JOIN_EARLY); seen: 7 s for 8 with four
# clusters on two cores.
LAUNCH_EARLY = 1


def install(pbs, cluster, hooks, faults=()) -> None:
    """Create the hooks, each name with a fresh suffix (a deleted hook stays "pending delete" on
    the server until every mom acknowledged it, and a sister busy in a sleeping hook acknowledges
    late), then wait until every mom holds them, their configs and the nemesis fault hooks."""
    token = uuid.uuid4().hex[:4]
    install_hooks(pbs, cluster, {f"{name}_{token}": hook for name, hook in hooks.items()}, faults)


def host_vnodes(exec_vnode: str, *hosts: str) -> list[str]:
    """The distinct vnodes of an exec_vnode on the given hosts, sorted (as `listed` returns them)."""
    return sorted({v for host in hosts for v in vnodes_of(exec_vnode, host)})


def listed(kit: StartupKit, tag: str, what: str) -> list[str]:
    """The vnodes the suite hook `tag` logged on the primary as found in `what` (vnode_list or
    vnode_list_fail) during this test (hook log lines carry no job id; a test runs one job)."""
    lines = kit.mom.matching(rf"{tag}: found {what}\[", kit.since)
    return sorted({ln.message.split(f"found {what}[", 1)[1].rstrip("]") for ln in lines})


def wait_prerun_on(kit: StartupKit, job_id: str, host: str) -> dict:
    """The job as the server shows it while the primary waits: R, substate 41, `host` assigned."""
    job = kit.pbs.jobs.wait(job_id, job_state="R", substate=PRERUN, timeout=30)
    assert host in hosts_of(job["exec_vnode"]), f"{host} not assigned to {job_id}: {job['exec_vnode']}"
    return job


def marker(kit: StartupKit, tag: str, event: str, host: str | None = None, timeout: float = 60):
    """The "<tag> <event> on <host>: started" line of a probe hook in that host's mom log (the
    primary's by default)."""
    host = host or kit.primary
    return kit.mom_of(host).expect(f"{tag} {event} on {host}: started", kit.since, timeout)


PADDED_CHUNKS = ((2, 2 * 1024**2), (2, 2 * 1024**2), (2, 2 * 1024**2), (1, 1024**2), (1, 1024**2))  # ncpus, mem kb


def predicted_hosts(nodes: dict[str, dict]) -> list[str]:
    """Where the scheduler puts the padded standard job: each chunk, in order, on the first host
    (in the server's vnode order) not used yet whose free vnode has the ncpus and mem left."""
    hosts: list[str] = []
    for ncpus, mem_kb in PADDED_CHUNKS:
        for node in nodes.values():
            avail, used = node.get("resources_available", {}), node.get("resources_assigned", {})
            host = avail.get("host")
            free_cpus = int(avail.get("ncpus", 0)) - int(used.get("ncpus", 0))
            free_mem = size_kb(avail.get("mem", 0)) - size_kb(used.get("mem", 0))
            if node.get("state") == "free" and host not in hosts and free_cpus >= ncpus and free_mem >= mem_kb:
                hosts.append(host)
                break
    return hosts
