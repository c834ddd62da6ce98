"""Fixtures of the node ramp-down suite. `roles` is module-scoped, so each test module resolves it once
(Roles.of only reads the session's topology). The custom resources are test_keep_select.py's own
module-scoped fixture: they are defined around that module's tests only."""

from __future__ import annotations

import pytest

from pbs_harness.suite.jobfiles import JobFiles
from ptl_tests.ramp_down.jobs import start_job
from ptl_tests.ramp_down_helpers import BlockedStageout, Roles, TaskEnvReport


@pytest.fixture(scope="module")
def roles(topology) -> Roles:
    """The suite's hosts and users by role (primary, plain, multi-vnode host, owner, other)."""
    return Roles.of(topology)


@pytest.fixture
def running_job(pbs, cluster, roles):
    """The standard job, running, with a sleep task on each of its three hosts."""
    return start_job(pbs, cluster, roles)


@pytest.fixture
def task_env_report(cluster, roles, nemesis):
    report = TaskEnvReport.create(JobFiles(cluster, nemesis), cluster.hosts[roles.primary], roles.owner)
    yield report
    report.cleanup()


@pytest.fixture
def blocked_stageout(cluster, roles):
    stageout = BlockedStageout.create(cluster.hosts[roles.primary], roles.owner, cluster.inventory.home(roles.owner))
    yield stageout
    stageout.cleanup()
