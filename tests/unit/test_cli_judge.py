"""UP_ARGS judged before anything is installed (issue #34): ./acceptance runs pbs-harness's own `up` parser
(pbs_harness/cli/judge.py) on the whole `up` line it will run, with this machine's Python, before apt-get,
make venv or any host."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pbs_harness.common import errors

ROOT = Path(__file__).resolve().parents[2]
# ./acceptance reads PYTEST_ARGS and UP_ARGS from its environment too: the caller's own (e.g. `make test` run
# with PYTEST_ARGS=..., which make exports) must not reach the lines judged here.
ENVIRON = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ARGS", "UP_ARGS")}


def test_the_up_parser_needs_the_standard_library_only() -> None:
    """With the third-party modules blocked (import of each raises), the judge still parses: the machine's
    own Python runs it before the venv exists. A module-level third-party import in cli/ breaks this."""
    blocked = ("yaml", "pytest", "_pytest", "pluggy", "jinja2", "ansible", "boto3", "botocore", "paramiko")
    code = (
        "import sys\n"
        f"for m in {blocked!r}: sys.modules[m] = None\n"
        "from pbs_harness.cli import judge\n"
        "sys.exit(judge.main(['up', '--clusters', 'auto', '--flavour', 'namespace'])\n"
        # ./acceptance's line for system hosts (its default): --image used to import the cloud's lifecycle
        "    or judge.main(['up', '--clusters', 'auto', '--idempotence', '--flavour', 'system', '--image', 'debian-12',"
        " '--openpbs', 'x.zip', '--subnet', 'auto']))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr


@pytest.fixture
def tripwires(tmp_path: Path) -> dict[str, str]:
    """FAKE apt-get, make, debootstrap, pip and systemd-nspawn first on PATH: each records that it ran, so
    an empty record proves ./acceptance refused the value before any install or host work."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("apt-get", "make", "debootstrap", "pip", "systemd-nspawn"):
        fake = bin_dir / name
        fake.write_text(f"#!/bin/sh\necho {name} >> {tmp_path / 'started'}\nexit 99\n")
        fake.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


@pytest.mark.parametrize(
    ("up_args", "says"),
    [
        ("--no-such-opt", "unrecognized arguments: --no-such-opt\n  fix: see `pbs-harness up --help`"),
        ("--subnet 999.1.1.0/24", "argument --subnet: '999.1.1.0/24' is not an IPv4 network"),
        ("--clusters 3", "--clusters is given twice (--clusters too); the last one would silently win\n  fix: give"),
        ("--state-dir=", "argument --state-dir: an empty path names no state directory"),
    ],
)
@pytest.mark.parametrize("dry", [False, True])
def test_a_bad_up_args_is_refused_before_anything_is_installed(
    up_args: str, says: str, dry: bool, tripwires: dict[str, str], tmp_path: Path
) -> None:
    env = {**ENVIRON, **tripwires, "PYTHON": sys.executable}
    run = subprocess.run(
        [str(ROOT / "acceptance"), *(["--dry-run"] if dry else []), "FLAVOUR=namespace", f"UP_ARGS={up_args}"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == errors.EXIT_USAGE, run.stdout + run.stderr
    assert f"acceptance: error: UP_ARGS={up_args} is refused by pbs-harness up: " in run.stderr
    assert says in run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert run.stdout == ""  # not even the --dry-run lines
    assert not (tmp_path / "started").exists(), (tmp_path / "started").read_text()


def test_a_good_up_args_reaches_the_up_line(tripwires: dict[str, str]) -> None:
    env = {**ENVIRON, **tripwires, "PYTHON": sys.executable}
    run = subprocess.run(
        [str(ROOT / "acceptance"), "--dry-run", "FLAVOUR=namespace", "UP_ARGS=--subnet 10.77.0.0/24"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert ".venv/bin/pbs-harness up --clusters auto --idempotence --flavour namespace --subnet 10.77.0.0/24" in (
        run.stdout
    )
