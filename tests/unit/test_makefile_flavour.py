"""The README's main command, ./acceptance (and `make acceptance`, which runs it): its host arguments
(`./acceptance --dry-run` judges the values and prints the commands instead of running them), and bad
values refused before anything is installed or built (issue #34: `make acceptance FLAVOUR=bogus` used to
run apt-get first). System hosts by default, with OPENPBS, else the source CI builds (OPENPBS_SOURCE here);
namespace hosts get neither an image nor packages.

The refusal tests put FAKE apt-get, make, debootstrap and python3 first on PATH: each only records that
it was started, and the test fails if any was."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from pbs_harness.common import errors
from pbs_harness.localcluster import fleet, spec

ROOT = Path(__file__).resolve().parents[2]
CLEAN = {
    k: v
    for k, v in os.environ.items()
    if k not in ("FLAVOUR", "OPENPBS", "IMAGE", "OPENPBS_SOURCE", "CLUSTERS", "PYTEST_ARGS", "UP_ARGS")
    # Under `make test` these say "a make inside a make": `make -n` would then print its
    # "make[1]: Entering directory" lines (seen in a fresh clone's make test, 29 Nov).
    and k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")
}


def acceptance(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / "acceptance"), *args], cwd=ROOT, capture_output=True, text=True, check=False,
        env={**CLEAN, **(env or {})}, timeout=60,
    )  # fmt: skip


def up_line(*args: str, **env: str) -> str:
    run = acceptance("--dry-run", *args, env=env)
    assert run.returncode == 0, run.stderr
    lines = [ln for ln in run.stdout.splitlines() if "pbs-harness up " in ln]
    assert len(lines) == 1, f"expected one `pbs-harness up` line in ./acceptance --dry-run, found: {run.stdout}"
    return lines[0]


def source_archive(path: Path, *names: str) -> Path:
    """A source archive holding `names` (empty files) under one top folder: an OpenPBS one when they are
    configure.ac and ci/etc/build-pbs-packages.sh, which is all ./acceptance's judge looks at."""
    with tarfile.open(path, "w:gz") as tar:
        for name in names:
            info = tarfile.TarInfo(f"openpbs-master/{name}")
            tar.addfile(info, io.BytesIO(b""))
    return path


def package_folder(path: Path, *, empty: bool = False) -> Path:
    """A folder of openpbs-{server,execution,client} .debs: each an ar archive's first bytes, or empty."""
    path.mkdir()
    for kind in ("server", "execution", "client"):
        (path / f"openpbs-{kind}_23.06.06-1_amd64.deb").write_bytes(b"" if empty else b"!<arch>\ndebian-binary")
    return path


@pytest.fixture
def source(tmp_path: Path) -> str:
    return str(source_archive(tmp_path / "openpbs.tar.gz", "configure.ac", "ci/etc/build-pbs-packages.sh"))


def test_system_hosts_by_default_with_the_source_ci_builds(source: str) -> None:
    line = up_line(OPENPBS_SOURCE=source)
    assert f"--flavour system --image debian-12 --openpbs {source}" in line


def test_openpbs_and_image_given_win(source: str, tmp_path: Path) -> None:
    package_folder(tmp_path / "pkgs")
    line = up_line(f"OPENPBS={tmp_path / 'pkgs'}", "IMAGE=debian-11", OPENPBS_SOURCE=source)
    assert f"--flavour system --image debian-11 --openpbs {tmp_path / 'pkgs'}" in line


def test_namespace_hosts_get_no_image_and_no_packages(source: str) -> None:
    line = up_line("FLAVOUR=namespace", OPENPBS_SOURCE=source)
    assert "--flavour namespace" in line
    assert "--image" not in line
    assert "--openpbs" not in line


def test_the_hosts_needs_are_installed_first(source: str) -> None:
    lines = acceptance("--dry-run", env={"OPENPBS_SOURCE": source}).stdout.splitlines()
    install = [i for i, ln in enumerate(lines) if "scripts/ci/install-system-packages.sh" in ln]
    venv = [i for i, ln in enumerate(lines) if "make --no-print-directory venv" in ln]
    up = [i for i, ln in enumerate(lines) if "pbs-harness up " in ln]
    assert install, lines
    assert venv, lines
    assert up, lines
    assert install[0] < venv[0] < up[0], lines


def test_make_acceptance_runs_the_script_and_nothing_before_it() -> None:
    """Every value reaches ./acceptance in its environment, unchanged (tests/unit/test_acceptance_quoting.py
    runs it): the recipe's line holds none of them, and no venv work comes before the values are judged."""
    run = subprocess.run(
        ["make", "-n", "acceptance", "FLAVOUR=namespace", "CLUSTERS=2", "PYTEST_ARGS=-m smoke"],
        cwd=ROOT, capture_output=True, text=True, check=False, env=CLEAN,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["./acceptance"]


@pytest.fixture
def tripwires(tmp_path: Path) -> dict[str, str]:
    """FAKE apt-get, make, debootstrap, python3 and pip first on PATH: each records that it ran."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("apt-get", "make", "debootstrap", "python3", "pip", "systemd-nspawn"):
        fake = bin_dir / name
        fake.write_text(f"#!/bin/sh\necho {name} >> {tmp_path / 'started'}\nexit 99\n")
        fake.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["FLAVOUR=bogus"], 2, "FLAVOUR=bogus is not a kind of local host\n  fix: FLAVOUR=system (the default) or"),
        (["IMAGE=bogus"], 2, "IMAGE=bogus is not a system hosts' image\n  fix: IMAGE=debian-12 (the default) or"),
        (["CLUSTERS=0"], 2, "CLUSTERS=0 is out of range\n  fix: CLUSTERS=auto, or 1 to 12"),
        (["CLUSTERS=lots"], 2, "CLUSTERS=lots is not a number of clusters\n  fix: CLUSTERS=auto, or 1 to 12"),
        (["OPENPBS=/nonexistent"], 3, "OPENPBS=/nonexistent does not exist\n  fix: name an OpenPBS release zip"),
        (["FLAVOUR=namespace", "OPENPBS=/x"], 2, "OPENPBS is for system hosts"),
        (["FLAVOR=system"], 2, "unknown setting FLAVOR\n  fix: ./acceptance [NAME=VALUE ...] with NAME one of"),
        (["smoke"], 2, "'smoke' is not NAME=VALUE"),
    ],
)
def test_bad_values_are_refused_before_anything_is_installed(
    args: list[str], code: int, says: str, tripwires: dict[str, str], tmp_path: Path
) -> None:
    run = acceptance(*args, env={**tripwires, "OPENPBS_SOURCE": str(tmp_path)})
    assert run.returncode == code, run.stdout + run.stderr
    assert f"acceptance: error: {says}" in run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert not (tmp_path / "started").exists(), (tmp_path / "started").read_text()


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("folder", "is a folder with neither an OpenPBS source tree (configure.ac) nor OpenPBS packages"),
        ("/etc", "--openpbs /etc is a folder with neither an OpenPBS source tree (configure.ac) nor OpenPBS"),
        ("file", "is none of the accepted forms"),
        ("empty-debs", "are not packages (empty, or not a .deb/.rpm file inside)"),
        ("other-source", "is a source archive without ci/etc/build-pbs-packages.sh"),
    ],
)
def test_an_openpbs_that_is_not_openpbs_is_refused_before_anything_is_installed(
    given: str, says: str, tripwires: dict[str, str], tmp_path: Path
) -> None:
    """OPENPBS=/etc, a README, a folder of empty .debs or another project's source archive used to go through
    apt-get and make venv before `pbs-harness up` refused it. Now pbs-harness's judge runs first, in the Python
    named by PYTHON (the real one here; apt-get, make, debootstrap, pip are the FAKE tripwires)."""
    path = {
        "folder": lambda: tmp_path,
        "/etc": lambda: Path("/etc"),  # the issue's own example (#34)
        "file": lambda: ROOT / "README.md",
        "empty-debs": lambda: package_folder(tmp_path / "debs", empty=True),
        "other-source": lambda: source_archive(tmp_path / "other.tar.gz", "configure.ac"),
    }[given]()
    run = acceptance(f"OPENPBS={path}", env={**tripwires, "PYTHON": sys.executable})
    assert run.returncode == errors.EXIT_PRECONDITION, run.stdout + run.stderr
    assert f"acceptance: error: OPENPBS={path} is not OpenPBS: --openpbs " in run.stderr
    assert says in run.stderr
    assert "\n  fix: name " in run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert not (tmp_path / "started").exists(), (tmp_path / "started").read_text()


def test_no_openpbs_anywhere_is_refused_before_anything_is_installed(
    tripwires: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without OPENPBS the default is an archive beside a development checkout: a fresh clone has none. It
    used to install the system packages first and then say "--openpbs names none". The checkout is copied
    where no folder above holds that archive."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, capture_output=True)
    for name in ("acceptance", "scripts/ci/install-openpbs.sh"):  # this checkout's, maybe not committed yet
        (clone / name).write_bytes((ROOT / name).read_bytes())
    run = subprocess.run(
        [str(clone / "acceptance")], cwd=clone, capture_output=True, text=True, check=False,
        env={**CLEAN, **tripwires}, timeout=60,
    )  # fmt: skip
    assert run.returncode == errors.EXIT_PRECONDITION, run.stderr
    assert "system hosts install OpenPBS from packages, and OPENPBS names none" in run.stderr
    assert "fix: give OPENPBS=PATH" in run.stderr
    assert not (tmp_path / "started").exists()


def test_the_scripts_lists_are_the_harnesss() -> None:
    text = (ROOT / "acceptance").read_text()
    assert f'FLAVOURS="{" ".join(sorted(spec.FLAVOURS, key=lambda f: f != "system"))}"' in text
    assert f'IMAGES="{" ".join(spec.IMAGES)}"' in text
    assert f"MAX_CLUSTERS={fleet.MAX_CLUSTERS}" in text
