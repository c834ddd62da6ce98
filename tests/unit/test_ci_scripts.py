"""The scripts the CI jobs call (scripts/ci/), run for real where this machine allows it.

- check-python.sh refuses a Python older than 3.11 with the fix (a FAKE interpreter that says it is
  3.10: a two-line shell script) and passes this one.
- install-openpbs.sh on a machine with no OpenPBS: run in a mount namespace of its own whose /opt is
  an empty tmpfs (root and unshare needed; this machine's /opt/pbs is never touched), from a copy of
  the checkout placed below a folder holding shared/openpbs/openpbs-master-cd7ab5e.tar.gz, as on the
  development machine. The build itself is a STUB of scripts/install-openpbs-from-source.sh (it
  records what it was given and installs a qstat that prints a version): the real build is what
  `.ci/run` does on a bare machine (minutes), not a unit test.
- `make test` collects the acceptance suites and never runs them (#23 item 12): `make -n test`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_PYTHON_310 = """#!/bin/sh
# FAKE: an interpreter that is Python 3.10 (prints its version; the 3.11 check exits 1)
case "$2" in *print*) echo 3.10 ;; *) exit 1 ;; esac
"""

STUB_BUILD = """#!/bin/sh
# STUB of scripts/install-openpbs-from-source.sh: records its source, installs a qstat that answers.
echo "stub build from $1"
mkdir -p /opt/pbs/bin
printf '#!/bin/sh\\necho pbs_version = stub\\n' > /opt/pbs/bin/qstat
chmod +x /opt/pbs/bin/qstat
"""


def test_check_python_refuses_310_with_the_fix(tmp_path: Path) -> None:
    fake = tmp_path / "python3.10"
    fake.write_text(FAKE_PYTHON_310)
    fake.chmod(0o755)
    run = subprocess.run(
        [str(ROOT / "scripts/ci/check-python.sh"), str(fake)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 3
    assert f"{fake} is Python 3.10; pbs-harness needs 3.11 or newer (ansible-core 2.19)" in run.stderr
    assert "fix: install Python 3.11+ and name it: make venv PYTHON=python3.11" in run.stderr
    missing = subprocess.run(
        [str(ROOT / "scripts/ci/check-python.sh"), "no-such-python"], capture_output=True, text=True, check=False
    )
    assert missing.returncode == 3
    assert "no-such-python is not installed" in missing.stderr


def test_check_python_passes_this_python() -> None:
    import sys

    run = subprocess.run(
        [str(ROOT / "scripts/ci/check-python.sh"), sys.executable], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    assert "venv works" in run.stdout


def test_make_test_collects_the_acceptance_suites_and_never_runs_them() -> None:
    """After `make acceptance` the clusters stay up; `make test` used to run every suite on them again,
    serially (about 50 minutes). Now it only collects them."""
    dry = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert dry.returncode == 0, dry.stderr
    suites = [line for line in dry.stdout.splitlines() if "ptl_tests" in line]
    assert suites, dry.stdout
    assert all("--collect-only" in line for line in suites), suites


needs_namespaces = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare (a mount namespace)"
)


@pytest.fixture
def checkout_copy(tmp_path: Path) -> Path:
    """scripts/ci/install-openpbs.sh in a checkout two folders below `tmp_path` (a worktree's depth),
    with the STUB build beside it."""
    checkout = tmp_path / "wt" / "checkout"
    (checkout / "scripts" / "ci").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts/ci/install-openpbs.sh", checkout / "scripts/ci/install-openpbs.sh")
    stub = checkout / "scripts" / "install-openpbs-from-source.sh"
    stub.write_text(STUB_BUILD)
    stub.chmod(0o755)
    return checkout


def without_openpbs(checkout: Path, *, qstat: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    """install-openpbs.sh where /opt is an empty tmpfs (a qstat there first, when asked)."""
    prepare = "mkdir -p /opt/pbs/bin && printf '#!/bin/sh\\necho pbs_version = there\\n' > /opt/pbs/bin/qstat && "
    prepare += "chmod +x /opt/pbs/bin/qstat && "
    inner = f"mount -t tmpfs none /opt && {prepare if qstat else ''}exec {checkout}/scripts/ci/install-openpbs.sh"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OPENPBS_")}
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner],
        capture_output=True, text=True, check=False, env={**clean, **env}, timeout=60,
    )  # fmt: skip


@needs_namespaces
def test_no_openpbs_builds_the_archive_found_above_the_checkout(checkout_copy: Path, tmp_path: Path) -> None:
    archive = tmp_path / "shared" / "openpbs" / "openpbs-master-cd7ab5e.tar.gz"
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    run = without_openpbs(checkout_copy)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"from {archive} (found above the checkout)" in run.stdout
    assert f"stub build from {archive}" in run.stdout
    assert "pbs_version = stub in /opt/pbs" in run.stdout


def test_the_source_for_hosts_that_install_openpbs_themselves(checkout_copy: Path, tmp_path: Path) -> None:
    """FLAVOUR=system: .ci/run passes the source the openpbs stage would build as OPENPBS; nothing installed."""
    archive = tmp_path / "shared" / "openpbs" / "openpbs-master-cd7ab5e.tar.gz"
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    script = checkout_copy / "scripts" / "ci" / "install-openpbs.sh"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OPENPBS_")}
    found = subprocess.run([str(script), "--source"], capture_output=True, text=True, check=False, env=clean)
    assert (found.returncode, found.stdout) == (0, f"{archive}\n")
    named = subprocess.run(
        [str(script), "--source"], capture_output=True, text=True, check=False, env={**clean, "OPENPBS_SOURCE": "/x"}
    )
    assert named.stdout == "/x\n"
    assert "stub build" not in found.stdout + named.stdout


@needs_namespaces
def test_openpbs_source_names_another_source(checkout_copy: Path, tmp_path: Path) -> None:
    run = without_openpbs(checkout_copy, OPENPBS_SOURCE=str(tmp_path / "openpbs-src"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"stub build from {tmp_path / 'openpbs-src'}" in run.stdout


@needs_namespaces
def test_installed_openpbs_is_left_alone(checkout_copy: Path) -> None:
    run = without_openpbs(checkout_copy, qstat=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "OpenPBS is installed already: pbs_version = there in /opt/pbs" in run.stdout
    assert "stub build" not in run.stdout


@needs_namespaces
def test_no_openpbs_and_no_source_says_what_to_set(checkout_copy: Path) -> None:
    run = without_openpbs(checkout_copy)
    assert run.returncode == 3
    assert "OpenPBS is not installed here (/opt/pbs/bin/qstat), and no source for it is named" in run.stderr
    assert "fix: set OPENPBS_ZIP_URL and OPENPBS_ZIP_SHA256" in run.stderr


@needs_namespaces
def test_a_download_without_its_sha256_is_refused(checkout_copy: Path, tmp_path: Path) -> None:
    run = without_openpbs(checkout_copy, OPENPBS_ZIP_URL=f"file://{tmp_path}/openpbs.zip")
    assert run.returncode == 3
    assert "is given without its sha256" in run.stderr


STUB_STAGE = """#!/bin/sh
# STUB of a CI stage script: records that it ran, with its arguments.
echo "$(basename "$0") $*" >> "$CI_STUB_LOG"
"""

STUB_MAKE = """#!/bin/sh
# STUB of make: records its target.
echo "make $*" >> "$CI_STUB_LOG"
"""


def run_ci_with_stub_stages(tmp_path: Path, **env: str) -> list[str]:
    """.ci/run itself, its stage scripts, make and the venv's Python replaced by STUBS that record a line each:
    proves which stages .ci/run runs, in which order (not what they do)."""
    tree = tmp_path / "checkout"
    (tree / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", tree / ".ci" / "run")
    stubs = [
        "install-system-packages.sh",
        "check-python.sh",
        "cloud-moto.sh",
        "bare-debian-check.sh",
        "install-openpbs.sh",
        "acceptance.sh",
    ]
    for name in stubs:
        path = tree / "scripts" / "ci" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(STUB_STAGE)
        path.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("make", STUB_MAKE),):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    venv_python = tree / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.write_text(STUB_STAGE)
    venv_python.chmod(0o755)
    log = tmp_path / "stages.log"
    base = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CI_STUB_LOG": str(log), "HOME": str(tmp_path)}
    run = subprocess.run(
        ["bash", str(tree / ".ci" / "run")], capture_output=True, text=True, check=False, env={**base, **env}
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return log.read_text().splitlines()


def test_ci_runs_make_test_once_in_the_bare_debian(tmp_path: Path) -> None:
    """make test runs once: in the bare Debian's fresh clone (it took ~20 minutes of CI's hour twice over),
    and this checkout gets only its venv, before the stages that use it."""
    stages = run_ci_with_stub_stages(tmp_path)
    assert [line for line in stages if line.startswith("make")] == ["make venv PYTHON=python3"]
    names = [line.split()[0] for line in stages]
    assert names.index("make") < names.index("cloud-moto.sh") < names.index("bare-debian-check.sh")
    assert names.index("bare-debian-check.sh") < names.index("acceptance.sh")


def test_ci_without_the_bare_debian_runs_make_test_here(tmp_path: Path) -> None:
    stages = run_ci_with_stub_stages(tmp_path, CI_BARE_DEBIAN="0")
    assert [line for line in stages if line.startswith("make")] == ["make test PYTHON=python3"]
    assert not any(line.startswith("bare-debian-check.sh") for line in stages)
