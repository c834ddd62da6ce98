"""Run by test_harness.py in a child pytest: partitions a host, signals readiness, then waits
(bounded) until the parent interrupts it with SIGINT."""

import os
from pathlib import Path

import pytest

from pbs_harness.common.waits import wait_until

pytestmark = pytest.mark.acceptance


def test_partition_then_wait_for_ctrl_c(nemesis) -> None:
    nemesis.partition(os.environ["PBSH_CHILD_TARGET"])
    Path(os.environ["PBSH_CHILD_READY"]).write_text("partitioned\n")
    wait_until(lambda: None, bool, timeout=120, describe="SIGINT from the parent test")
