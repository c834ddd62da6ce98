"""SIGTERM outside pytest (#23 item 7): a verb stopped by SIGTERM (a CI job cancelled, `timeout`, `kill`)
exits 130 with a message, as Ctrl-C does, and leaves none of the programs it started running.

Real: the installed entry point in its own process, ansible-inventory, and an inventory script that
stands for a slow inventory source (it records its pid and sleeps); the signal is sent once that
script runs, so the verb is inside its wait on a child program. Before this, the verbs died with
143 and no word, and the script's sleep went on alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pbs_harness.common import errors
from pbs_harness.common.waits import wait_until
from tests.unit.badinput import ROOT

SLOW_INVENTORY = """#!/bin/sh
echo $$ > "{pidfile}"
exec sleep 60
"""


def alive(pid: int) -> bool:
    """The process runs (not gone, not a zombie waiting to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


@pytest.mark.parametrize("verb", [["deploy"], ["verify"], ["test", "-m", "smoke"]], ids=lambda v: v[0])
def test_sigterm_during_a_verb_exits_130_with_a_message(verb: list[str], tmp_path: Path) -> None:
    pidfile = tmp_path / "inventory-script.pid"
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    script = inventory / "slow.sh"
    script.write_text(SLOW_INVENTORY.format(pidfile=pidfile))
    script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PBS_HARNESS_ROOT", "PBS_HARNESS_INVENTORY")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pbs_harness", verb[0], "-i", str(inventory), *verb[1:]],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until(
            lambda: pidfile.exists() and pidfile.read_text().strip(),
            bool,
            timeout=60,
            describe="ansible-inventory to run the inventory script",
        )
        script_pid = int(pidfile.read_text())
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    assert proc.returncode == errors.EXIT_INTERRUPTED, out + err
    assert f"pbs-harness: interrupted by SIGTERM: stopped before the {verb[0]} finished (exit 130)" in err
    assert "Traceback" not in out + err
    assert not alive(script_pid), "the inventory script ansible-inventory started is still running"
