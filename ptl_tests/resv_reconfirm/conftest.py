"""Fixtures of the reservation-reconfirmation suite: the `rv` kit and a short reserve_retry_time."""

from __future__ import annotations

import pytest

from ptl_tests.resv_reconfirm_helpers import RETRY, Rv, Steer


@pytest.fixture
def rv(pbs, cluster, topology, nemesis):
    kit = Rv(pbs, cluster, topology, nemesis, Steer(pbs))
    yield kit
    kit.restore()


@pytest.fixture
def retry(pbs) -> int:
    """reserve_retry_time = RETRY for the test (the baseline restore unsets it)."""
    res = pbs.server.set({"reserve_retry_time": RETRY})
    assert res.ok, res.stderr
    return RETRY
