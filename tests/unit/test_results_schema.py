"""The results file's schema (pbs_harness.conformance.results) accepts what the recorder writes.

`pbs-harness report --results FILE` refuses a file that is not a run's results (docs/bad-input.md,
test_cli_bad_input.py::test_report_results_file); this side proves the schema is not stricter than
the recorder: a real child pytest session (pytester) with every outcome writes a file, and the
schema reads it back. Nothing is faked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pbs_harness.conformance import results

CHILD = """
import pytest

@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
def test_passes():
    pass

@pytest.mark.spec("RD-3")
def test_fails():
    assert 1 == 2

def test_skips():
    pytest.skip("needs 6 moms")

@pytest.mark.xfail(reason="a known OpenPBS bug", strict=True)
def test_xfails():
    assert False

def test_errors_in_setup(no_such_fixture):
    pass
"""

PLUGINS = ("-p", "pbs_harness.suite.plugin", "-p", "pbs_harness.conformance.recorder", "-p", "no:cacheprovider")


def test_what_the_recorder_writes_fits_the_schema(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path / "state"))
    pytester.makepyfile(test_every_outcome=CHILD)
    written = tmp_path / "results.json"
    run = pytester.runpytest_subprocess(*PLUGINS, "--results-json", str(written), timeout=120)
    run.assert_outcomes(passed=1, failed=1, skipped=1, xfailed=1, errors=1)

    data = results.load(written)

    outcomes = {t["nodeid"].split("::")[1]: t["outcome"] for t in data["tests"]}
    assert outcomes == {
        "test_passes": "passed",
        "test_fails": "failed",
        "test_skips": "skipped",
        "test_xfails": "xfailed",
        "test_errors_in_setup": "error",
    }
    keys = {k for t in data["tests"] for k in t}
    assert keys <= set(results.TEST_REQUIRED) | set(results.TEST_OPTIONAL)
    assert {"failure", "skip_reason", "xfail_reason"} <= keys  # the optional keys were exercised
    assert set(json.loads(written.read_text())) <= set(results.TOP_REQUIRED) | set(results.TOP_OPTIONAL)
