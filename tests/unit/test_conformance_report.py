"""Conformance report: tag scan, status rules (from the guards), the report's columns, and the spec
markers of the real suites. Verdicts are built from small results dicts and suites written here."""

import json
from pathlib import Path

import pytest

from pbs_harness.conformance import catalogue, guards, report, tags

ROOT = Path(__file__).resolve().parents[2]

SUITE = """
import pytest

pytestmark = [pytest.mark.ramp_down, pytest.mark.spec("RD-1")]


@pytest.mark.spec("RD-3", "RD-4")
def test_release_one():
    pass


def test_release_two():
    pass


class TestErrors:
    @pytest.mark.spec("RD-6")
    def test_error(self):
        pass
"""


def test_tag_scan_reads_module_function_and_class_markers(tmp_path: Path) -> None:
    suite = tmp_path / "ptl_tests"
    suite.mkdir()
    (suite / "test_x.py").write_text(SUITE)
    found = tags.scan(suite)
    assert found["RD-1"] == [
        "ptl_tests/test_x.py::test_release_one",
        "ptl_tests/test_x.py::test_release_two",
        "ptl_tests/test_x.py::TestErrors::test_error",
    ]
    assert found["RD-3"] == ["ptl_tests/test_x.py::test_release_one"]
    assert found["RD-6"] == ["ptl_tests/test_x.py::TestErrors::test_error"]


def _result(nodeid: str, outcome: str, specs: list[str]) -> dict:
    return {"nodeid": nodeid, "outcome": outcome, "specs": specs, "differences": []}


def test_statuses_never_call_unrun_work_passed(tmp_path: Path) -> None:
    suite = tmp_path / "ptl_tests"
    suite.mkdir()
    (suite / "test_x.py").write_text(SUITE)
    cat = catalogue.load()
    results = {
        "tests": [
            _result("ptl_tests/test_x.py::test_release_one", "passed", ["RD-1", "RD-3", "RD-4"]),
            _result("ptl_tests/test_x.py::TestErrors::test_error", "failed", ["RD-1", "RD-6"]),
        ]
    }
    rows = {r.id: r for r in report.build(cat, results, suite)}
    assert rows["RD-3"].status == "pass"
    assert rows["RD-6"].status == "fail"
    assert rows["RD-1"].status == "fail"  # one of its tests failed
    assert rows["RD-2"].status == "not covered"
    assert rows["AS-1"].status == "not covered"
    # Only a subset ran: a tagged test that did not run makes the entry incomplete, not pass.
    subset = {"tests": [_result("ptl_tests/test_x.py::test_release_one", "passed", ["RD-1", "RD-3", "RD-4"])]}
    rows = {r.id: r for r in report.build(cat, subset, suite)}
    assert rows["RD-1"].status == "incomplete"
    assert rows["RD-1"].untested == [
        "ptl_tests/test_x.py::test_release_two",
        "ptl_tests/test_x.py::TestErrors::test_error",
    ]
    assert rows["RD-6"].status == "not run"
    # Nothing ran at all.
    rows = {r.id: r for r in report.build(cat, {}, suite)}
    assert {rows[i].status for i in ("RD-1", "RD-3", "RD-6")} == {"not run"}


def test_xfail_skip_and_differences(tmp_path: Path) -> None:
    suite = tmp_path / "ptl_tests"
    suite.mkdir()
    (suite / "test_x.py").write_text(SUITE)
    diff = {"spec": "RD-3", "spec_says": "MS host", "openpbs_does": "primary execution host", "evidence": "line"}
    results = {
        "tests": [
            {**_result("ptl_tests/test_x.py::test_release_one", "xfailed", ["RD-1", "RD-3"]), "differences": [diff]},
            _result("ptl_tests/test_x.py::TestErrors::test_error", "skipped", ["RD-6"]),
        ]
    }
    rows = {r.id: r for r in report.build(catalogue.load(), results, suite)}
    assert rows["RD-3"].status == "xfail"
    assert rows["RD-3"].differences == [diff]
    assert rows["RD-6"].status == "skipped"


def test_reports_are_written_with_every_entry(tmp_path: Path) -> None:
    cat = catalogue.load()
    paths = report.write_all(cat, {}, ROOT / "ptl_tests", tmp_path)
    page = paths[0].read_text()
    assert all(f"<b>{i}</b>" in page for i in cat.ids())
    md = paths[1].read_text()
    assert all(f"| {i} |" in md for i in cat.ids())


def test_every_spec_marker_in_the_suites_names_a_catalogue_entry() -> None:
    known = set(catalogue.load().ids())
    used = tags.scan(ROOT / "ptl_tests")
    unknown = sorted(set(used) - known)
    assert not unknown, f"spec markers naming no catalogue entry: {unknown}"
    uncovered = sorted(known - set(used))
    # Not a failure: the report shows these as "not covered". Printed for `pytest -s`.
    print(f"catalogue entries with no test yet ({len(uncovered)}): {', '.join(uncovered)}")  # noqa: T201


# --- verdicts from the guards ----------------------------------------------------------------------

GUARDED = """
import pytest

PINNED = pytest.mark.xfail(strict=True, raises=KeyError, reason="a pinned OpenPBS bug")


@pytest.mark.spec("RD-3", "RD-4")
@pytest.mark.guards("RD-3")
def test_records():
    pass


@pytest.mark.spec("RD-3")
@pytest.mark.guards("RD-3")
def test_records_after_restart():
    pass


@pytest.mark.spec("RD-3", "RD-4")
def test_only_waits():
    pass


@PINNED
@pytest.mark.spec("RD-5")
@pytest.mark.guards("RD-5")
def test_pinned_bug():
    pass
"""
RECORDS = "ptl_tests/test_g.py::test_records"
AFTER_RESTART = "ptl_tests/test_g.py::test_records_after_restart"
ONLY_WAITS = "ptl_tests/test_g.py::test_only_waits"
PINNED = "ptl_tests/test_g.py::test_pinned_bug"
SPECS = {RECORDS: ["RD-3", "RD-4"], AFTER_RESTART: ["RD-3"], ONLY_WAITS: ["RD-3", "RD-4"], PINNED: ["RD-5"]}


@pytest.fixture
def guarded(tmp_path: Path) -> Path:
    suite = tmp_path / "ptl_tests"
    suite.mkdir()
    (suite / "test_g.py").write_text(GUARDED)
    return suite


def _run(**outcomes: str) -> dict:
    """Results of a run (written before the recorder kept guards: the suite's markers tell them)."""
    nodeids = {"records": RECORDS, "after_restart": AFTER_RESTART, "only_waits": ONLY_WAITS, "pinned": PINNED}
    return {"tests": [_result(nodeids[k], outcome, SPECS[nodeids[k]]) for k, outcome in outcomes.items()]}


def _rows(suite: Path, results: dict) -> dict[str, report.InterfaceResult]:
    return {r.id: r for r in report.build(catalogue.load(), results, suite)}


def test_a_pinned_bug_in_one_guard_does_not_hide_that_the_others_pass(guarded: Path) -> None:
    rows = _rows(guarded, _run(records="passed", after_restart="xfailed", only_waits="xfailed", pinned="xfailed"))
    rd3 = rows["RD-3"]
    # Both xfails are shown next to the pass (one guards, one does not): labels never say plain "pass"
    # above an xfail (#35).
    assert (rd3.status, rd3.known_bugs, rd3.label) == ("pass", 2, "pass (2 known bugs)")
    assert rd3.outcomes == {"passed": 1, "failed": 0, "xfailed": 2, "skipped": 0, "not in this release": 0}
    assert rd3.guards == [RECORDS, AFTER_RESTART]
    assert rd3.weakly_guarded is None
    # RD-4 has no guard: every tagged test decides, and the row says why it is weak.
    assert (rows["RD-4"].label, rows["RD-4"].weakly_guarded) == ("pass (1 known bug)", guards.NO_GUARD)
    # RD-5's only guard is an expected failure as a whole.
    assert (rows["RD-5"].status, rows["RD-5"].weakly_guarded) == ("xfail", guards.ONLY_XFAIL)
    assert rows["RD-6"].weakly_guarded == guards.NO_GUARD  # no test at all


def test_an_xfail_of_a_test_that_guards_nothing_leaves_the_verdict_alone(guarded: Path) -> None:
    """The status stays pass; the label still shows the pinned bug, as every label with an xfail does."""
    rows = _rows(guarded, _run(records="passed", after_restart="passed", only_waits="xfailed"))
    assert (rows["RD-3"].status, rows["RD-3"].label, rows["RD-3"].outcomes["xfailed"]) == (
        "pass",
        "pass (1 known bug)",
        1,
    )


def test_a_red_test_is_never_hidden_guard_or_not(guarded: Path) -> None:
    rows = _rows(guarded, _run(records="passed", after_restart="passed", only_waits="failed"))
    assert rows["RD-3"].status == "fail"
    rows = _rows(guarded, _run(records="error", after_restart="passed", only_waits="passed"))
    assert rows["RD-3"].status == "fail"
    assert rows["RD-3"].outcomes == {
        "passed": 2,
        "failed": 1,
        "xfailed": 0,
        "skipped": 0,
        "not in this release": 0,
    }  # error counts as failed
    rows = _rows(guarded, _run(pinned="xpassed"))
    assert rows["RD-5"].status == "fail"


def test_guards_that_did_not_run_or_all_xfailed_give_no_pass(guarded: Path) -> None:
    rows = _rows(guarded, _run(only_waits="passed"))  # e.g. -k only_waits: no guard of RD-3 ran
    assert rows["RD-3"].status == "incomplete"
    assert rows["RD-3"].untested == [RECORDS, AFTER_RESTART]
    rows = _rows(guarded, _run(records="passed", after_restart="skipped", only_waits="passed"))
    assert rows["RD-3"].status == "incomplete"
    rows = _rows(guarded, _run(records="xfailed", after_restart="xfailed", only_waits="passed"))
    assert (rows["RD-3"].status, rows["RD-3"].known_bugs) == ("xfail", 0)
    rows = _rows(guarded, _run(records="skipped", after_restart="skipped"))
    assert rows["RD-3"].status == "skipped"
    rows = _rows(guarded, {})
    assert (rows["RD-3"].status, rows["RD-5"].status, rows["RD-6"].status) == ("not run", "not run", "not covered")


def test_a_parameter_guards_only_what_its_own_marks_say(guarded: Path) -> None:
    """The recorder writes each test's guards, parameter marks included: a case that guards nothing
    (here: xfailed) is no known bug of the interface."""
    results = {
        "tests": [
            {**_result(f"{RECORDS}[listed]", "passed", SPECS[RECORDS]), "guards": ["RD-3"]},
            {**_result(f"{RECORDS}[silent]", "xfailed", SPECS[RECORDS]), "guards": []},
            {**_result(AFTER_RESTART, "passed", SPECS[AFTER_RESTART]), "guards": ["RD-3"]},
        ]
    }
    rd3 = _rows(guarded, results)["RD-3"]
    assert (rd3.status, rd3.label, rd3.outcomes["xfailed"]) == ("pass", "pass (1 known bug)", 1)
    assert [rd3.guarded_by(t) for t in rd3.tests] == [True, False, True]


def test_guards_the_run_carried_count_without_the_suites_source(tmp_path: Path) -> None:
    """A results file of another checkout: its tests' guards come with it."""
    results = {"tests": [{**_result("ptl_tests/test_z.py::test_z", "passed", ["RD-6"]), "guards": ["RD-6"]}]}
    rd6 = _rows(tmp_path / "none", results)["RD-6"]
    assert (rd6.status, rd6.guards, rd6.weakly_guarded) == ("pass", ["ptl_tests/test_z.py::test_z"], None)


def test_a_listed_gap_says_why_it_is_weakly_guarded(guarded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(guards.UNGUARDED, "RD-7", "no test can read the hidden attributes here")
    assert _rows(guarded, {})["RD-7"].weakly_guarded == "no test can read the hidden attributes here"


def test_the_reports_show_status_outcomes_and_guards(guarded: Path, tmp_path: Path) -> None:
    results = _run(records="passed", after_restart="xfailed", only_waits="passed", pinned="xfailed")
    html_path, md_path, json_path = report.write_all(catalogue.load(), results, guarded, tmp_path / "out")
    md = md_path.read_text()
    assert "| id | interface | status | outcomes | tests | guards | differences |" in md
    row = next(line for line in md.splitlines() if line.startswith("| RD-3 |"))
    assert "| pass (1 known bug) | 2 passed, 1 xfailed |" in row
    tests = "test_records [guard]: passed<br>test_records_after_restart [guard]: xfailed<br>test_only_waits: passed"
    assert tests in row
    assert "| 2 guards<br>test_records<br>test_records_after_restart |" in row
    row = next(line for line in md.splitlines() if line.startswith("| RD-5 |"))
    assert f"| **weakly guarded: {guards.ONLY_XFAIL}**<br>test_pinned_bug |" in row
    assert "- Known OpenPBS bugs pinned next to passes: 1 xfail(s) in 1 interface(s) that otherwise work (RD-3)" in md
    assert f"- **Weakly guarded** ({len(catalogue.load()) - 1} of {len(catalogue.load())} interfaces): " in md
    data = json.loads(json_path.read_text())
    rd3 = next(i for i in data["interfaces"] if i["id"] == "RD-3")
    assert (rd3["status"], rd3["label"], rd3["known_bugs"]) == ("pass", "pass (1 known bug)", 1)
    assert rd3["outcomes"] == {"passed": 2, "failed": 0, "xfailed": 1, "skipped": 0, "not in this release": 0}
    assert (rd3["guards"], rd3["weakly_guarded"]) == ([RECORDS, AFTER_RESTART], None)
    assert data["known_bugs"] == {"RD-3": 1}
    assert data["weakly_guarded"]["RD-5"] == guards.ONLY_XFAIL
    page = html_path.read_text()
    assert ">pass (1 known bug)</span>" in page
    assert "<summary>2 guards</summary><div>test_records</div><div>test_records_after_restart</div>" in page
    assert ">weakly guarded</span>" in page


def test_each_version_has_its_own_status_and_counts_side_by_side(guarded: Path, tmp_path: Path) -> None:
    def on(cluster: str, nodeid: str, outcome: str) -> dict:
        return {**_result(nodeid, outcome, SPECS[nodeid]), "cluster": cluster}

    results = {
        "clusters": [{"cluster": "pa", "pbs_version": "23.06.06"}, {"cluster": "vm", "pbs_version": "22.05.11"}],
        "tests": [
            on("pa", RECORDS, "passed"),
            on("pa", AFTER_RESTART, "passed"),
            on("vm", RECORDS, "passed"),
            on("vm", AFTER_RESTART, "xfailed"),
        ],
    }
    _, md_path, json_path = report.write_all(catalogue.load(), results, guarded, tmp_path / "out")
    row = next(line for line in md_path.read_text().splitlines() if line.startswith("| RD-3 |"))
    assert "**pass**<br>test_records [guard] on pa: passed" in row
    assert "**pass (1 known bug)**<br>test_records [guard] on vm: passed" in row
    assert "(1 passed, 1 xfailed)" in row
    sides = json.loads(json_path.read_text())["side_by_side"]
    assert [s["known_bugs"] for s in sides] == [{}, {"RD-3": 1}]


def test_the_reports_list_the_runs_baseline_repairs(tmp_path: Path) -> None:
    """Repairs reach the header from each test's entry in results.json (pbs_harness.conformance.recorder)."""
    repair = "at session start: vnode sh03 offline (declared: online): offline cleared"
    results = {
        "tests": [
            {"nodeid": "ptl_tests/x.py::test_a", "outcome": "passed", "cluster": "sh", "baseline_repairs": [repair]},
            {"nodeid": "ptl_tests/x.py::test_b", "outcome": "passed", "baseline_repairs": []},
        ]
    }
    html_path, md_path, json_path = report.write_all(catalogue.load(), results, ROOT / "ptl_tests", tmp_path)
    md = md_path.read_text()
    assert "- **Baseline repairs** (1): what the harness repaired" in md
    assert f"  - {repair} (with test_a on sh)" in md
    assert f"{repair} (with test_a on sh)" in html_path.read_text()
    header = json.loads(json_path.read_text())["header"]
    assert header["baseline_repairs"] == [{"test": "test_a", "cluster": "sh", "repair": repair}]
    clean = report.write_all(catalogue.load(), {"tests": []}, ROOT / "ptl_tests", tmp_path / "clean")
    assert "- Baseline repairs: none" in clean[1].read_text()
