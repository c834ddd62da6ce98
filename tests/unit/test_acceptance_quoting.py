"""PYTEST_ARGS and UP_ARGS take shell-style quoting (issue #34): ./acceptance splits them with Python's shlex
(pbs_harness/cli/shell_words.py), and `make acceptance` hands them over in ./acceptance's environment, so a
value's text (its single quotes too) arrives unchanged. The CI scripts that run `pbs-harness test` themselves
(scripts/ci/vm-cluster.sh, cloud-acceptance.sh) split PYTEST_ARGS the same way (scripts/ci/pytest-args.sh).

The real runs here are of a copy of ./acceptance (and of the Makefile) in a folder of fakes: the install
script, `make`, `id` (root) and .venv/bin/pbs-harness record what reached them, and apt-get, debootstrap, pip
and systemd-nspawn record that they ran at all; the checkout's pbs_harness/ is linked in for the judges."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pbs_harness.cli import shell_words
from pbs_harness.common import errors

ROOT = Path(__file__).resolve().parents[2]
MAKE = shutil.which("make")
EXPRESSIONS = "-m 'ramp_down and not destructive' -k \"release and not cray\""
WORDS = ["-m", "ramp_down and not destructive", "-k", "release and not cray"]
# The caller's own settings must not reach ./acceptance, which reads every NAME from its environment too.
CLEAN = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ARGS", "UP_ARGS", "FLAVOUR", "OPENPBS", "CLUSTERS")}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A checkout of ./acceptance, the Makefile and pbs_harness/ with everything else faked (module docstring)."""
    top = tmp_path / "checkout"
    (top / "scripts" / "ci").mkdir(parents=True)
    (top / ".venv" / "bin").mkdir(parents=True)
    (top / "bin").mkdir()
    shutil.copy2(ROOT / "acceptance", top / "acceptance")
    shutil.copy2(ROOT / "Makefile", top / "Makefile")
    (top / "pbs_harness").symlink_to(ROOT / "pbs_harness")
    (top / ".venv" / "bin" / "python").symlink_to(sys.executable)
    record = tmp_path / "calls.jsonl"
    write_recorders(
        record,
        (
            (top / ".venv" / "bin" / "pbs-harness", "pbs-harness"),
            (top / "scripts" / "ci" / "install-system-packages.sh", "install"),
            (top / "bin" / "make", "make"),
        ),
    )
    for name in ("apt-get", "debootstrap", "pip", "systemd-nspawn"):
        (top / "bin" / name).write_text(f"#!/bin/sh\necho '[\"{name}\"]' >> {record}\nexit 99\n")
        (top / "bin" / name).chmod(0o755)
    (top / "bin" / "id").write_text("#!/bin/sh\necho 0\n")  # root, as the real run needs
    (top / "bin" / "id").chmod(0o755)
    return top


def write_recorders(record: Path, stubs: tuple[tuple[Path, str], ...]) -> None:
    """STUBS: each path an executable that appends [its name, *its arguments] to `record` as a JSON line."""
    recorder = (
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(record)!r}, 'a').write(json.dumps([NAME, *sys.argv[1:]]) + '\\n')\n"
    )
    for path, name in stubs:
        path.write_text(recorder.replace("NAME", repr(name)))
        path.chmod(0o755)


def _calls(top: Path) -> list[list[str]]:
    record = top.parent / "calls.jsonl"
    return [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []


def _old_python(top: Path) -> str:
    """A stand-in for a bare Debian's python3 that is too old for the judges."""
    old = top.parent / "old-python"
    old.write_text("#!/bin/sh\nexit 1\n")
    old.chmod(0o755)
    return str(old)


def _acceptance(top: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(top / "acceptance"), "FLAVOUR=namespace", *args], cwd=top, capture_output=True, text=True,
        check=False, timeout=120,
        env={**CLEAN, "PATH": f"{top / 'bin'}:{os.environ['PATH']}", "PYTHON": sys.executable, **env},
    )  # fmt: skip


def _make_acceptance(top: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert MAKE, "make is needed to run the Makefile"
    return subprocess.run(
        [MAKE, "--no-print-directory", "-C", str(top), "acceptance", "FLAVOUR=namespace", f"PYTHON={sys.executable}",
         *args],
        capture_output=True, text=True, check=False, timeout=120,
        env={**CLEAN, "PATH": f"{top / 'bin'}:{os.environ['PATH']}"},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (EXPRESSIONS, WORDS),
        ('-k "it\'s" x\\ y', ["-k", "it's", "x y"]),
        ("'$HOME' * ~", ["$HOME", "*", "~"]),  # no expansion: characters
        ("  ", []),
    ],
)
def test_a_value_is_split_as_a_shell_splits_it(text: str, words: list[str]) -> None:
    assert shell_words.split("PYTEST_ARGS", text) == words


def test_the_words_come_back_nul_terminated(capsys: pytest.CaptureFixture[str]) -> None:
    assert shell_words.main(["PYTEST_ARGS", EXPRESSIONS + " 'a\nb'"]) == errors.EXIT_OK
    assert capsys.readouterr().out == "\0".join([*WORDS, "a\nb"]) + "\0"


@pytest.mark.parametrize("how", ["NAME=VALUE", "environment", "make acceptance"])
@pytest.mark.parametrize("python", ["3.11+", "too old"])
def test_quoted_expressions_reach_pbs_harness_as_four_words(tree: Path, how: str, python: str) -> None:
    """`-m 'ramp_down and not destructive' -k "release and not cray"` is 4 words at `pbs-harness test` (and at
    its --judge-only check), however the value is given. Without Python 3.11+ before the installs the venv's
    Python splits it after make venv, so the real run gets the same words."""
    interpreter = sys.executable if python == "3.11+" else _old_python(tree)
    if how == "make acceptance":
        run = _make_acceptance(tree, f"PYTEST_ARGS={EXPRESSIONS}", f"PYTHON={interpreter}")
    elif how == "environment":
        run = _acceptance(tree, PYTEST_ARGS=EXPRESSIONS, PYTHON=interpreter)
    else:
        run = _acceptance(tree, f"PYTEST_ARGS={EXPRESSIONS}", PYTHON=interpreter)
    assert run.returncode == 0, run.stdout + run.stderr
    harness = [call[1:] for call in _calls(tree) if call[0] == "pbs-harness"]
    assert [call[:2] for call in harness] == [["test", "--judge-only"], ["up", "--clusters"], ["test", "--clusters"]]
    assert harness[0][2:] == WORDS
    assert harness[2][3:] == WORDS, harness[2]
    assert harness[1] == ["up", "--clusters", "auto", "--idempotence", "--flavour", "namespace"]


def test_a_quote_inside_makes_value_arrives_unchanged(tree: Path) -> None:
    """The recipe used to put the values in '...': a value's own single quote ended that quoting."""
    state = "/tmp/it's a dir"  # noqa: S108 (a name only: nothing is made there)
    run = _make_acceptance(tree, "PYTEST_ARGS=-k 'release and not cray' -x", f'UP_ARGS=--state-dir "{state}"')
    assert run.returncode == 0, run.stdout + run.stderr
    harness = [call[1:] for call in _calls(tree) if call[0] == "pbs-harness"]
    assert harness[1][-2:] == ["--state-dir", state], harness
    assert harness[2][3:] == ["-k", "release and not cray", "-x"], harness


@pytest.mark.parametrize(
    ("setting", "says", "fix"),
    [
        ("PYTEST_ARGS=-m 'ramp_down and not destructive", "a quote is not closed", "close each quote"),
        ('PYTEST_ARGS=-k "release', "a quote is not closed", "close each quote"),
        ("UP_ARGS=--subnet auto\\", "it ends in a backslash that escapes nothing", "drop the last backslash"),
    ],
)
@pytest.mark.parametrize("dry", [False, True])
def test_an_unclosed_quote_is_refused_before_anything_runs(
    tree: Path, setting: str, says: str, fix: str, dry: bool
) -> None:
    run = _acceptance(tree, *(["--dry-run"] if dry else []), setting)
    assert run.returncode == errors.EXIT_USAGE, run.stdout + run.stderr
    first, _, rest = run.stderr.partition("\n")
    assert first == f"acceptance: error: {setting} cannot be split into words: {says}", run.stderr
    assert rest.startswith(f"  fix: {fix}"), run.stderr
    assert "Traceback" not in run.stderr
    assert run.stdout == ""
    assert _calls(tree) == []


def test_without_python_3_11_an_unclosed_quote_is_refused_before_any_host(tree: Path) -> None:
    """No judge before the installs then: the venv's Python refuses it after make venv, before pbs-harness."""
    run = _acceptance(tree, "PYTEST_ARGS=-m 'ramp_down", PYTHON=_old_python(tree))
    assert run.returncode == errors.EXIT_USAGE, run.stdout + run.stderr
    assert "acceptance: error: PYTEST_ARGS=-m 'ramp_down cannot be split into words: a quote is not closed" in (
        run.stderr
    )
    assert [call[0] for call in _calls(tree)] == ["install", "make"]


def test_dry_run_prints_lines_that_can_be_pasted(tree: Path) -> None:
    """--dry-run's lines quote each word that needs it: bash reads each line back as the words that run."""
    state = "/tmp/it's $HOME *"  # noqa: S108 (a name only)
    run = _acceptance(tree, "--dry-run", f"PYTEST_ARGS={EXPRESSIONS}", f'UP_ARGS=--state-dir "{state}"')
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[-1] == ".venv/bin/pbs-harness test --clusters auto -m 'ramp_down and not destructive' -k " + (
        "'release and not cray'"
    )
    for line in lines:
        pasted = subprocess.run(
            ["bash", "-c", f"printf '%s\\0' {line}"], capture_output=True, text=True, check=True, cwd=tree
        ).stdout
        assert pasted.split("\0")[:-1] == shlex.split(line), line
    up = shlex.split(next(line for line in lines if " up " in line))
    assert up[-2:] == ["--state-dir", state]
    assert _calls(tree) == []  # a dry run runs nothing


def test_make_acceptance_hands_every_setting_over_unchanged(tree: Path) -> None:
    """FLAVOUR, IMAGE, CLUSTERS, OPENPBS and PYTHON reach ./acceptance in its environment too: the recipe used to
    put them in '...' on its line, so an OPENPBS path with a single quote ended that quoting and bash refused the
    line with its own syntax error."""
    packages = tree.parent / "it's my openpbs"
    packages.mkdir()
    for kind in ("server", "execution", "client"):  # an ar archive's first bytes: all the judge reads
        (packages / f"openpbs-{kind}_23.06.06-1_amd64.deb").write_bytes(b"!<arch>\ndebian-binary")
    run = _make_acceptance(tree, "FLAVOUR=system", "IMAGE=debian-11", "CLUSTERS=2", f"OPENPBS={packages}")
    assert run.returncode == 0, run.stdout + run.stderr
    harness = [call[1:] for call in _calls(tree) if call[0] == "pbs-harness"]
    assert harness[1] == [
        "up", "--clusters", "2", "--idempotence", "--flavour", "system", "--image", "debian-11",
        "--openpbs", str(packages),
    ], harness  # fmt: skip
    assert ["make", "--no-print-directory", "venv", f"PYTHON={sys.executable}"] in _calls(tree)


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("FLAVOUR=system'", "FLAVOUR=system' is not a kind of local host\n  fix: FLAVOUR=system (the default)"),
        ("IMAGE=debian 12", "IMAGE=debian 12 is not a system hosts' image\n  fix: IMAGE=debian-12 (the default)"),
        ("CLUSTERS=2 3", "CLUSTERS=2 3 is not a number of clusters\n  fix: CLUSTERS=auto, or 1 to 12"),
        ("OPENPBS=/nonexistent/it's", "OPENPBS=/nonexistent/it's does not exist\n  fix: name an OpenPBS release"),
    ],
)
def test_make_acceptance_refuses_a_quote_or_space_by_its_value(tree: Path, setting: str, says: str) -> None:
    """A value with a quote or a space is judged as the value it is, before anything runs: not bash's `unexpected
    EOF while looking for matching` about the recipe's line."""
    run = _make_acceptance(tree, *(["FLAVOUR=system"] if setting.startswith("OPENPBS") else []), setting)
    assert run.returncode != 0, run.stdout + run.stderr  # make's own 2, whatever ./acceptance said
    assert f"acceptance: error: {says}" in run.stderr, run.stderr
    assert "unexpected EOF" not in run.stderr
    assert "Traceback" not in run.stderr
    assert _calls(tree) == []


@pytest.fixture
def ci_tree(tmp_path: Path) -> Path:
    """A checkout of the CI scripts that run `pbs-harness test` themselves (vm-cluster.sh, cloud-acceptance.sh)
    with .venv/bin/pbs-harness, ansible-playbook and examples/ci/vm-inventory.sh faked: each records its argv;
    the venv's Python is this one and pbs_harness/ is linked in for the splitter."""
    top = tmp_path / "checkout"
    (top / "scripts" / "ci").mkdir(parents=True)
    (top / "examples" / "ci").mkdir(parents=True)
    (top / ".venv" / "bin").mkdir(parents=True)
    for name in ("vm-cluster.sh", "cloud-acceptance.sh", "pytest-args.sh"):
        shutil.copy2(ROOT / "scripts" / "ci" / name, top / "scripts" / "ci" / name)
    (top / "pbs_harness").symlink_to(ROOT / "pbs_harness")
    (top / ".venv" / "bin" / "python").symlink_to(sys.executable)
    record = tmp_path / "calls.jsonl"
    write_recorders(
        record,
        (
            (top / ".venv" / "bin" / "pbs-harness", "pbs-harness"),
            (top / ".venv" / "bin" / "ansible-playbook", "ansible-playbook"),
            (top / "examples" / "ci" / "vm-inventory.sh", "vm-inventory"),
        ),
    )
    return top


def _ci_script(top: Path, script: str, pytest_args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in CLEAN.items() if not k.startswith(("AWS_", "PBSH_"))}
    env.update(
        PYTEST_ARGS=pytest_args, PBSH_WORK=str(top.parent / "work"), AWS_REGION="eu-west-1",
        PBS_HARNESS_CLOUD_DIR=str(top.parent / "cloud"), TMPDIR=str(top.parent),
    )  # fmt: skip
    return subprocess.run(
        [str(top / "scripts" / "ci" / script)], cwd=top, capture_output=True, text=True, check=False, timeout=120,
        env=env,
    )  # fmt: skip


@pytest.mark.parametrize("script", ["vm-cluster.sh", "cloud-acceptance.sh"])
def test_the_ci_scripts_split_pytest_args_as_a_shell_does(ci_tree: Path, script: str) -> None:
    """scripts/ci/vm-cluster.sh and cloud-acceptance.sh used to split PYTEST_ARGS at blanks (`${PYTEST_ARGS}`
    unquoted), so an -m or -k expression with spaces reached pytest as loose words."""
    run = _ci_script(ci_tree, script, EXPRESSIONS)
    assert run.returncode == 0, run.stdout + run.stderr
    tests = [call[1:] for call in _calls(ci_tree) if call[:2] == ["pbs-harness", "test"]]
    if script == "vm-cluster.sh":  # judged first, then run on the written inventory
        assert tests[0] == ["test", "--judge-only", "-q", "-rs", *WORDS], tests
        assert tests[1][:2] == ["test", "-i"], tests
        assert tests[1][-4:] == WORDS, tests
    else:
        assert tests[0][:3] == ["test", "--cloud", "aws"], tests
        assert tests[0][-4:] == WORDS, tests


@pytest.mark.parametrize("script", ["vm-cluster.sh", "cloud-acceptance.sh"])
def test_the_ci_scripts_refuse_an_unclosed_quote_before_anything(ci_tree: Path, script: str) -> None:
    run = _ci_script(ci_tree, script, "-m 'ramp_down and not destructive")
    assert run.returncode == errors.EXIT_USAGE, run.stdout + run.stderr
    name = script.removesuffix(".sh")
    assert run.stderr.startswith(
        f"{name}: error: PYTEST_ARGS=-m 'ramp_down and not destructive cannot be split into words: a quote is not "
        "closed\n  fix: close each quote"
    ), run.stderr
    assert "Traceback" not in run.stderr
    assert _calls(ci_tree) == []  # no inventory written, no run id, no pbs-harness
    assert not (ci_tree.parent / "cloud" / "current-run").exists()
