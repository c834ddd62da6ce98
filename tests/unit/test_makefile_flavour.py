"""`make acceptance`'s host arguments (Makefile, dry run: `make -n`, nothing is run): system hosts by
default, with OPENPBS, else the source CI builds (OPENPBS_SOURCE here); namespace hosts get neither an
image nor packages."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def up_line(*make_args: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("FLAVOUR", "OPENPBS", "IMAGE", "OPENPBS_SOURCE")}
    run = subprocess.run(
        ["make", "-n", "acceptance", *make_args],
        cwd=ROOT, capture_output=True, text=True, check=False, env={**clean, **env},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = [ln for ln in run.stdout.splitlines() if "pbs-harness up " in ln]
    assert len(lines) == 1, f"expected one `pbs-harness up` line in make -n acceptance, found: {run.stdout}"
    return lines[0]


def test_system_hosts_by_default_with_the_source_ci_builds() -> None:
    line = up_line(OPENPBS_SOURCE="/src/openpbs.tar.gz")
    assert "--flavour system --image debian-12 --openpbs /src/openpbs.tar.gz" in line


def test_openpbs_and_image_given_win() -> None:
    line = up_line("OPENPBS=/x/pkgs", "IMAGE=debian-11", OPENPBS_SOURCE="/src/openpbs.tar.gz")
    assert "--flavour system --image debian-11 --openpbs /x/pkgs" in line


def test_namespace_hosts_get_no_image_and_no_packages() -> None:
    line = up_line("FLAVOUR=namespace", OPENPBS_SOURCE="/src/openpbs.tar.gz")
    assert "--flavour namespace" in line
    assert "--image" not in line
    assert "--openpbs" not in line


def test_the_hosts_needs_are_installed_first() -> None:
    run = subprocess.run(["make", "-n", "acceptance"], cwd=ROOT, capture_output=True, text=True, check=False)
    lines = run.stdout.splitlines()
    install = [i for i, ln in enumerate(lines) if "scripts/ci/install-system-packages.sh" in ln]
    up = [i for i, ln in enumerate(lines) if "pbs-harness up " in ln]
    assert install, run.stdout
    assert up, run.stdout
    assert install[0] < up[0], run.stdout
