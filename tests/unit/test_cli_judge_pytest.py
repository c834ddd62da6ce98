"""PYTEST_ARGS judged before anything is installed (issue #34): ./acceptance runs pbs-harness's own judge of a
pytest line (pbs_harness/cli/pytest_judge.py, standard library only) with this machine's Python before
apt-get, make venv or any host, and `pbs-harness test --judge-only` (pytest's own parse too) before `up`.
The judge's copies of what pytest knows (its options, the markers) are compared here with the real ones."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pbs_harness.cli import pytest_expression, pytest_judge, pytest_options
from pbs_harness.common import errors
from tests.unit.test_cli_judge import ENVIRON, tripwires  # noqa: F401 (tripwires: the fixture, fake apt-get, ...)

ROOT = Path(__file__).resolve().parents[2]

# The plugins `pbs-harness test` loads: ptl_tests/conftest.py's, found from the suites' folder, and the
# venv's installed ones (xdist, html, timeout, ...), as cli/test.py's run_suites starts pytest.
_DUMP_OPTIONS = """
import json, sys, pytest

class Dump:
    @pytest.hookimpl(tryfirst=True)
    def pytest_cmdline_main(self, config):
        taken = {}
        for action in config._parser.optparser._actions:  # pytest's argparse parser; no public listing
            for name in action.option_strings:
                taken[name] = 1 if action.nargs is None else action.nargs
        print(json.dumps(taken))
        return 0

sys.exit(pytest.main(["ptl_tests"], plugins=[Dump()]))
"""


def _run(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=ROOT, env={**ENVIRON, "PYTHONPATH": str(ROOT), **env}, capture_output=True, text=True,
        check=False, timeout=300,
    )  # fmt: skip


def test_the_option_table_is_the_real_parsers() -> None:
    """pytest_options.OPTIONS equals the options of the venv's pytest with the suites' plugins: an upgrade or a
    new plugin option fails here (regenerate the table from the printed dict)."""
    run = _run([sys.executable, "-c", _DUMP_OPTIONS])
    assert run.returncode == 0, run.stderr
    real = json.loads(run.stdout.strip().splitlines()[-1])
    assert real == pytest_options.OPTIONS, f"pytest's options now: {real}"


def test_the_markers_are_those_pytest_registers() -> None:
    """pytest_options.markers (pyproject.toml's, the plugin's, pytest's and its plugins') equals what pytest
    lists for the suites (`pytest --markers`)."""
    run = _run([sys.executable, "-m", "pytest", "--markers", "-p", "no:cacheprovider", "ptl_tests"])
    assert run.returncode == 0, run.stderr
    real = set(re.findall(r"^@pytest\.mark\.(\w+)", run.stdout, flags=re.M))
    assert real == set(pytest_options.markers(ROOT))


def test_the_pytest_judge_needs_the_standard_library_only() -> None:
    """With the third-party modules blocked, the judge still judges: the machine's own Python runs it."""
    blocked = ("yaml", "pytest", "_pytest", "pluggy", "jinja2", "ansible", "boto3", "botocore", "paramiko")
    code = (
        "import sys\n"
        f"for m in {blocked!r}: sys.modules[m] = None\n"
        "from pbs_harness.cli import judge\n"
        "sys.exit(judge.main(['test', '-m', 'ramp_down', '-x', 'ptl_tests/ramp_down']))\n"
    )
    run = _run([sys.executable, "-c", code])
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize(
    ("text", "with_kwargs", "names"),
    [
        ("ramp_down and not destructive", True, ["ramp_down", "destructive"]),
        ("(smoke or harness) and not (ci)", True, ["smoke", "harness", "ci"]),
        ("needs_moms(n=3)", True, ["needs_moms"]),
        ("release and not test_x[1-2]", False, ["release", "test_x[1-2]"]),
        ("", False, []),
    ],
)
def test_an_expression_that_parses(text: str, with_kwargs: bool, names: list[str]) -> None:
    assert pytest_expression.names(text, with_kwargs=with_kwargs) == names


@pytest.mark.parametrize(
    ("text", "with_kwargs", "says"),
    [
        ("ramp_down and", True, "at column 14: expected not, '(' or a name; got 'end of input'"),
        ("(smoke or harness", True, "at column 18: expected ')'"),
        ("smoke harness", True, "at column 7: expected 'and', 'or' or the end; got 'harness'"),
        ("not", False, "at column 4"),
        ("a or or b", False, "at column 6"),
        ("needs_moms(n=3)", False, "-k takes names, not call parameters"),
        ("needs_moms(n=x)", True, "expected a quoted string, a number, True, False or None"),
        ("a = b", False, "at column 3"),
        ("'x", True, "not closed"),
        ("a ; b", True, "unexpected character ';'"),
    ],
)
def test_an_expression_that_does_not_parse(text: str, with_kwargs: bool, says: str) -> None:
    with pytest.raises(pytest_expression.ExpressionError, match=re.escape(says)):
        pytest_expression.names(text, with_kwargs=with_kwargs)


@pytest.mark.parametrize(
    "line",
    [
        ["-m", "ramp_down and not destructive", "-k", "release", "-x", "--maxfail", "2", "ptl_tests/ramp_down"],
        ["-xvs", "-rA", "--tb=short", "--lf", "ptl_tests/test_smoke.py::test_x[1]"],
        ["-k", "not reservation", "--results-json", "r.json", "--", "ptl_tests"],
        ["--pyargs", "ptl_tests.ramp_down"],
        ["-p", "some_plugin", "--its-own-option", "1"],  # left to pytest's parse: the plugin's options
        ["-m", "needs_moms(n=3)", "--debug"],
        [],
    ],
)
def test_a_good_line_is_taken(line: list[str]) -> None:
    assert pytest_judge.judge(line, ROOT) is None


@pytest.mark.parametrize(
    ("pytest_args", "told"),
    [
        ("--maxfial 1", ("--maxfial is not an option of pytest (did you mean --maxfail?)", "pbs-harness test --help")),
        ("-xz", ("-z is not an option of pytest (in -xz)", "pbs-harness test --help")),
        ("--maxfail", ("--maxfail takes a value and has none", "give --maxfail VALUE (or --maxfail=VALUE)")),
        ("-k -x", ("-k takes a value and has none, and is followed by -x", "give -k VALUE")),
        ("--pdb=1", ("--pdb takes no value (given --pdb=1)", "give --pdb alone")),
        ("-m ramp_dwn", ("-m 'ramp_dwn': ramp_dwn is not a marker the suites register (did you mean ramp_down?), "
         "so it would select no test (exit 5, after the whole run)", "use the suites' markers: acceptance, ")),
        ("-m smoke,ci", ("-m 'smoke,ci' does not parse: at column 6: expected 'and', 'or' or the end; got ','",
                         "write it with and")),
        ("-k (release", ("-k '(release' does not parse: at column 9: expected ')'", "e.g. -k 'release and not")),
        ("ptl_tests/ramp_dwn", (f"ptl_tests/ramp_dwn: {ROOT}/ptl_tests/ramp_dwn does not exist", "e.g. ptl_tests/")),
        ("ptl_tests/nope.py::test_x", (f"ptl_tests/nope.py::test_x: {ROOT}/ptl_tests/nope.py does not exist",
                                       "a test file")),
        ("-m ramp_down and destructive", (f"and: {ROOT}/and does not exist", "quote an -m or -k expression")),
        ("-n 4", ("-n: pbs-harness test gives pytest one pytest-xdist worker per cluster", "leave -n out; CLUSTERS")),
        ("--junitxml=j.xml", ("--junitxml: pbs-harness test gives pytest reports/junit.xml", "written to reports/")),
        ("-p no:xdist", ("-p no:xdist: pbs-harness test gives pytest one pytest-xdist worker", "leave -p no:xdist")),
        ("--clusters 3", ("--clusters is pbs-harness test's own option, not pytest's", "CLUSTERS says how many")),
        ("-i inventory/local", ("-i is pbs-harness test's own option", "pbs-harness test -i INVENTORY yourself")),
    ],
)  # fmt: skip
@pytest.mark.parametrize("dry", [False, True])
def test_a_bad_pytest_args_is_refused_before_anything_is_installed(
    pytest_args: str,
    told: tuple[str, str],
    dry: bool,
    tripwires: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    says, fix = told
    run = _run(
        [str(ROOT / "acceptance"), *(["--dry-run"] if dry else []), "FLAVOUR=namespace", f"PYTEST_ARGS={pytest_args}"],
        **tripwires, PYTHON=sys.executable,
    )  # fmt: skip
    assert run.returncode == errors.EXIT_USAGE, run.stdout + run.stderr
    first, _, rest = run.stderr.partition("\n")
    assert first.startswith(f"acceptance: error: PYTEST_ARGS={pytest_args} is refused: {says}"), run.stderr
    assert rest.startswith("  fix: "), run.stderr
    assert fix in rest, run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert run.stdout == ""  # not even the --dry-run lines
    assert not (tmp_path / "started").exists(), (tmp_path / "started").read_text()


def test_a_good_pytest_args_is_judged_again_before_up(tripwires: dict[str, str]) -> None:  # noqa: F811
    """After make venv, `pbs-harness test --judge-only` (pytest's own parse too) runs before `up`."""
    line = "-m ramp_down -k release -x --maxfail 2 ptl_tests/ramp_down"
    run = _run(
        [str(ROOT / "acceptance"), "--dry-run", "FLAVOUR=namespace", f"PYTEST_ARGS={line}"],
        **tripwires, PYTHON=sys.executable,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    judged = lines.index(f".venv/bin/pbs-harness test --judge-only {line}")
    up = next(i for i, ln in enumerate(lines) if "pbs-harness up " in ln)
    venv = next(i for i, ln in enumerate(lines) if "make --no-print-directory venv" in ln)
    assert venv < judged < up, lines
    assert lines[-1] == f".venv/bin/pbs-harness test --clusters auto {line}"


def test_without_python_3_11_only_the_venvs_judge_runs(tripwires: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    """A bare Debian's python3 too old (a stand-in here): nothing refuses the line before the installs, and
    `pbs-harness test --judge-only` is still before `up`."""
    old = tmp_path / "old-python"
    old.write_text("#!/bin/sh\nexit 1\n")
    old.chmod(0o755)
    run = _run(
        [str(ROOT / "acceptance"), "--dry-run", "FLAVOUR=namespace", "PYTEST_ARGS=-m ramp_dwn"],
        **tripwires, PYTHON=str(old),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    judged = lines.index(".venv/bin/pbs-harness test --judge-only -m ramp_dwn")
    assert judged < next(i for i, ln in enumerate(lines) if "pbs-harness up " in ln), lines


@pytest.mark.parametrize(
    ("line", "code", "says"),
    [
        (["-m", "ramp_dwn"], errors.EXIT_USAGE, "ramp_dwn is not a marker the suites register"),
        (["--tb", "bogus"], errors.EXIT_USAGE, "pytest refused the command line"),  # only pytest knows --tb's
        (["--timeout", "soon"], errors.EXIT_USAGE, "pytest refused the command line"),
        (["-i", "inventory/local", "-x"], errors.EXIT_USAGE, "this one holds pbs-harness test's own options"),
        (["--lf", "-m", "ramp_down", "-x"], errors.EXIT_OK, "the pytest line is taken: --lf -m ramp_down -x"),
    ],
)
def test_judge_only_judges_with_pytest_too_and_starts_nothing(
    line: list[str], code: int, says: str, tmp_path: Path
) -> None:
    """`pbs-harness test --judge-only`: both judges, no host; the state dir stays empty (no cluster looked
    up). --lf is taken: pytest's parse used to run without its cache plugin, so --lf/--ff/--sw were refused."""
    state = tmp_path / "state"
    run = _run(
        [sys.executable, "-m", "pbs_harness", "test", "--judge-only", *line],
        PBS_HARNESS_STATE_DIR=str(state), PBS_HARNESS_INVENTORY=str(tmp_path / "no-inventory"),
    )  # fmt: skip
    assert run.returncode == code, run.stdout + run.stderr
    assert says in run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert not state.exists()
