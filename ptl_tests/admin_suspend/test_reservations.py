"""Reservations: a confirmed reservation on a maintenance vnode, a running one ending while its job
is admin-suspended."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest

from pbs_harness.common.waits import wait_until
from pbs_harness.pbs.evidence import pick
from pbs_harness.pbs.evidence.logs import server_log
from pbs_harness.pbs.nodes import states
from pbs_harness.pbs.parsers import vnodes_of
from pbs_harness.suite import leaks
from ptl_tests.admin_suspend_helpers import MAINT, RUNNING, accounting, maintenance_jobs, wait_nodes

pytestmark = [pytest.mark.acceptance, pytest.mark.admin_suspend]


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
        vnode = pick.one(vnodes_of(resv["resv_nodes"]), f"one vnode in resv_nodes of {rid}")
        job = kit.running(select=f"1:ncpus=1:vnode={vnode}", resources={"walltime": "00:10:00"})
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
        confirm = pick.last(accounting(cluster).wait_for(rid, "Y", 1, since, timeout=10), f"a 'Y' record of {rid}")
        assert confirm.get("nodes") == moved["resv_nodes"]
    finally:
        if rid:
            pbs.resv.delete(rid)
        pbs.server.unset("reserve_retry_time")


class ResvServerTotalLeak(leaks.Leaked):
    """The server keeps the ended reservation's ncpus=1 and nodect=1 in its own resources_assigned."""

    @staticmethod
    def matches(found: list[str]) -> bool:
        """Exactly the reservation's select=1:ncpus=1 on the server, nothing on a vnode or queue."""
        return sorted(found) == ["server: resources_assigned.ncpus = 1", "server: resources_assigned.nodect = 1"]


# A leak, so a finding (docs/test-core.md): seen after every run of the test (pbshd and ex 22 Nov; lead
# 26 Nov; lk and pbla 28 Nov 2026, master cd7ab5e). The cause, from the server's own states polled once
# a second (pbla, 28 Nov 06:21, docs/suites/admin_suspend.md): RESV_BEING_DELETED/9 while its job dies,
# RESV_CONFIRMED/2 from the job's obit to the purge, server resources_assigned ncpus=1 nodect=1 throughout.
RESV_SERVER_TOTAL_XFAIL = pytest.mark.xfail(
    strict=True,
    raises=ResvServerTotalLeak,
    reason="OpenPBS (master cd7ab5e, 23.06.06, 22.05.11): a running reservation that ends while its job is "
    "admin-suspended leaves its ncpus=1 nodect=1 in the server's resources_assigned. The job's obit "
    "(rel_resc, src/server/req_jobobit.c) takes its vnode out of maintenance; vnode_available "
    "(src/server/node_manager.c) sees the reservation's last unavailable vnode back and, as the reservation "
    "is not RESV_RUNNING but RESV_BEING_DELETED, resets it to RESV_CONFIRMED; resv_purge (job_func.c) then "
    "gives its resources back with set_resc_assigned (svr_func.c), which touches the server's "
    "resources_assigned only for RUNNING, DELETED, BEING_DELETED or FINISHED reservations, i.e. not at all; "
    "only a pbs_server restart recounts it",
)


@RESV_SERVER_TOTAL_XFAIL
@pytest.mark.leak_of.with_args(ResvServerTotalLeak)
@pytest.mark.spec("AS-misc")
def test_a_running_reservation_ends_while_its_job_is_admin_suspended(kit, pbs, cluster) -> None:
    rid, _ = pbs.resv.submit(
        "-R", rsub_time(timedelta(seconds=10)), "-D", "20", "-l", "select=1:ncpus=1", user=kit.user
    )
    resv = pbs.resv.wait_state(rid, "RESV_CONFIRMED", timeout=30)
    vnode = pick.one(vnodes_of(resv["resv_nodes"]), f"one vnode in resv_nodes of {rid}")
    job = kit.submit(queue=rid.split(".", 1)[0])
    pbs.jobs.wait(job, job_state="R", substate=RUNNING, timeout=60)
    assert pbs.resv.status(rid)["reserve_state"] == "RESV_RUNNING"

    kit.admin(job, "admin-suspend")
    wait_nodes(pbs, {vnode: (MAINT, [job])})
    ncpus = pbs.nodes.status(vnode)["resources_available"]["ncpus"]
    outside = kit.submit(select=f"1:ncpus={ncpus}:vnode={vnode}")  # needs the whole vnode

    # At the reservation's end PBS deletes its jobs: the stopped job dies by SIGKILL.
    done = pbs.jobs.wait(job, job_state="F", timeout=120)
    assert done["Exit_status"] == 265
    wait_until(lambda: pbs.resv.status(rid), lambda r: not r, timeout=60, describe=f"reservation {rid} gone")
    node = pbs.nodes.status(vnode)
    assert "maintenance" not in states(node)
    assert not maintenance_jobs(node)
    ran = pbs.jobs.wait(outside, job_state="R", timeout=60)
    assert vnodes_of(ran["exec_vnode"]) == [vnode]
