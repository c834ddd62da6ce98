"""Helpers of the reservation-reconfirmation suite (the ptl_tests/resv_reconfirm/ package).

Reservations are steered with the vnode `priority` attribute (the scheduler's node_sort_key is
"sort_priority HIGH"): the test names the hosts it wants in order, the reservation lands on the
first ones and a replacement comes from the next. `Steer` puts the priorities back in teardown
(the baseline restore does not: it only checks them).

Node unavailability is real: `Rv.make_unavailable` offlines the vnode, kills the mom, crashes or
partitions the host (the nemesis heals the faults in teardown), or admin-suspends a job on it
(node state `maintenance`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pbs_harness.common.waits import WaitTimeout, wait_until
from pbs_harness.pbs.client import Pbs
from pbs_harness.pbs.evidence import pick
from pbs_harness.pbs.evidence.accounting import AccountingReader, AccountingRecord
from pbs_harness.pbs.evidence.logs import server_log
from pbs_harness.pbs.parsers import parse_exec_vnode, vnodes_of
from pbs_harness.pbs.resv import rstat_epoch, rsub_time
from pbs_harness.pbs.substates import RUNNING as JOB_RUNNING
from pbs_harness.remote.cluster import Cluster
from pbs_harness.suite.faults import Fault, Nemesis
from pbs_harness.suite.topology import Topology

SLEEP = 900  # seconds: longer than any test; jobs are deleted by the baseline restore

# Shared by the test modules of ptl_tests/resv_reconfirm/: times (seconds), the standing rule.
RETRY = 10  # reserve_retry_time for the tests (seconds); the default 600 is tested on its own
DEFAULT_RETRY = 600  # RESV_RETRY_TIME_DEFAULT, src/include/pbs_internal.h
FAR = 3600  # start of a reservation that must stay confirmed-not-running during the test
SHORT = 12  # start of a reservation that must run during the test
LONG = 900  # duration of reservations (they are deleted by the baseline restore)
HOURLY = "FREQ=HOURLY;COUNT=3"

# Reservation states as pbs_rstat -F prints them, and substates (enum in src/include/pbs_ifl.h).
CONFIRMED, RUNNING, DEGRADED, IN_CONFLICT = "RESV_CONFIRMED", "RESV_RUNNING", "RESV_DEGRADED", "RESV_IN_CONFLICT"
SUB_CONFIRMED, SUB_RUNNING, SUB_DEGRADED, SUB_IN_CONFLICT = "2", "5", "10", "12"

# How long the server takes to see the node go (bounds for the waits, from PBS's own timers):
# offline and maintenance are server-side; a killed mom or a crashed host closes its pbs_comm
# connection at once; a partition is only noticed when TPP's TCP keepalive (30 s idle + 3 probes
# 10 s apart, src/lib/Libtpp/tpp_util.c) or its 60 s TCP_USER_TIMEOUT gives up on the link.
DETECTION = {"offline": 10, "maintenance": 10, "kill_mom": 20, "crash_host": 20, "partition": 120}


def chunk_vnodes(exec_vnode: str) -> list[list[str]]:
    """The vnodes of each chunk (a super-chunk lists several)."""
    return [[sl.vnode for sl in chunk] for chunk in parse_exec_vnode(exec_vnode)]


@dataclass
class Steer:
    """Vnode priorities that steer the scheduler; `restore` unsets what was set."""

    pbs: Pbs
    touched: set[str] = field(default_factory=set)

    def prefer(self, *vnodes: str, top: int = 100) -> None:
        """Give the vnodes descending priorities starting at `top` (higher = chosen first)."""
        for rank, vnode in enumerate(vnodes):
            self.pbs.server.set({"priority": top - rank}, obj="node", name=vnode, check=True)
            self.touched.add(vnode)

    def restore(self) -> None:
        for vnode in sorted(self.touched):
            self.pbs.server.unset("priority", obj="node", name=vnode)
        self.touched.clear()


@dataclass(frozen=True)
class Resv:
    id: str
    start: int  # epoch seconds
    end: int
    queue: str
    submitted: datetime  # for log and accounting windows that include the first confirmation


# The zone of standing reservations' rules (PBS_TZID): UTC, so rule times are the UTC times the tests
# compute. Not Etc/UTC: pbs_rsub looks the zone up in libical's builtin list, and Debian 11's libical
# 3.0.9 refuses Etc/UTC ("pbs_rsub: Unrecognized PBS_TZID environment variable", seen on v22.05.11 and
# v23.06.06 hosts) while it takes UTC; Debian 12's takes both.
RRULE_TZID = "UTC"


def submit_resv(
    pbs: Pbs,
    select: str,
    *,
    start_in: int,
    duration: int,
    place: str = "scatter",
    rrule: str | None = None,
    user: str,
) -> Resv:
    """pbs_rsub of `select` by `user` starting `start_in` seconds from now; waits until it is confirmed."""
    submitted = datetime.now()
    start = int(time.time()) + start_in
    args = ["-R", rsub_time(start), "-D", str(duration), "-l", f"select={select}", "-l", f"place={place}"]
    if rrule:
        args += ["-r", rrule]
    rid, _ = pbs.resv.submit(*args, user=user, tzid=RRULE_TZID if rrule else None)
    resv = pbs.resv.wait_state(rid, CONFIRMED, timeout=30)
    assert rstat_epoch(resv["reserve_start"]) == start, resv["reserve_start"]
    return Resv(rid, start, start + duration, resv["queue"], submitted)


def wait_resv(pbs: Pbs, resv: Resv, state: str, substate: str, *, timeout: float) -> dict[str, Any]:
    return pbs.resv.wait(
        resv.id,
        lambda r: (r.get("reserve_state"), r.get("reserve_substate")) == (state, substate),
        timeout=timeout,
        describe=f"reserve_state={state} reserve_substate={substate}",
    )


def wait_running(pbs: Pbs, resv: Resv, *, margin: float = 30) -> dict[str, Any]:
    """Wait for the reservation's start (bounded by its own start time)."""
    return wait_resv(pbs, resv, RUNNING, SUB_RUNNING, timeout=max(0, resv.start - time.time()) + margin)


def job_in(pbs: Pbs, resv: Resv, select: str, *, user: str) -> tuple[str, str]:
    """A sleep of `user` in the reservation's queue, waited until it runs; returns (job id, exec_vnode)."""
    job_id = pbs.jobs.submit(user=user, select=select, args=["-q", resv.queue], command=["/bin/sleep", str(SLEEP)])
    return job_id, pbs.jobs.wait(job_id, job_state="R", substate=JOB_RUNNING, timeout=60)["exec_vnode"]


def accounting(cluster: Cluster) -> AccountingReader:
    return AccountingReader(cluster.server, str(cluster.pbs_home))


def retry_line(cluster: Cluster, rid: str, retry: int, since: datetime, *, first: bool, timeout: float = 10):
    """The server's DEBUG2 line announcing the reconfirmation attempt at epoch `retry`
    (set_resv_retry2, src/server/node_manager.c: ctime() of the retry time)."""
    word = "An" if first else "Next"
    when = re.escape(time.ctime(retry))
    pattern = rf";Resv;{re.escape(rid)};{word} attempt to reconfirm reservation will be made on {when}$"
    return server_log(cluster).expect(pattern, since, timeout)


def y_records(cluster: Cluster, rid: str, since: datetime) -> list[AccountingRecord]:
    return accounting(cluster).of(rid, "Y", since)


def confirmations(cluster: Cluster, resv: Resv, timeout: float = 10) -> tuple[AccountingRecord, AccountingRecord]:
    """The reservation's two 'Y' records since its submission: the confirmation and the reconfirmation
    (waited for up to `timeout`: the server writes it as it confirms the new nodes). Fails naming
    what the accounting log held when there are not exactly two."""
    __tracebackhide__ = True
    try:
        found = wait_until(
            lambda: y_records(cluster, resv.id, resv.submitted),
            lambda ys: len(ys) >= 2,
            timeout=timeout,
            describe=f"two 'Y' records of {resv.id}",
        )
    except WaitTimeout as exc:
        found = exc.last or []
    if len(found) == 1:
        raise pick.MissingEvidence(
            f"expected a 'Y' record for the reconfirmation of {resv.id}, found only the confirmation at "
            f"{found[0].time:%H:%M:%S}: {found[0].raw}"
        )
    if len(found) != 2:
        held = "; ".join(r.raw for r in found) or "none"
        raise pick.MissingEvidence(
            f"expected two 'Y' records of {resv.id} since {resv.submitted:%H:%M:%S} (its confirmation and its "
            f"reconfirmation), found {len(found)}: {held}"
        )
    return found[0], found[1]


def check_y(record: AccountingRecord, server: str, resv: Resv, nodes: str, count: int | None = None) -> None:
    """A 'Y' record as req_confirmresv writes it: requestor=Scheduler@<server> start end nodes [count]."""
    __tracebackhide__ = True
    want = {"requestor": f"Scheduler@{server}", "start": str(resv.start), "end": str(resv.end), "nodes": nodes}
    if count is not None:
        want["count"] = str(count)
    assert record.fields == want, f"'Y' record of {resv.id}: expected fields {want}, found {record.raw}"


def retry_epoch(resv: dict[str, Any]) -> int:
    """The reservation's reserve_retry (pbs_rstat -F) as epoch seconds."""
    __tracebackhide__ = True
    return rstat_epoch(pick.field(resv, "reserve_retry", "the reservation's pbs_rstat -F"))


def not_in(vnodes: Sequence[str], resv: dict[str, Any]) -> bool:
    return not set(vnodes) & set(vnodes_of(resv.get("resv_nodes", "")))


@dataclass
class Timeline:
    """The distinct states a reservation went through while a test waited on it, with the time each was
    first seen: evidence for a failure message."""

    pbs: Pbs
    resv: Resv
    seen: list[tuple[float, dict[str, Any]]] = field(default_factory=list)

    KEYS = ("reserve_state", "reserve_substate", "reserve_index", "resv_nodes", "reserve_retry")

    def probe(self) -> dict[str, Any]:
        status = self.pbs.resv.status(self.resv.id)
        view = {k: status.get(k) for k in self.KEYS}
        if not self.seen or self.seen[-1][1] != view:
            self.seen.append((time.time(), view))
        return status

    def wait(self, predicate: Callable[[dict[str, Any]], bool], *, timeout: float, describe: str) -> dict[str, Any]:
        return wait_until(self.probe, predicate, timeout=timeout, describe=f"reservation {self.resv.id} {describe}")

    def __str__(self) -> str:
        return "; ".join(
            f"{time.strftime('%H:%M:%S', time.localtime(t))} "
            + " ".join(f"{k.removeprefix('reserve_')}={v}" for k, v in view.items())
            for t, view in self.seen
        )


@dataclass
class Rv:
    """What a test of this suite works with: the client, the cluster, its topology (hosts and users
    by role), the nemesis, and the vnode priorities it steers with (restored by the fixture)."""

    pbs: Pbs
    cluster: Cluster
    topology: Topology
    nemesis: Nemesis
    steer: Steer
    offlined: list[str] = field(default_factory=list)
    admin_suspended: list[str] = field(default_factory=list)

    @property
    def owner(self) -> str:
        """Owner of the suite's reservations and jobs."""
        return self.topology.users.owner

    def status(self, resv: Resv) -> dict[str, Any]:
        return self.pbs.resv.status(resv.id)

    def offline(self, *vnodes: str) -> None:
        """Offline vnodes with qmgr (`pbsnodes -o` answers "Unknown node" for `host[N]` vnodes);
        `restore` takes the offline bit away again, for those the baseline restore cannot."""
        for vnode in vnodes:
            self.pbs.server.qmgr(f"set node {vnode} state=offline", check=True)
            self.offlined.append(vnode)

    def restore(self) -> None:
        # OpenPBS keeps a node's emptied maintenance_jobs in its database; a server restart (by any
        # suite) while such a job still exists, even finished in the history, puts the node back into
        # maintenance for good (docs/suites/admin_suspend.md). So these jobs go, history included, now.
        for job_id in self.admin_suspended:
            self.pbs.jobs.purge(job_id)
        self.admin_suspended.clear()
        for vnode in self.offlined:
            self.pbs.server.qmgr(f"set node {vnode} state-=offline")
        self.offlined.clear()
        self.steer.restore()

    def make_unavailable(self, how: str, vnode: str, *, job_id: str | None = None) -> Fault | None:
        """Make `vnode` unavailable for real; faults are healed by the nemesis in teardown."""
        if how == "offline":
            self.offline(vnode)
        elif how == "maintenance":
            assert job_id, "maintenance needs a job to admin-suspend"
            self.admin_suspended.append(job_id)
            self.pbs.jobs.signal(job_id, "admin-suspend", check=True)
        elif how in ("kill_mom", "crash_host", "partition"):
            return getattr(self.nemesis, how)(vnode)
        else:
            raise ValueError(how)
        return None

    def degrade(
        self, how: str, resv: Resv, vnode: str, state: str, *, job_id: str | None = None
    ) -> tuple[dict[str, Any], int, int, Fault | None]:
        """Make `vnode` unavailable; wait until the reservation shows `state` with substate 10.
        Returns (pbs_rstat -F, epoch before the fault, epoch once degraded was seen, the fault)."""
        before = int(time.time())
        fault = self.make_unavailable(how, vnode, job_id=job_id)
        seen = wait_resv(self.pbs, resv, state, SUB_DEGRADED, timeout=DETECTION[how])
        return seen, before, int(time.time()) + 1, fault
