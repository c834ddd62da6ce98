"""Helpers of the reliable-startup suite (ptl_tests/reliable_startup/: its part A and part B modules).

Layout, by role (`Roles`, resolved from the `topology` fixture at run time): the server host is the
primary mom of every job (the scheduler places the first chunk on the first free host in node
order); four plain 2-cpu hosts are the sisters ("sister 1" .. "sister 4", in the order the padded
job takes them); the multi-vnode host has a natural vnode plus at least four vnodes, 1 cpu / 1gb each.

The standard job asks for ORIGINAL_SELECT with place=scatter. The suite's queuejob hook saves it
in Resource_List.site and pads it with increment_chunks(1) to PADDED_SELECT: five chunks on five
hosts (the primary, then sisters 1..4 in node order). The prune hook (execjob_launch or
execjob_prologue) calls release_nodes(keep_select=<site>) on the primary, back to three chunks.

The suite's hooks are files in ptl_tests/hooks/, configured through their JSON hook config file
(ptl_tests/hook_files.py): pad_and_tolerate.py (queuejob: pad, tolerance), select_api_probe.py
(queuejob: increment_chunks and draft-API probes), vnode_lists_and_prune.py (mom: vnode lists,
offlining, prune), event_probe.py (mom: markers, sleeps, attribute sets) and
launch_sets_job_attributes.py; the factories below (pad_hook, prune_hook, ...) return them as
`SuiteHook` values for `install_hooks`. Sister failures injected with hooks go through
`nemesis.reject_hook(event, hosts, how)`.

Expected pruned assignments are computed from the job's own initial exec_vnode with the shipped
rule (src/server/vnparse.c, release_nodes; see expected_prune).
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from pbs_harness.common.waits import WaitTimeout, wait_until
from pbs_harness.pbs.client import Pbs
from pbs_harness.pbs.evidence import pick
from pbs_harness.pbs.evidence.accounting import AccountingReader
from pbs_harness.pbs.evidence.logs import LogLine, LogReader, mom_log, server_log
from pbs_harness.pbs.moms import edit_config
from pbs_harness.pbs.parsers import parse_exec_host, parse_exec_vnode, parse_select, size_kb
from pbs_harness.pbs.substates import PRERUN, RUNNING  # the suite's names too
from pbs_harness.remote.cluster import Cluster
from pbs_harness.suite import defect_retry, defects
from pbs_harness.suite.faults import Nemesis
from pbs_harness.suite.topology import Topology
from ptl_tests.hook_files import SuiteHook
from ptl_tests.kit import JobKit


@dataclass(frozen=True)
class Roles:
    """The hosts and the job owner of the suite by part, resolved from the topology at run time."""

    primary: str  # the server host: primary mom (first chunk) of every job
    sisters: tuple[str, ...]  # four plain 2-cpu hosts, in the order the padded job takes them
    multi: str | None  # the multi-vnode host (part A only)
    owner: str  # the test user who submits the jobs

    def sister(self, n: int) -> str:
        """Sister n, counted from 1: the padded job's (n+1)-th host."""
        return self.sisters[n - 1]

    @property
    def node_order(self) -> tuple[str, ...]:
        """The primary, then the sisters: the order set_node_order makes the scheduler fill them."""
        return (self.primary, *self.sisters)

    @property
    def all_hosts(self) -> tuple[str, ...]:
        return (*self.node_order, *((self.multi,) if self.multi else ()))


def suite_roles(topology: Topology, *, multi_vnode: bool = True) -> Roles:
    """The suite's roles from the cluster's topology; skips when the cluster cannot play them."""
    if topology.server.name not in {m.name for m in topology.moms}:
        pytest.skip(
            f"needs the server host {topology.server.name} to be an execution host too (the primary mom of "
            "every job): add it to group pbs_moms"
        )
    return Roles(
        primary=topology.server.name,
        sisters=tuple(topology.plain_hosts(4, ncpus=2)),
        multi=topology.multi_vnode_host(min_vnodes=4).name if multi_vnode else None,
        owner=topology.users.owner,
    )


ORIGINAL_SELECT = "ncpus=2:mem=2gb+ncpus=2:mem=2gb+ncpus=1:mem=1gb"
PADDED_SELECT = "1:ncpus=2:mem=2gb+2:ncpus=2:mem=2gb+2:ncpus=1:mem=1gb"  # increment_chunks(1)

SHORT_ALARM = 5  # seconds: $sister_join_job_alarm and $job_launch_delay on the primary
JOIN_ALARM = "$sister_join_job_alarm"
LAUNCH_DELAY = "$job_launch_delay"
# A job still in substate 41 this long after its wait began gets its primary's starters read (then every
# STARTER_LOOK_EVERY s): a starter stuck in the known race (pbs_harness.suite.defects) ends the attempt
# at once instead of at the wait's timeout (90 s), so another attempt costs ~20 s, not 90 s.
STARTER_LOOK_AFTER = 12
STARTER_LOOK_EVERY = 8
SLEEP = 600  # the suite's jobs sleep longer than any test; the baseline restore deletes them

# Shipped strings (mom side unless noted; ../shared/reference/ptl-catalogue.md Part B.1).
PRUNED_FROM = "pruned from exec_vnode="
PRUNED_TO = "pruned to exec_vnode="
IGNORING = "ignoring error from {host} as job is tolerant of node failures"
START_ERROR = r"job_start_error \d+ from node {host} could not {what} successfully"
NOT_TOLERANT = "{job}: no nodes released as job does not tolerate node failures"
NEED = "NEED chunks for keep_select ({keep})"
HAVE = "HAVE chunks from job's exec_vnode: "
COULD_NOT_SATISFY = "could not satisfy select chunk"
REJECTED_BY = "{event} request rejected by '{hook}'"
UPDATED_NODES = "updated nodes info"

# ---------------------------------------------------------------------------------------------
# The suite's hooks (files in ptl_tests/hooks/, each documenting its config keys and log lines)


def pad_hook(increment: object = 1, tolerance: str | None = "job_start") -> SuiteHook:
    """The suite's queuejob hook: saves the select in Resource_List.site and pads it with
    increment_chunks(increment) (None: no padding), sets tolerate_node_failures (None: unset)."""
    return SuiteHook(
        "pad_and_tolerate.py",
        {"event": "queuejob", "enabled": True},
        {"tag": "pad", "increment": increment, "tolerance": tolerance},
    )


def select_probe_hook(
    tag: str,
    *,
    increment_probe: Sequence[tuple[str, Sequence[object]]] = (),
    draft_probe: Sequence[str] = (),
) -> SuiteHook:
    """A queuejob hook logging "<tag>: sel=<select>" and "<tag>: sel.increment_chunks(<spec>)=<result>
    [<type>]" for each (select, [spec, ...]) of increment_probe (a per-chunk spec {index: increment}
    keeps int keys), and "<tag>: draft <expr> -> <repr or exception>" for each expression of
    draft_probe (evaluated with pbs, e = the event, j = its job)."""
    config = {
        "tag": tag,
        "increment_probe": [[select, list(specs)] for select, specs in increment_probe],
        "draft_probe": list(draft_probe),
    }
    return SuiteHook("select_api_probe.py", {"event": "queuejob", "enabled": True}, config)


PRUNE_TAGS = {"execjob_launch": "launch", "execjob_prologue": "prolo", "execjob_begin": "begin"}
PHASES = {"launch": "LAUNCH", "prolo": "PROLOGUE", "begin": "BEGIN"}


def prune_hook(
    event: str = "execjob_launch",
    *,
    keep: str | None = None,
    on_failure: str | None = "hold_rerun",
    log_lists: bool = True,
    offline_failed: bool = False,
    prune: bool = True,
) -> SuiteHook:
    """The suite's pruning hook, tagged "launch", "prolo" or "begin" by its event: on the primary,
    release_nodes(keep_select=keep or the saved site); on failure hold + requeue ("hold_rerun"),
    delete, or (None) only log; rejecting says "unsuccessful at LAUNCH|PROLOGUE|BEGIN". log_lists
    logs "<tag>: found vnode_list[<vnode>]" / "found vnode_list_fail[<vnode>]"; offline_failed
    offlines the failed vnodes; prune=False only logs (and offlines)."""
    tag = PRUNE_TAGS[event]
    config = {
        "tag": tag,
        "phase": PHASES[tag],
        "log_lists": log_lists,
        "offline_failed": offline_failed,
        "prune": prune,
        "keep": keep,
        "on_failure": on_failure,
    }
    return SuiteHook("vnode_lists_and_prune.py", {"event": event, "enabled": True, "alarm": 30}, config)


# ---------------------------------------------------------------------------------------------
# Cluster set-up


def set_short_alarms(pbs: Pbs, cluster: Cluster, primary: str, seconds: int = SHORT_ALARM) -> datetime:
    """$sister_join_job_alarm and $job_launch_delay = seconds on the primary (HUPed; the baseline
    restores mom configs); returns when, and waits for the mom to log both values."""
    host = cluster.hosts[primary]
    config = pbs.mom_config.read(host)
    for key in (JOIN_ALARM, LAUNCH_DELAY):
        config = edit_config(config, key, str(seconds))
    since = pbs.mom_config.write(host, config) - timedelta(seconds=1)
    mom = mom_log(cluster, primary)
    for key in ("sister_join_job_alarm", "job_launch_delay"):
        mom.expect(f";{key};{seconds}$", since, timeout=20)
    return since


# ---------------------------------------------------------------------------------------------
# Assignments and their expected pruning


@dataclass(frozen=True)
class Slice:
    vnode: str
    ncpus: int
    mem_kb: int

    @property
    def host(self) -> str:
        return self.vnode.split("[", 1)[0]


Chunk = tuple[Slice, ...]


def chunks_of(exec_vnode: str) -> tuple[Chunk, ...]:
    """exec_vnode as chunks of (vnode, ncpus, mem kb) slices."""
    return tuple(
        tuple(Slice(s.vnode, int(s.resources.get("ncpus", 0)), size_kb(s.resources.get("mem", 0))) for s in chunk)
        for chunk in parse_exec_vnode(exec_vnode)
    )


def assigned_totals(exec_vnode: str) -> tuple[int, int]:
    """(ncpus, mem kb) summed over an exec_vnode: what an 'S' or 's' record's resource_assigned
    says (sum_resc_alloc, src/server/accounting.c)."""
    slices = [s for chunk in chunks_of(exec_vnode) for s in chunk]
    return sum(s.ncpus for s in slices), sum(s.mem_kb for s in slices)


def hosts_of(exec_vnode: str) -> list[str]:
    return list(dict.fromkeys(s.host for chunk in chunks_of(exec_vnode) for s in chunk))


def select_chunks(select: str) -> list[tuple[int, int]]:
    """(ncpus, mem kb) of each single chunk of a select/schedselect value."""
    out = []
    for chunk in parse_select(select):
        out += [(int(chunk.resources.get("ncpus", 0)), size_kb(chunk.resources.get("mem", 0)))] * chunk.count
    return out


def _take(chunk: Chunk, ncpus: int, mem_kb: int) -> Chunk | None:
    """The slices a chunk gives to a need, greedily per vnode in order (None: not enough)."""
    if sum(s.ncpus for s in chunk) < ncpus or sum(s.mem_kb for s in chunk) < mem_kb:
        return None
    out = []
    for s in chunk:
        c, m = min(s.ncpus, ncpus), min(s.mem_kb, mem_kb)
        if c or m:
            out.append(Slice(s.vnode, c, m))
        ncpus, mem_kb = ncpus - c, mem_kb - m
    return tuple(out)


def expected_prune(exec_vnode: str, keep_select: str, failed_hosts: Iterable[str] = ()) -> tuple[Chunk, ...]:
    """The shipped release_nodes rule on the job's own initial exec_vnode: the first keep_select
    chunk is the primary's chunk; the others are served, in order, by the first unused healthy chunk
    big enough, looking at the remaining chunks sorted by (ncpus, mem) ascending (stable), as the
    mom builds its list (add_to_resc_limit_list_sorted under PBS_MOM in src/server/vnparse.c)."""
    failed = set(failed_hosts)
    chunks = chunks_of(exec_vnode)
    if not chunks:
        raise pick.MissingEvidence(f"expected chunks in the job's exec_vnode, found {exec_vnode!r}")
    first, *rest = chunks
    healthy = [c for c in rest if not any(s.host in failed for s in c)]
    have = [first, *sorted(healthy, key=lambda c: (sum(s.ncpus for s in c), sum(s.mem_kb for s in c)))]
    used = [False] * len(have)
    kept = []
    for index, (ncpus, mem_kb) in enumerate(select_chunks(keep_select)):
        for i, chunk in enumerate(have[:1] if index == 0 else have[1:], start=0 if index == 0 else 1):
            taken = None if used[i] else _take(chunk, ncpus, mem_kb)
            if taken is not None:
                used[i] = True
                kept.append(taken)
                break
        else:
            raise AssertionError(f"keep_select {keep_select} cannot be satisfied from {exec_vnode} without {failed}")
    return tuple(kept)


def set_node_order(pbs: Pbs, hosts: Sequence[str]) -> None:
    """Priority 60, 50, ... on `hosts` (Roles.node_order: the primary, then sisters 1..4) so the
    scheduler fills them in that order (sched_config: node_sort_key "sort_priority HIGH") whatever
    order the server lists its nodes in (a node re-created by another suite moves to the end)."""
    for rank, host in enumerate(hosts):
        pbs.server.set({"Priority": 60 - 10 * rank}, obj="node", name=host, check=True)


def clear_node_order(pbs: Pbs, hosts: Sequence[str]) -> None:
    for host in hosts:
        pbs.server.unset("Priority", obj="node", name=host)


def assert_assignment(job: Mapping[str, Any], expected: Sequence[Chunk], keep_select: str) -> None:
    """exec_vnode, exec_host, schedselect and Resource_List all describe `expected` / keep_select."""
    __tracebackhide__ = True
    assert chunks_of(job["exec_vnode"]) == tuple(expected), f"exec_vnode {job['exec_vnode']}: expected {expected}"
    hosts = list(dict.fromkeys(s.host for c in expected for s in c))
    got = list(dict.fromkeys(e.host for e in parse_exec_host(job["exec_host"])))
    assert got == hosts, f"exec_host {job['exec_host']}: expected the hosts {hosts}"
    want = select_chunks(keep_select)
    assert select_chunks(job["schedselect"]) == want, f"schedselect {job['schedselect']}: expected {want}"
    rl = job["Resource_List"]
    assert select_chunks(rl["select"]) == want, f"Resource_List.select {rl['select']}: expected {want}"
    ncpus, mem_kb = sum(c for c, _ in want), sum(m for _, m in want)
    assert int(rl["ncpus"]) == ncpus, f"Resource_List.ncpus {rl['ncpus']}: expected {ncpus}"
    assert size_kb(rl.get("mem", 0)) == mem_kb, f"Resource_List.mem {rl.get('mem')}: expected {mem_kb}kb"
    assert int(rl["nodect"]) == len(want), f"Resource_List.nodect {rl['nodect']}: expected {len(want)}"


# ---------------------------------------------------------------------------------------------
# Jobs of a test


@dataclass
class Run:
    """A started job's evidence: its id, the 'S' and 's' records, the mom's pruning lines."""

    job_id: str
    initial_exec_vnode: str
    job: dict[str, Any]
    records: dict[str, Any] = field(default_factory=dict)


class StartupKit(JobKit):
    """The suite's jobs (`kit` fixture, ptl_tests/kit.py): the standard job by default (ORIGINAL_SELECT,
    place=scatter), submitted from the kit's directory; not purged at cleanup (the baseline restore
    deletes them). Readers: `mom` (the primary's mom log), `server_log`, `accounting`, job reports."""

    name_prefix = "rs"
    dir_prefix = "pbsh-rs-"
    default_select = ORIGINAL_SELECT
    default_place = "scatter"
    sleep = SLEEP
    submit_in_dir = True
    purge_at_cleanup = False

    def __init__(self, pbs: Pbs, cluster: Cluster, roles: Roles, nemesis: Nemesis | None = None) -> None:
        super().__init__(pbs, cluster, roles.owner, nemesis)
        self.roles, self.primary = roles, roles.primary
        self.made = time.monotonic()
        self.mom = mom_log(cluster, self.primary)
        self.server_log = server_log(cluster)
        self.accounting = AccountingReader(cluster.server, str(cluster.pbs_home))

    def mom_of(self, host: str) -> LogReader:
        return mom_log(self.cluster, host)

    @staticmethod
    def report_file(name: str) -> str:
        """The file of the kit's directory the report job `name` writes (report_job)."""
        return f"{name}.report"

    def report_path(self, name: str) -> str:
        return self.path(self.report_file(name))

    def report(self, name: str, timeout: float = 60) -> str:
        """The report a job script wrote on its primary (jobscripts.pruned_job_report), once it says
        '== end', with a `== tasks` section before that end: the lines its tasks appended on the hosts
        they ran on, every host's (JobKit.read), ordered by host."""
        file = self.report_file(name)
        text = wait_until(
            lambda: self.read(file),
            lambda got: "== end" in got,
            timeout=timeout,
            describe=f"job report {self.where(file)} complete",
        )
        tasks = self.read(f"{file}.tasks")
        head, _, tail = text.partition("== end")
        return f"{head}== tasks\n{tasks}== end{tail}"

    def started(self, job_id: str, timeout: float = 90) -> dict[str, Any]:
        """The job once it runs (R, substate 42). Also stops waiting when its start has visibly failed
        (held, finished, or queued again after an attempt: run_count > 0) and then fails naming what the
        server shows: a tolerance or a pruning that stopped working fails here at once, not at a timeout."""
        __tracebackhide__ = True

        def settled(job: dict[str, Any]) -> bool:
            state = job.get("job_state")
            requeued = state == "Q" and int(job.get("run_count", 0) or 0) > 0
            return (state, job.get("substate")) == ("R", RUNNING) or state in ("H", "F", "X") or requeued

        describe = f"job {job_id} running (R, substate {RUNNING}) or its start failed"
        next_look = [time.monotonic() + STARTER_LOOK_AFTER]

        def settled_or_stuck(job: dict[str, Any]) -> bool:
            if settled(job):
                return True
            now = time.monotonic()
            if job.get("substate") == PRERUN and job.get("exec_host") and now >= next_look[0]:
                next_look[0] = now + STARTER_LOOK_EVERY
                primary = self.cluster.hosts.get(str(job["exec_host"]).split("/", 1)[0])
                seen = None
                # A primary that cannot be read now leaves the wait to its timeout (and the plugin's
                # diagnosis). Only a starter forked since the kit was made is one of this attempt's.
                with contextlib.suppress(Exception):
                    seen = primary and defects.stuck_starter_on(primary, younger_than=now - self.made + 1)
                if seen:  # final: the plugin names the race from the same evidence and ends the attempt
                    raise WaitTimeout(f"{describe} (it never will: {seen})", now - start, job)
            return False

        start = time.monotonic()
        job = wait_until(lambda: self.pbs.jobs.status(job_id), settled_or_stuck, timeout=timeout, describe=describe)
        if (job.get("job_state"), job.get("substate")) != ("R", RUNNING):
            shown = {
                k: job.get(k) for k in ("job_state", "substate", "run_count", "Hold_Types", "comment", "exec_vnode")
            }
            raise AssertionError(f"expected job {job_id} to start (R, substate {RUNNING}); its start failed: {shown}")
        return job

    def join_alarm_exceeded(self, job_id: str, since: datetime, timeout: float) -> tuple[LogLine, int]:
        """The primary's "sister_join_job_alarm wait time N secs exceeded" line for the job, and N: the
        alarm the mom used, which the test compares with the one it expects (a wrong value fails at
        once, naming it, instead of a wait for a line that never comes)."""
        __tracebackhide__ = True
        pattern = JOIN_ALARM_EXCEEDED.format(secs=r"(\d+)")
        line = self.mom.expect(f"Job;{re.escape(job_id)};{pattern}", since, timeout)
        return line, int(pick.group(re.search(pattern, line.message), 1, "the alarm in seconds", line.raw))

    def start_records(self, job_id: str, types: str = "Ss", timeout: float = 60) -> dict[str, Any]:
        """The job's first record of each type letter (waits until all are there)."""
        recs = wait_until(
            lambda: self.accounting.of(job_id, types, self.since),
            lambda rs: set(types) <= {r.type for r in rs},
            timeout=timeout,
            describe=f"accounting records {types!r} of {job_id}",
        )
        return {t: pick.first([r for r in recs if r.type == t], f"a {t!r} record of {job_id}") for t in types}

    def pruning(self, job_id: str, timeout: float = 60) -> tuple[str, str]:
        """(from, to) exec_vnode of the primary mom's 'pruned from/to exec_vnode=' lines."""
        job = re.escape(job_id)  # subjob ids carry [ ]
        got_from = self.mom.expect(f"Job;{job};{PRUNED_FROM}", self.since, timeout)
        got_to = self.mom.expect(f"Job;{job};{PRUNED_TO}", self.since, timeout)
        return got_from.message.split(PRUNED_FROM, 1)[1], got_to.message.split(PRUNED_TO, 1)[1]


# ---------------------------------------------------------------------------------------------
# Sister failures, timers and tolerance after start (part B of ptl_tests/reliable_startup/)

# Shipped strings (src/resmom/mom_main.c, start_exec.c, mom_comm.c; Libpython/pbs_python_svr_internal.c).
JOIN_ALARM_EXCEEDED = "sister_join_job_alarm wait time {secs} secs exceeded"  # PBSEVENT_ADMIN
PROLOGUES_INCOMPLETE = "not all prologue hooks to sister moms completed, but job will proceed to execute"
JOIN_ALARM_UPDATED = "joinjob_alarm_time updated to {secs}"  # logged when a hook file arrives
LAUNCH_DELAY_UPDATED = "job_launch_delay updated to {secs}"
LAUNCH_SET_REFUSED = (
    "Can only set progname, argv, env event parameters as well as job, resource, vnode under execjob_launch hook."
)
LAUNCH_SET_REFUSED_OLD = "Can only set progname, argv, env event parameters under execjob_launch hook"
RESIZE_SET_REFUSED = "nothing is settable inside an execjob_resize hook!"
BADSTATE = "Request invalid for state of job"  # msg_badstate, PBSE_BADSTATE
KILLING_JOB = r"im_eof, lost communication with {host} for > \d+ secs, killing job now"
PBSEVENT_SYSTEM = 0x0002


def launch_sets_hook(tag: str, *, run_count: int, cput: str, rerun: bool) -> SuiteHook:
    """execjob_launch on the primary: sets the job's Execution_Time (an hour ahead), run_count and
    resources_used.cput, logs "<tag> set Execution_Time=<ctime> run_count=<n> cput=<cput>", and
    with rerun requeues the job (rerun + reject)."""
    config = {"tag": tag, "run_count": run_count, "cput": cput, "rerun": rerun}
    return SuiteHook("launch_sets_job_attributes.py", {"event": "execjob_launch", "enabled": True}, config)


def probe_hook(
    tag: str,
    event: str,
    *,
    alarm: int = 30,
    sleep_on: Mapping[str, int] | None = None,
    try_set: Sequence[str] = (),
    hold_and_reject: bool = False,
) -> SuiteHook:
    """A marker hook: logs "<tag> <event> on <host>: started" wherever it runs (the start of a
    timer window on the primary), optionally sleeps on some hosts, tries to set a server/job/vnode
    attribute (logging "set <what> attribute: accepted" or the exception), and on the primary may
    hold (s), requeue and reject the job."""
    config = {
        "tag": tag,
        "sleep_on": dict(sleep_on or {}),
        "try_set": list(try_set),
        "hold_and_reject": hold_and_reject,
    }
    return SuiteHook("event_probe.py", {"event": event, "enabled": True, "alarm": alarm}, config)


def set_mom_options(pbs: Pbs, cluster: Cluster, host: str, options: Mapping[str, object]) -> datetime:
    """Set mom config options ("$name": value) on one host (pbs.mom_config.set_options)."""
    return pbs.mom_config.set_options(cluster.hosts[host], options)


def seconds_between(first: datetime, then: datetime) -> int:
    """Whole seconds between two log stamps (each has 1 s resolution: the true gap is within +-1)."""
    return int((then - first).total_seconds())


# docs/suites/reliable_startup.md, "OpenPBS defects found"
EMPTY_FAIL_LIST = (
    "OpenPBS defect (intermittent): the primary mom had logged that the sister failed before the "
    "execjob_launch hook ran, yet the hook's vnode_list_fail did not list it"
)


def met_empty_fail_list(kit: StartupKit, request, job_id: str, failed: str, *, knew: str) -> None:
    """The intermittent vnode_list_fail that leaves out a failed sister, recognised only by its
    exact evidence: the primary's line `knew` (a regex: it ignored the sister's error, or launched
    without its prologue ack) comes before the launch hook's first line in the primary's log, the
    hook listed vnodes but none of that sister's among the failed ones, and it pruned the job (seen:
    without the sister, and, when the job starter did not learn of the failure either, with it).
    Either starter race gives this evidence (the ack read before the name, or an 8-byte name read as a
    size; each pinned in test_starter_races.py). Then the scenario runs once more on a fresh job
    (pbs_harness.suite.defect_retry); otherwise nothing happens."""
    job = re.escape(job_id)
    lines = kit.mom.lines(kit.since)
    knew_at = next((i for i, ln in enumerate(lines) if re.search(f"Job;{job};{knew}", ln.raw)), None)
    launch_at = next((i for i, ln in enumerate(lines) if "launch: found vnode_list[" in ln.message), None)
    fail_listed = {
        ln.message.split("found vnode_list_fail[", 1)[1].rstrip("]")
        for ln in lines
        if "launch: found vnode_list_fail[" in ln.message
    }
    left_out = not any(v == failed or v.startswith(f"{failed}[") for v in fail_listed)
    pruned = [ln for ln in lines if re.search(f"Job;{job};{PRUNED_TO}", ln.raw)]
    if knew_at is not None and launch_at is not None and knew_at < launch_at and left_out and pruned:
        seen = f"vnode_list_fail {sorted(fail_listed)}; {lines[knew_at].raw} / {pruned[-1].raw}"
        defect_retry.met(request, f"{EMPTY_FAIL_LIST}. Observed: {seen}")


LOST_OBIT = (
    "OpenPBS defect (intermittent): the primary mom bailed out of the starting job (exec_bail, kill_job) and "
    "logged 'Obit sent', but the server never received that obit (no 'Obit received' line): the job stays "
    "R/41 until something else prods the mom"
)


def met_lost_obit(kit: StartupKit, request, job_id: str) -> None:
    """The obit that never reaches the server, recognised only by its exact evidence: the primary's
    last `Obit sent` for the job, no `Obit received` in the server's log since, and the job still R
    in substate 41. Then the scenario runs once more on a fresh job; otherwise nothing happens."""
    job = re.escape(job_id)
    sent = kit.mom.matching(f"Job;{job};Obit sent$", kit.since)
    if not sent:
        return
    received = kit.server_log.matching(f"Job;{job};Obit received", sent[-1].time)
    status = kit.pbs.jobs.status(job_id)
    if not received and (status.get("job_state"), status.get("substate")) == ("R", PRERUN):
        seen = f"{sent[-1].raw}; {job_id} R/{PRERUN} with no 'Obit received' since"
        defect_retry.met(request, f"{LOST_OBIT}. Observed: {seen}")
