"""An output path on a read-only mount (issue #34's known gap): `report --out`, `report --compare/--matrix
--out` and `up --write-inventory` on a real read-only bind mount are refused with the README's code 3, naming
the read-only file system and the fix, before the results are read and before anything is made.

The mount is real (`mount --bind D D; mount -o remount,ro,bind D D`), made in a private mount namespace of the
child process that runs the CLI (`unshare --mount --propagation private`), so it is gone with the child
whatever happens, and this machine's mounts are never changed. In the child the steps a refused command must
never reach raise (tests/unit/read_only_child.py: FAKE stand-ins that fail, as the in-process bad-input
tests' tripwires do). Skipped, saying why, where this machine cannot make the mount (not root, no unshare,
mounts not permitted in this container)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pbs_harness.common import errors
from tests.unit import test_report_compare_bad_input
from tests.unit.badinput import snapshot

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("read_only_child.py")
MOUNT = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" && shift && exec "$@"'


def run_on_read_only(folder: Path, argv: list[str]) -> tuple[int, str]:
    """`pbs-harness ARGV` in a child that sees `folder` mounted read-only; its exit code and output."""
    cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", MOUNT, "sh", str(folder)]
    cmd += [sys.executable, str(CHILD), *argv]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=False)
    out = done.stdout + done.stderr
    sys.stdout.write(f"$ pbs-harness {' '.join(argv)}   # {folder} read-only\n{out}[exit {done.returncode}]\n")
    return done.returncode, out


@pytest.fixture
def read_only(tmp_path: Path) -> Path:
    """A folder holding one kept file and an empty folder, that the child mounts read-only; skips where no mount
    can be made."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a read-only mount needs root and unshare(1): not available here, so not tested here")
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "kept.txt").write_text("kept\n")
    (folder / "empty").mkdir()
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", MOUNT + " 2>&1", "sh", str(folder),
         "sh", "-c", "! touch \"$0/probe\" 2>/dev/null", str(folder)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(f"cannot make a read-only bind mount here (so not tested here): {probe.stdout.strip()}")
    return folder


def _refused(rc: int, out: str, *needles: str) -> None:
    assert rc == errors.EXIT_PRECONDITION, out
    for needle in needles:
        assert needle in out, out
    assert "Traceback" not in out, out
    assert "[Errno" not in out, out


def test_report_out_on_a_read_only_mount(read_only: Path, tmp_root: Path) -> None:
    kept = snapshot(tmp_root / "reports")
    rc, out = run_on_read_only(read_only, ["report", "--out", str(read_only)])
    _refused(rc, out, f"report folder {read_only} is not writable (it is on a read-only file system)",
             "fix: give --out a folder this user can write")  # fmt: skip
    rc, out = run_on_read_only(read_only, ["report", "--out", str(read_only / "new")])
    _refused(rc, out, f"cannot create report folder {read_only / 'new'}: Read-only file system",
             "fix: give --out a folder this user can write")  # fmt: skip
    assert snapshot(tmp_root / "reports") == kept
    assert sorted(p.name for p in read_only.rglob("*")) == ["empty", "kept.txt"]


# The two builds' conformance.json of the --compare tests (a fixture of theirs, used here too).
good = test_report_compare_bad_input.good


@pytest.mark.parametrize("verb", ["--compare", "--matrix"])
def test_compare_out_on_a_read_only_mount(verb: str, read_only: Path, good: tuple[Path, Path], tmp_root: Path) -> None:
    empty, new = read_only / "empty", read_only / "new"
    for out_dir, says in [
        (empty, f"output folder {empty} is not writable (it is on a read-only file system)"),
        (new, f"output folder {new} cannot be created ({read_only} is on a read-only file system)"),
    ]:
        rc, out = run_on_read_only(read_only, ["report", verb, *map(str, good), "--out", str(out_dir)])
        _refused(rc, out, says, "fix: give --out a new or empty folder this user can write")
    assert sorted(p.name for p in read_only.rglob("*")) == ["empty", "kept.txt"]


@pytest.mark.parametrize("verb", [["up"], ["cluster", "up"]], ids=" ".join)
def test_write_inventory_on_a_read_only_mount(verb: list[str], read_only: Path, isolated: Path) -> None:
    """Checked first: the child's cluster bring-up and network probe are tripwires, and no state dir is made."""
    target = read_only / "inventory"
    rc, out = run_on_read_only(read_only, [*verb, "--subnet", "auto", "--write-inventory", str(target)])
    _refused(rc, out, f"--write-inventory {target}: cannot be created: {read_only} is on a read-only file system",
             "fix: give a new directory path")  # fmt: skip
    assert not (isolated / "state").exists()
    assert sorted(p.name for p in read_only.rglob("*")) == ["empty", "kept.txt"]
