"""What a `pbs-harness test` run amounts to: pytest's exit code and the run's results, as one verdict.

pytest exits 0 when every test was skipped; the harness does not: exit 0 needs at least one
acceptance test that ran and none that failed (errors.EXIT_CODES). The per-test outcomes come from
the results file the conformance recorder writes (reports/results.json).
"""

from __future__ import annotations

import json
import signal
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pbs_harness.common import errors

# Beginnings of the plugin's skip reasons (pbs_harness.suite.plugin), read back here to name the cause.
SKIP_UNREACHABLE = "cluster not reachable"
SKIP_NO_OPENPBS = "OpenPBS is not installed"
SKIP_NO_INVENTORY = "no usable inventory"

# pytest's own exit codes (pytest.ExitCode), mapped onto the harness's table.
PYTEST_OK, PYTEST_FAILED, PYTEST_INTERRUPTED, PYTEST_INTERNAL, PYTEST_USAGE, PYTEST_NO_TESTS = range(6)

# pytest options that only inform (list tests, markers, help): their run needs no cluster and no test.
INFO_OPTIONS = frozenset(
    {"--collect-only", "--co", "--help", "--version", "-V", "--fixtures", "--fixtures-per-test", "--markers"}
)


@dataclass(frozen=True)
class Verdict:
    code: int
    message: str
    hint: str = ""


def read_results(path: Path, since: float) -> dict[str, Any] | None:
    """The results file if this run wrote it (modified at or after `since`, a time.time()), else None."""
    try:
        if path.stat().st_mtime < since - 1:
            return None
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("tests"), list) else None


def _tally(tests: list[dict[str, Any]]) -> str:
    counts = Counter(str(t.get("outcome")) for t in tests)
    return ", ".join(f"{n} {outcome}" for outcome, n in counts.most_common())


def _all_skipped(tests: list[dict[str, Any]], unreachable_hint: str) -> Verdict:
    reasons = Counter(str(t.get("skip_reason", "")).removeprefix("Skipped: ") for t in tests)
    listed = "; ".join(f"{n} x {reason[:300] or '(no reason)'}" for reason, n in reasons.most_common(3))
    message = f"nothing was tested: all {len(tests)} selected tests were skipped ({listed})"
    if all(r.startswith(SKIP_UNREACHABLE) for r in reasons):
        return Verdict(errors.EXIT_UNREACHABLE, message, unreachable_hint)
    if all(r.startswith((SKIP_NO_OPENPBS, SKIP_NO_INVENTORY)) for r in reasons):
        return Verdict(errors.EXIT_PRECONDITION, message, "the skip reason says what is missing and how to get it")
    return Verdict(errors.EXIT_NOTHING_TESTED, message, "the skip reasons say what the cluster lacks for these tests")


_BY_PYTEST_CODE = {
    PYTEST_INTERRUPTED: Verdict(errors.EXIT_INTERRUPTED, "the test session was interrupted"),
    PYTEST_USAGE: Verdict(
        errors.EXIT_USAGE, "pytest refused the command line (its message is above)", "see pbs-harness test --help"
    ),
    PYTEST_NO_TESTS: Verdict(
        errors.EXIT_NOTHING_TESTED,
        "nothing was tested: no test was collected or selected",
        "check the test paths and the -k/-m expressions (pbs-harness test --collect-only -q lists what would run)",
    ),
    PYTEST_INTERNAL: Verdict(errors.EXIT_FAILED, "pytest ended with an internal error", "see its output above"),
}


def _from_code(rc: int, tests: list[dict[str, Any]], signalled: bool) -> Verdict | None:
    """The verdict that pytest's exit code alone decides, or None (rc 0: the results decide)."""
    failed = [t for t in tests if t.get("outcome") in ("failed", "error")]
    if rc == PYTEST_INTERRUPTED and failed and not signalled:
        # -x/--maxfail stopping a parallel run: pytest-xdist stops its session as "interrupted" (pytest's 2),
        # where a serial run says 1. Nobody pressed Ctrl-C: tests failed.
        return Verdict(
            errors.EXIT_FAILED,
            f"tests failed: {_tally(tests)} (the run stopped after {len(failed)} failure(s): -x/--maxfail)",
            "see reports/acceptance.html and reports/evidence/",
        )
    if rc < 0:
        if -rc in (signal.SIGINT, signal.SIGTERM):
            return Verdict(errors.EXIT_INTERRUPTED, "the test session was stopped by a signal")
        return Verdict(errors.EXIT_FAILED, f"pytest was killed by signal {-rc}", "see its output above")
    if rc == PYTEST_FAILED:
        detail = f": {_tally(tests)}" if tests else ""
        return Verdict(errors.EXIT_FAILED, f"tests failed{detail}", "see reports/acceptance.html and reports/evidence/")
    if rc != PYTEST_OK:
        return _BY_PYTEST_CODE.get(rc, Verdict(errors.EXIT_FAILED, f"pytest ended with exit code {rc}"))
    return None


def judge(
    rc: int,
    results: dict[str, Any] | None,
    *,
    informational: bool = False,
    unreachable_hint: str = "",
    signalled: bool = False,
) -> Verdict:
    """The harness's exit code and a one-line account of a pytest run (rc) with its results (or None);
    `signalled`: the harness passed a stop signal (Ctrl-C, SIGTERM) to that run."""
    tests = results.get("tests", []) if results else []
    decided = _from_code(rc, tests, signalled)
    if decided is not None:
        return decided
    if informational:
        return Verdict(errors.EXIT_OK, "done")
    if results is None:
        return Verdict(
            errors.EXIT_NOTHING_TESTED,
            "cannot tell whether any acceptance test ran: the run wrote no results file",
            "run the suites under ptl_tests/ (their conftest loads the results recorder)",
        )
    if not tests:
        return Verdict(errors.EXIT_NOTHING_TESTED, "nothing was tested: the run recorded no test")
    if all(t.get("outcome") == "skipped" for t in tests):
        return _all_skipped(tests, unreachable_hint)
    return Verdict(errors.EXIT_OK, f"acceptance tests: {_tally(tests)}")
