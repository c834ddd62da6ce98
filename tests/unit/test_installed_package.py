"""An installed package still needs the checkout (#23 item 13), and says so.

The package as pip installs it: a copy of pbs_harness/ (the code and its package data) on PYTHONPATH,
run from a folder with no checkout and no PBS_HARNESS_ROOT. Real entry point, nothing faked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pbs_harness.common import errors
from tests.unit.badinput import ROOT


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    site = tmp_path / "site-packages"
    shutil.copytree(ROOT / "pbs_harness", site / "pbs_harness", ignore=shutil.ignore_patterns("__pycache__"))
    return site


def run(site: Path, cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PBS_HARNESS_ROOT", "PBS_HARNESS_INVENTORY")}
    return subprocess.run(
        [sys.executable, "-m", "pbs_harness", *argv],
        cwd=cwd, env={**clean, "PYTHONPATH": str(site), **env}, capture_output=True, text=True, check=False,
        timeout=120,
    )  # fmt: skip


def test_without_the_checkout_it_says_what_is_missing(installed: Path, tmp_path: Path) -> None:
    proc = run(installed, tmp_path, "deploy")
    assert proc.returncode == errors.EXIT_PRECONDITION, proc.stdout + proc.stderr
    assert "the installed package holds the Python code only; the playbooks, roles, inventories" in proc.stderr
    assert "fix: run pbs-harness from the checkout (`make venv` there), or set PBS_HARNESS_ROOT" in proc.stderr
    assert "Traceback" not in proc.stderr
    version = run(installed, tmp_path, "--version")
    assert version.returncode == 0
    assert "no checkout found (playbooks, roles and suites live in the git checkout; see the README)" in version.stdout


def test_pbs_harness_root_points_it_at_the_checkout(installed: Path, tmp_path: Path) -> None:
    proc = run(installed, tmp_path, "--version", PBS_HARNESS_ROOT=str(ROOT))
    assert proc.returncode == 0, proc.stderr
    assert f"checkout {ROOT})" in proc.stdout
    deploy = run(installed, tmp_path, "deploy", "-i", "/nonexistent/inventory", PBS_HARNESS_ROOT=str(ROOT))
    assert "inventory /nonexistent/inventory does not exist" in deploy.stderr  # got past finding the project
