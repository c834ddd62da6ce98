"""`.ci/summary.py`: the closing line of a CI run, and its refusal to pass a run that tested nothing.
Runs the script on small JUnit files written here (nothing faked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "summary.py"


def junit(path: Path, tests: int, failures: int, skipped: int) -> Path:
    path.write_text(
        f'<testsuites><testsuite name="pytest" tests="{tests}" failures="{failures}" errors="0" '
        f'skipped="{skipped}"></testsuite></testsuites>'
    )
    return path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], check=False, capture_output=True, text=True, timeout=30)


def test_the_closing_line_adds_up_every_file(tmp_path: Path) -> None:
    res = run(str(junit(tmp_path / "a.xml", 10, 1, 2)), str(junit(tmp_path / "b.xml", 5, 0, 5)), "missing.xml")
    assert res.returncode == 0
    assert res.stdout.strip() == "ci: 7 passed, 1 failed, 7 skipped"


def test_an_acceptance_run_where_everything_skipped_fails(tmp_path: Path) -> None:
    res = run("--require-run", str(junit(tmp_path / "junit.xml", 186, 0, 186)))
    assert res.returncode == 1
    assert "no acceptance test ran (all skipped" in res.stdout


def test_an_acceptance_run_without_results_fails(tmp_path: Path) -> None:
    res = run("--require-run", str(tmp_path / "junit.xml"))
    assert res.returncode == 1
    assert "left no results" in res.stdout


def test_an_acceptance_run_that_ran_tests_passes_the_check(tmp_path: Path) -> None:
    assert run("--require-run", str(junit(tmp_path / "junit.xml", 186, 2, 10))).returncode == 0


def test_xfails_written_as_passes_are_counted_apart(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(
        '<testsuites><testsuite name="pytest" tests="3" failures="0" errors="0" skipped="0">'
        '<testcase name="a"/><testcase name="b"><properties><property name="xfail" value="bug"/></properties>'
        '</testcase><testcase name="c"/></testsuite></testsuites>'
    )
    assert run(str(path)).stdout.strip() == "ci: 3 passed (1 of them xfailed: known OpenPBS bugs), 0 failed, 0 skipped"


def test_why_names_the_failing_lines_and_tests_not_a_single_clusters_progress(tmp_path: Path) -> None:
    """--why, at the end of a failed acceptance job: a single cluster's '[t]   task: ...' progress has the shape
    of deploy_fleet's '[t]   NAME: reason' lines and used to fill the block."""
    output = tmp_path / "make.out"
    output.write_text(
        "[05:29:54]   play: Preflight\n"
        "[05:29:54]   task: openpbs_hooks : Hooks | Check the hook list\n"
        "[05:29:55]   pbsh01       ok=3 changed=0 failed=0\n"
        "[05:29:56] idempotence gate FAILED: a second deploy changed 1 host(s) (log: l)\n"
        "[05:29:58] deploy failed on: ci4f85b (exit 1)\n"
        "[05:29:58]   ci4f85b: failed: [ci4f85b02] (item=pbsuser1) => useradd: cannot lock /etc/passwd\n"
        "[05:29:58] [ci4f85d]   task: openpbs_hooks : Hooks | Compile\n"
        "acceptance: exit 1 (README, exit codes)\n"
    )
    report = tmp_path / "junit.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest" tests="3" failures="1" errors="1" skipped="0">'
        '<testcase classname="ptl_tests.test_a" name="test_ok"/>'
        '<testcase classname="ptl_tests.test_a" name="test_bad"><failure message="m"/></testcase>'
        '<testcase classname="ptl_tests.test_b" name="test_err"><error message="e"/></testcase>'
        "</testsuite></testsuites>"
    )
    res = run("--why", str(output), str(report))
    assert res.returncode == 0
    assert res.stdout.splitlines() == [
        "  [05:29:56] idempotence gate FAILED: a second deploy changed 1 host(s) (log: l)",
        "  [05:29:58] deploy failed on: ci4f85b (exit 1)",
        "  [05:29:58]   ci4f85b: failed: [ci4f85b02] (item=pbsuser1) => useradd: cannot lock /etc/passwd",
        "  acceptance: exit 1 (README, exit codes)",
        "  failed: ptl_tests.test_a::test_bad",
        "  failed: ptl_tests.test_b::test_err",
    ]


def test_why_with_nothing_to_say(tmp_path: Path) -> None:
    res = run("--why", str(tmp_path / "none.out"), str(tmp_path / "none.xml"))
    assert res.stdout.strip() == "(no line of the output says so: read it above)"
