"""Fixtures of the admin-suspend suite: each test's `kit` (a SuspendKit) and, at each module's end,
the purge of what failed tests left (the jobs and directories in admin_suspend_helpers.LEFT_BEHIND
and LEFT_DIRS, shared by all the suite's modules)."""

from __future__ import annotations

import pytest

from pbs_harness.suite.jobfiles import JobFiles
from pbs_harness.suite.outcome import body_failed
from ptl_tests.admin_suspend_helpers import LEFT_BEHIND, LEFT_DIRS, SuspendKit, purge_left_behind


@pytest.fixture(scope="module", autouse=True)
def _purge_at_module_end(pbs):
    yield
    purge_left_behind(pbs)
    JobFiles(pbs.cluster).remove(*LEFT_DIRS)  # from every host (the faults of the tests are healed)
    LEFT_DIRS.clear()


@pytest.fixture
def kit(request, pbs, cluster, topology, nemesis):
    k = SuspendKit(pbs, cluster, topology.users.owner, nemesis)
    yield k
    # A leak found after the body passed fails the call too, but its jobs are gone: purge them now,
    # before the restore's pbs_server restart (a job admin-suspended once and left in the history
    # brings its node back in maintenance for good: docs/suites/admin_suspend.md).
    if body_failed(request.node):
        LEFT_BEHIND.extend(k.jobs)  # keep the state for the evidence folder; purged later
        LEFT_DIRS.append(k.dir)
    else:
        k.cleanup()
