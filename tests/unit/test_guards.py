"""Guards: every catalogue interface is guarded by a test of ptl_tests/ (or is a listed gap), each
guard is one of its test's spec ids, the static scan reads guards where the suites put them, and
the recorder refuses a bad guards marker and writes each test's guards into results.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pbs_harness.conformance import catalogue, guards, tags

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "ptl_tests"


def test_every_catalogue_interface_is_guarded_by_an_ordinary_test_or_is_a_listed_gap() -> None:
    declared = guards.declared(SUITES)
    expected_failures = set(tags.marked(SUITES, "xfail"))
    ids = catalogue.load().ids()
    weak = {i: guards.weakness(i, declared.get(i, []), expected_failures) for i in ids}
    unlisted = sorted(i for i, why in weak.items() if why and i not in guards.UNGUARDED)
    assert unlisted == [], f"interfaces no ordinary test guards: declare @pytest.mark.guards or list them: {unlisted}"
    stale = sorted(i for i in guards.UNGUARDED if i not in ids or not weak[i])
    assert stale == [], f"guards.UNGUARDED lists interfaces that are guarded now (or unknown): {stale}"
    # Not a failure: the report shows these as weakly guarded. Printed for `pytest -s`.
    print(f"weakly guarded, listed gaps ({len(guards.UNGUARDED)}): {', '.join(guards.UNGUARDED) or 'none'}")  # noqa: T201


def test_every_guard_names_a_catalogue_entry_its_test_is_tagged_with() -> None:
    declared = guards.declared(SUITES)
    assert sorted(set(declared) - set(catalogue.load().ids())) == []
    assert guards.untagged_guards(tags.scan(SUITES), declared) == []


def test_marker_problems_name_the_wrong_ids() -> None:
    known = catalogue.load().ids()
    assert guards.marker_problem(["RD-1", "RD-3"], ["RD-3"], known) is None
    assert "unknown catalogue entries ['RD-99']" in str(guards.marker_problem(["RD-1"], ["RD-99"], known))
    assert "names ['RD-3'], which its spec marker does not" in str(guards.marker_problem(["RD-1"], ["RD-3"], known))


SCANNED = """
import pytest

pytestmark = [pytest.mark.ramp_down]
PINNED = pytest.mark.xfail(strict=True, raises=KeyError, reason="pinned")
LISTED = pytest.mark.guards("RJS-5")
CASES = [pytest.param(1, marks=LISTED), 2]


@pytest.mark.spec("RJS-1", "RJS-5")
@pytest.mark.guards("RJS-1")
@pytest.mark.parametrize("case", CASES)
def test_cases(case):
    pass


@PINNED
@pytest.mark.spec("RD-1")
@pytest.mark.guards("RD-1")
def test_pinned():
    pass


@pytest.mark.spec("RD-1")
@pytest.mark.parametrize("x", [1, pytest.param(2, marks=PINNED)])
def test_one_case_pinned(x):
    pass


class TestGroup:
    pytestmark = []

    @pytest.mark.xfail(strict=True, raises=KeyError)
    @pytest.mark.spec("RD-2")
    def test_in_class(self):
        pass
"""


def test_the_scan_reads_guards_in_parameter_constants_and_xfails_of_whole_tests(tmp_path: Path) -> None:
    suite = tmp_path / "ptl_tests"
    suite.mkdir()
    (suite / "test_s.py").write_text(SCANNED)
    cases, pinned = "ptl_tests/test_s.py::test_cases", "ptl_tests/test_s.py::test_pinned"
    assert tags.scan(suite, "guards") == {"RJS-1": [cases], "RJS-5": [cases], "RD-1": [pinned]}
    # A whole test marked xfail (by a constant too), not a test with one pinned case.
    assert tags.marked(suite, "xfail") == [pinned, "ptl_tests/test_s.py::TestGroup::test_in_class"]


CHILD = """
import pytest


@pytest.mark.spec("RD-1", "RD-3")
@pytest.mark.guards("RD-1")
@pytest.mark.parametrize("case", [pytest.param("records", marks=pytest.mark.guards("RD-3")), "waits"])
def test_release(case):
    pass
"""


@pytest.fixture
def child(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    return pytester


PLUGINS = ("-p", "pbs_harness.suite.plugin", "-p", "pbs_harness.conformance.recorder", "-p", "no:cacheprovider")


def test_the_recorder_writes_each_cases_guards(child: pytest.Pytester, tmp_path: Path) -> None:
    child.makepyfile(test_release=CHILD)
    results = tmp_path / "results.json"
    child.runpytest_subprocess(*PLUGINS, "--results-json", str(results), timeout=120).assert_outcomes(passed=2)
    got = {t["nodeid"]: (t["specs"], t["guards"]) for t in json.loads(results.read_text())["tests"]}
    assert got == {
        "test_release.py::test_release[records]": (["RD-1", "RD-3"], ["RD-1", "RD-3"]),
        "test_release.py::test_release[waits]": (["RD-1", "RD-3"], ["RD-1"]),
    }


@pytest.mark.parametrize(
    ("guards_marker", "says"),
    [('"RD-99"', "unknown catalogue entries ['RD-99']"), ('"RD-4"', "names ['RD-4'], which its spec marker does not")],
)
def test_the_recorder_refuses_a_guard_its_test_is_not_tagged_with(
    child: pytest.Pytester, tmp_path: Path, guards_marker: str, says: str
) -> None:
    child.makepyfile(test_bad=CHILD.replace('@pytest.mark.guards("RD-1")', f"@pytest.mark.guards({guards_marker})"))
    result = child.runpytest_subprocess(*PLUGINS, "--results-json", str(tmp_path / "r.json"), timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert says in result.stderr.str()
