"""Helpers of the node ramp-down suite (ptl_tests/ramp_down/): the hosts and users it uses by role and
the select strings built from them, its test hooks (files in ptl_tests/hooks/), a stageout that
lasts until the test lets it finish, the custom resources the keep_select (-k) tests request, a
record of what pbsdsh tasks see (mpiprocs/ompthreads), and the server's rules for what -k keeps.
"""

from __future__ import annotations

import shlex
import uuid
from dataclasses import dataclass, field

import pytest

from pbs_harness.pbs.parsers import SelectChunk, VnodeSlice, size_kb
from pbs_harness.pbs.substates import PRERUN
from pbs_harness.remote.transport import RemoteHost
from pbs_harness.suite.jobfiles import JobFiles
from pbs_harness.suite.topology import Topology
from ptl_tests.hook_files import SuiteHook

SUPERCHUNK_VNODES = 3  # the standard job's middle chunk: 3 cpus over three 1-cpu vnodes of one host


@dataclass(frozen=True)
class Roles:
    """The hosts and users of this suite by the part they play, resolved from the cluster topology
    when the suite runs (never at import: test ids are the same on every cluster).

    primary  the server host (a plain 2-cpu host where the server runs no mom): the first chunk of
             every job, so its mom is the primary execution host
    plain    a single-vnode 2-cpu host: the standard job's last chunk
    multi    the multi-vnode host: the standard job's super-chunk over three of its vnodes
    owner    the job owner; other: an unprivileged account that does not own the job
    Further plain hosts, the localssd host and the PBS operator/manager are asked for by the tests
    that need them (`plain_hosts`, `ssd_host`, `user`), so only those skip on a cluster without them.
    """

    primary: str
    plain: str
    multi: str
    owner: str
    other: str
    topology: Topology = field(repr=False, compare=False)

    @classmethod
    def of(cls, topology: Topology) -> Roles:
        moms = {m.name for m in topology.moms}
        server = topology.server.name
        primary = server if server in moms else topology.plain_hosts(1, ncpus=2)[0]
        plain = topology.plain_hosts(1, ncpus=2, exclude=(primary,))[0]
        multi = topology.multi_vnode_host(min_vnodes=SUPERCHUNK_VNODES).name
        return cls(primary, plain, multi, topology.users.owner, topology.users.other, topology)

    def plain_hosts(self, n: int) -> list[str]:
        """`n` single-vnode 2-cpu hosts besides the primary, `plain` first (the test skips without them)."""
        return self.topology.plain_hosts(n, ncpus=2, exclude=(self.primary,))

    def ssd_host(self) -> str:
        """A host offering the consumable host-level resource localssd=1, not the primary nor `plain`."""
        found = [h for h in self.topology.hosts_with("localssd") if h not in (self.primary, self.plain)]
        if not found:
            pytest.skip(
                "needs a host offering localssd besides the primary and the plain host: set "
                "openpbs_server_node_attributes: {HOST: {resources_available.localssd: 1}} on another host"
            )
        return found[0]


def standard_select(roles: Roles) -> str:
    """The standard job: one chunk per host, so the middle chunk is a super-chunk over three vnodes
    of the multi-vnode host (1 cpu / 1gb each)."""
    return f"ncpus=1:host={roles.primary}+ncpus=3:mem=2gb:host={roles.multi}+ncpus=2:mem=2gb:host={roles.plain}"


def extra_select(roles: Roles) -> str:
    """The standard job with mpiprocs/ompthreads in every chunk (PTL's test_release_nodes*_extra). The
    values differ per chunk so that a task, a $PBS_NODEFILE line or a select chunk cannot be matched
    with the wrong chunk; the primary's chunk takes both of the primary's cpus to repeat its host too."""
    return (
        f"ncpus=2:mpiprocs=2:ompthreads=1:host={roles.primary}"
        f"+ncpus=3:mem=2gb:mpiprocs=3:ompthreads=2:host={roles.multi}"
        f"+ncpus=2:mem=2gb:mpiprocs=1:ompthreads=3:host={roles.plain}"
    )


RELNODES_ATTR = "release_nodes_on_stageout"
STAGEOUT_SUBSTATE = 51  # JOB_SUBSTATE_STAGEOUT (src/include/job.h)
PRERUN_SUBSTATE = PRERUN  # sent to the mom, not yet running


def hook_set_release_nodes_on_stageout(value: bool, event: str = "queuejob") -> SuiteHook:
    """A queuejob or modifyjob hook setting the job's release_nodes_on_stageout to `value` (it logs
    "ramp_down hook set release_nodes_on_stageout=True|False")."""
    return SuiteHook("set_release_nodes_on_stageout.py", {"event": event, "enabled": True}, {"value": value})


def hook_log_event_on_this_host(tag: str, event: str, sleep: float = 0) -> SuiteHook:
    """An `event` (execjob_*) hook logging `<tag> <hook name> on <host>` in the mom log of the host it runs on;
    with `sleep`, it runs on that many seconds, then logs `<tag> <hook name> done on <host>`."""
    config: dict[str, object] = {"tag": tag, "sleep": sleep} if sleep else {"tag": tag}
    return SuiteHook("log_event_on_this_host.py", {"event": event, "enabled": True}, config)


@dataclass
class BlockedStageout:
    """A stageout whose copy waits for the test.

    Source and destination are files of the owner's home on one host, the job's primary (`host`):
    the destination is a FIFO on that host's own disk and the stageout names that host
    (`attribute`), so its mom copies locally with `cp -rp` whether or not homes are shared (a
    destination on the mom's own host is local: local_or_remote() in src/resmom/stage_func.c), and
    cp blocks opening the FIFO for writing until a reader opens it. The job thus stays in substate
    51 (STAGEOUT) until `drain()` reads the FIFO; what it reads is the copied source, which proves
    the stageout really ran through it.
    """

    host: RemoteHost
    user: str
    source: str
    fifo: str
    payload: str
    drained: bool = False

    @classmethod
    def create(cls, host: RemoteHost, user: str, home: str) -> BlockedStageout:
        token = uuid.uuid4().hex[:10]
        base = f"{home}/rd-stageout-{token}"
        made = cls(host, user, f"{base}.src", f"{base}.fifo", f"stageout payload {token}")
        host.check(f"echo {shlex.quote(made.payload)} > {made.source} && mkfifo {made.fifo}", user=user)
        return made

    def attribute(self, dest_host: str) -> str:
        """The -W stageout value: local source @ host:destination."""
        return f"{self.source}@{dest_host}:{self.fifo}"

    def drain(self, timeout: int = 30) -> str:
        """Read the FIFO as its owner: the blocked cp writes the source and finishes."""
        self.drained = True
        return self.host.check(f"timeout {timeout} cat {self.fifo}", user=self.user).stdout.strip()

    def cleanup(self) -> None:
        if not self.drained:  # a failed test may leave the mom's cp waiting on the FIFO
            self.host.run(f"timeout 10 cat {self.fifo} > /dev/null", user=self.user)
        self.host.run(["rm", "-f", self.source, self.fifo])


@dataclass(frozen=True)
class CustomResource:
    """A host-level, non-consumable custom resource (flag=h) and two values for it: the chunks of a
    keep_select job carry `kept` or `other`, so a -k select naming `kept` picks chunks by it."""

    name: str
    type: str
    kept: str
    other: str


CUSTOM_RESOURCES = (
    CustomResource("rd_str", "string", "def", "abc"),
    CustomResource("rd_bool", "boolean", "True", "False"),
    CustomResource("rd_long", "long", "9", "7"),
    CustomResource("rd_size", "size", "9kb", "7kb"),
    CustomResource("rd_float", "float", "9.1", "7.5"),
)


def resource_terms(resources: tuple[CustomResource, ...], which: str) -> str:
    """`:name=value` for each resource, with its `kept` or `other` value."""
    return "".join(f":{r.name}={getattr(r, which)}" for r in resources)


@dataclass
class TaskEnvReport:
    """What the job's pbsdsh tasks see, in a file of the owner's home that each task appends to on
    the host it runs on (read back from every host: pbs_harness/suite/jobfiles.py).

    The job script (`script`) runs `pbsdsh` at once: each task appends "before <hostname>
    <OMP_NUM_THREADS>" and becomes `sleep`; once the test calls `go()` (a file on the primary, where
    the script waits for it) it runs `pbsdsh` again, each task appending "after ...", then writes
    "done". pbsdsh starts one task per $PBS_NODEFILE entry (one per mpiproc of each chunk) and the mom
    gives each task the ompthreads of its chunk as OMP_NUM_THREADS, so the records show how the mom
    itself laid the job out before and after a release.
    """

    files: JobFiles
    host: RemoteHost  # the job's primary host
    user: str
    path: str

    @classmethod
    def create(cls, files: JobFiles, host: RemoteHost, user: str) -> TaskEnvReport:
        home = files.cluster.inventory.home(user)
        return cls(files, host, user, f"{home}/rd-taskenv-{uuid.uuid4().hex[:10]}")

    def _record(self, phase: str) -> str:
        return f'echo "{phase} $(hostname) ${{OMP_NUM_THREADS:-unset}}" >> {self.path}'

    def script(self, prefix: str, seconds: int) -> str:
        return f"""#!/bin/bash
{prefix}/bin/pbsdsh -- /bin/bash -c '{self._record("before")}; exec /bin/sleep {seconds}' &
for attempt in $(seq 1200); do [ -e {self.path}.go ] && break; sleep 0.5; done
{prefix}/bin/pbsdsh -- /bin/bash -c '{self._record("after")}'
echo done >> {self.path}
exec /bin/sleep {seconds}
"""

    def lines(self) -> list[str]:
        """Every record, from every host the tasks ran on."""
        return self.files.read(self.path).splitlines()

    def where(self) -> str:
        return f"{self.path} {self.files.where()}"

    @staticmethod
    def records(lines: list[str], phase: str) -> list[tuple[str, str]]:
        """(host, OMP_NUM_THREADS) of every task of the phase."""
        return [
            (words[1], words[2])
            for words in (line.split() for line in lines)
            if words[:1] == [phase] and len(words) == 3
        ]

    def go(self) -> None:
        self.host.check(["touch", f"{self.path}.go"], user=self.user)

    def cleanup(self) -> None:
        self.files.remove(self.path, f"{self.path}.go")


def satisfy_chunk_need(chunk: tuple[VnodeSlice, ...], need: dict[str, str]) -> tuple[VnodeSlice, ...]:
    """The part of one assigned chunk that `pbs_release_nodes -k select=...` keeps for a -k chunk
    asking `need` (ncpus and mem only), as satisfy_chunk_need() in src/server/vnparse.c does it:
    the chunk's vnodes are walked in exec_vnode order and each resource is taken from them until the
    need is met (a vnode giving more than what is still needed gives only that); a resource the -k
    chunk does not name is needed whole. A vnode that gives nothing leaves the chunk."""
    total = {
        "ncpus": sum(int(s.resources.get("ncpus", 0)) for s in chunk),
        "mem": sum(size_kb(s.resources.get("mem", 0)) for s in chunk),
    }
    still = {"ncpus": int(need.get("ncpus", 0)) or total["ncpus"], "mem": size_kb(need.get("mem", 0)) or total["mem"]}
    kept = []
    for s in chunk:
        given = {}
        for key, value in s.resources.items():
            if key not in still or still[key] <= 0:
                continue
            amount = int(value) if key == "ncpus" else size_kb(value)
            if amount > still[key]:
                given[key] = str(still[key]) if key == "ncpus" else f"{still[key]}kb"
                still[key] = 0
            else:
                given[key] = value
                still[key] -= amount
        if given:
            kept.append(VnodeSlice(s.vnode, given))
    return tuple(kept)


def node_count_order(chunks: dict[str, SelectChunk]) -> list[str]:
    """The hosts of a job's sister chunks (host -> its schedselect chunk) in the order in which
    `pbs_release_nodes -k N` takes them: the client turns -k N into select=N, chunks asking nothing,
    and the server gives each the first unused chunk of its "have" list (pbs_release_nodes_given_select,
    vnparse.c). That list is sorted by add_to_resc_limit_list_sorted(): fewer resources first (ncpus
    plus every chunk resource that exec_vnode does not carry: host and the custom ones), then by the
    resource names, then by ncpus, then by the other values in name order (host comes first).
    Only single-vnode chunks whose exec_vnode carries ncpus alone are modelled."""

    def key(host: str) -> tuple:
        res = chunks[host].resources
        others = tuple(sorted(k.lower() for k in res if k != "ncpus"))
        return (len(res), others, int(res.get("ncpus", 0)), res.get("host", host))

    return sorted(chunks, key=key)
