"""Fixtures of the reliable-startup suite shared by its two parts (docs/suites/reliable_startup.md).

Each part is a folder with its own conftest.py giving `roles` and `kit` for its hosts:
- padding_pruning/ (needs_moms(6)): `roles` includes the multi-vnode host; the node order is pinned
  around each test, so the padded job lands on the primary, then sisters 1..4;
- timers_and_faults/ (needs_moms(5)): `roles` has no multi-vnode host; `chunk_hosts` predicts the
  padded job's hosts from the server's vnode order, and `kit.chunk_hosts` holds them.
The fixtures here ask for `roles` and get the requesting test's part's.
"""

from __future__ import annotations

import pytest

from ptl_tests.reliable_startup_helpers import set_short_alarms


@pytest.fixture
def short_alarms(pbs, cluster, roles):
    return set_short_alarms(pbs, cluster, roles.primary)
