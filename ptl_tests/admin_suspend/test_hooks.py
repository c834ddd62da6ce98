"""Hooks: a queuejob hook sees maintenance_jobs and the maintenance state of a vnode."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from pbs_harness.pbs.evidence.logs import server_log
from ptl_tests.admin_suspend_helpers import FREE, MAINT, hook_log_vnode_maintenance, wait_nodes
from ptl_tests.hook_files import create_hook

pytestmark = [pytest.mark.acceptance, pytest.mark.admin_suspend]


@pytest.mark.spec("AS-4", "AS-1")
@pytest.mark.guards("AS-4", "AS-1")
def test_hooks_see_maintenance_jobs_and_the_maintenance_state(kit, pbs, cluster, topology) -> None:
    (host,) = topology.plain_hosts(1)
    hook = "as_probe"
    create_hook(pbs, hook, hook_log_vnode_maintenance(host))
    try:
        job = kit.running(select=f"1:ncpus=1:host={host}")

        def probe_line() -> str:
            since = datetime.now()
            name = kit.next_name  # the name the submit below gives its job
            kit.submit(select=f"1:ncpus=1:host={host}", args=["-h"])  # queuejob runs the hook
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
