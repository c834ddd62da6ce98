"""A parallel run end to end, without any cluster: real pytest-xdist child sessions (pytester, in
subprocesses) on small tests that record which inventory their worker was bound to. The inventories
are paths that are never loaded (no test here uses a cluster fixture); nothing is faked."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

PLUGINS = (
    "-p", "pbs_harness.suite.plugin", "-p", "pbs_harness.suite.progress",
    "-p", "pbs_harness.suite.parallel.binding", "-p", "pbs_harness.suite.parallel.durations",
    "-p", "pbs_harness.suite.parallel.controller",
)  # fmt: skip

WHERE = """
import os, pathlib

def test_{name}(pytestconfig):
    out = pathlib.Path({out!r}) / (os.environ["PYTEST_XDIST_WORKER"] + "-{name}")
    out.write_text(pytestconfig.option.inventory)
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    out = tmp_path_factory.mktemp("where")
    pytester.makepyfile(**{f"test_{n}": WHERE.format(name=n, out=str(out)) for n in ("a", "b", "c", "d")})
    return pytester, out


def test_each_worker_tests_its_own_inventory(suite) -> None:
    pytester, out = suite
    result = pytester.runpytest_subprocess(
        *PLUGINS, "-n", "2", "--worker-inventory", "/inv/one", "--worker-inventory", "/inv/two", timeout=120
    )
    result.assert_outcomes(passed=4)
    seen = {p.name: p.read_text() for p in out.iterdir()}
    assert len(seen) == 4, seen
    for name, inventory in seen.items():
        assert inventory == {"gw0": "/inv/one", "gw1": "/inv/two"}[name.split("-")[0]], seen
    # The progress lines name the cluster; these tests touch none.
    lines = [ln for ln in result.stdout.lines if ln.startswith("[")]
    assert len(lines) == 4, lines
    assert all("] (no cluster): " in ln for ln in lines), lines


def test_units_run_longest_first_by_the_last_durations(suite) -> None:
    pytester, _ = suite
    cache = pytester.path / ".pytest_cache" / "v" / "pbs-harness"
    cache.mkdir(parents=True)
    # The last run's durations (seconds): d longest, then b; a and c were never recorded (median: 16).
    last = {"test_d.py::test_d": 50, "test_b.py::test_b": 30, "x::y": 1, "z::w": 2}
    (cache / "durations").write_text(json.dumps(last))
    result = pytester.runpytest_subprocess(*PLUGINS, "-n", "1", "--worker-inventory", "/inv/one", timeout=120)
    result.assert_outcomes(passed=4)
    order = [re.search(r"test_(\w)\b", ln)[1] for ln in result.stdout.lines if ln.startswith("[")]
    assert order == ["d", "b", "a", "c"], result.stdout.str()
    # This run's durations replace those of the tests that ran; the others stay.
    recorded = json.loads((cache / "durations").read_text())
    assert set(recorded) == {f"test_{n}.py::test_{n}" for n in "abcd"} | {"x::y", "z::w"}
    assert recorded["test_d.py::test_d"] < 50


def test_a_worker_beyond_the_inventories_is_refused(suite) -> None:
    pytester, _ = suite
    result = pytester.runpytest_subprocess(*PLUGINS, "-n", "2", "--worker-inventory", "/inv/one", timeout=120)
    assert "worker gw1 has no cluster: 1 --worker-inventory given" in result.stdout.str() + result.stderr.str()


def test_results_of_the_workers_land_in_one_file(suite, tmp_path: Path) -> None:
    pytester, _ = suite
    results = tmp_path / "results.json"
    result = pytester.runpytest_subprocess(
        *PLUGINS, "-p", "pbs_harness.conformance.recorder", "--results-json", str(results),
        "-n", "2", "--worker-inventory", "/inv/one", "--worker-inventory", "/inv/two", timeout=120,
    )  # fmt: skip
    result.assert_outcomes(passed=4)
    data = json.loads(results.read_text())
    assert sorted(t["nodeid"] for t in data["tests"]) == [f"test_{n}.py::test_{n}" for n in "abcd"]
    assert {t["outcome"] for t in data["tests"]} == {"passed"}


def test_progress_names_each_tests_suite_marker_not_its_module(pytester: pytest.Pytester, tmp_path_factory) -> None:
    """A suite spans modules (a package by section): the controller names the suite marker the
    workers saw, which they write before they report their collection."""
    out = tmp_path_factory.mktemp("where")
    body = "import pytest\n\npytestmark = pytest.mark.smoke\n" + WHERE
    pytester.makepyfile(**{f"test_part_{n}": body.format(name=n, out=str(out)) for n in ("one", "two")})
    result = pytester.runpytest_subprocess(
        *PLUGINS, "-n", "2", "--worker-inventory", "/inv/one", "--worker-inventory", "/inv/two", timeout=120
    )
    result.assert_outcomes(passed=2)
    lines = [ln for ln in result.stdout.lines if ln.startswith("[")]
    assert len(lines) == 2, lines
    assert all("(no cluster): smoke test_" in ln for ln in lines), lines
