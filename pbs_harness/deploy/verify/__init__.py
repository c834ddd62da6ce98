"""`pbs-harness verify`: testinfra checks of deployed hosts (daemons, ports, configs, hooks)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pbs_harness.common import project
from pbs_harness.remote.inventory import Inventory

CHECKS = Path(__file__).with_name("test_deployed_hosts.py")


def run(inv: Inventory, junit_name: str = "verify-junit.xml") -> int:
    """Run the checks against every inventory host; returns pytest's exit code."""
    reports = project.root() / "reports"
    reports.mkdir(exist_ok=True)
    argv = [
        sys.executable, "-m", "pytest", str(CHECKS),
        f"--hosts=ansible://all?ansible_inventory={inv.path}",
        "-p", "no:cacheprovider", "-q", "--no-header", "-o", "addopts=",
        "--junitxml", str(reports / junit_name),
    ]  # fmt: skip
    # testinfra calls `ansible-inventory` by name: put this interpreter's scripts first on PATH.
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env["ANSIBLE_CONFIG"] = str(project.root() / "ansible.cfg")
    return subprocess.call(argv, cwd=project.root(), env=env)
