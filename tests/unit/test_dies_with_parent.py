"""A child the harness starts in a session of its own (pytest, ansible-playbook) ends when the harness is
killed outright (SIGKILL): real processes, no fakes. Before, a `pbs-harness test` killed with SIGKILL left
its pytest session running against the cluster, beside the next session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PARENT = textwrap.dedent(
    """
    import signal, subprocess, sys, time
    from pbs_harness.common import shell
    signum = int(sys.argv[1])
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        start_new_session=True, preexec_fn=shell.dies_with_this_process(signum),
    )
    print(child.pid, flush=True)
    time.sleep(60)
    """
)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in "ZX"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_child_ends_when_its_starter_is_sigkilled(signum: int) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(int(signum))], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert alive(child), "the child did not start"
        parent.kill()
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child), f"child {child} still runs after its starter was SIGKILLed"
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)
