"""Run by test_harness.py in a child pytest that the parent kills with SIGKILL (no teardown, no
restore): leaves what a reservation test killed midway leaves (a reservation and a job, a vnode
offlined with a priority, reserve_retry_time set after reserve_retry_init, so that a value of
reserve_retry_init stays in the server's database out of view), plus a test hook and a changed
mom config; writes the vnode's name to PBSH_CHILD_READY, then waits (bounded) for the kill."""

import os
import time
from pathlib import Path

import pytest

from pbs_harness.common.waits import wait_until
from pbs_harness.pbs.resv import rsub_time
from ptl_tests.hook_files import SuiteHook, create_hook

pytestmark = pytest.mark.acceptance


def test_leave_leftovers_then_wait_for_sigkill(pbs, cluster, topology) -> None:
    (host,) = topology.plain_hosts(1)
    owner = topology.users.owner
    pbs.resv.submit("-R", rsub_time(time.time() + 3600), "-D", "600", "-l", "select=1:ncpus=1", user=owner)
    pbs.jobs.submit(user=owner, select="1:ncpus=1", command=["/bin/sleep", "600"])
    pbs.server.set({"reserve_retry_init": 7}, check=True)
    pbs.server.set({"reserve_retry_time": 10}, check=True)
    pbs.server.set({"priority": 100}, obj="node", name=host, check=True)
    pbs.server.qmgr(f"set node {host} state=offline", check=True)
    create_hook(
        pbs,
        "pbsh_leftover",
        SuiteHook("log_vnode_maintenance.py", {"event": "queuejob", "enabled": False}, {"vnode": host}),
    )
    pbs.mom_config.set(cluster.hosts[host], "$max_check_poll", 99)
    Path(os.environ["PBSH_CHILD_READY"]).write_text(f"{host}\n")
    wait_until(lambda: None, bool, timeout=300, describe="SIGKILL from the parent test")
