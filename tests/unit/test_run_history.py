"""The run history and trends between runs (#35; pbs_harness.conformance.history): what `report` keeps in
reports/history/ and what its reports say changed since the previous run. The runs are SYNTHETIC
results files written here (no cluster); the report code that reads them is the real one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pbs_harness.common import errors
from pbs_harness.conformance import history
from tests.unit.badinput import assert_refused, run_cli

A = "ptl_tests/ramp_down/test_x.py::test_a"
B = "ptl_tests/ramp_down/test_x.py::test_b"
C = "ptl_tests/ramp_down/test_x.py::test_c"
D = "ptl_tests/ramp_down/test_x.py::test_d"


def run(started: str, outcomes: dict[str, str], durations: dict[str, float] | None = None) -> dict:
    tests = [
        {"nodeid": n, "outcome": o, "duration": (durations or {}).get(n, 10.0), "specs": [], "guards": [],
         "differences": []}
        for n, o in outcomes.items()
    ]  # fmt: skip
    return {"started": started, "finished": started, "environment": {}, "tests": tests}


def entry(results: dict) -> dict:
    return history.entry(results, "PASS — x", "PASS", {}, [])


def test_new_failures_fixed_tests_and_flaky_ones() -> None:
    runs = [
        entry(run("2026-11-01T10:00:00", {A: "passed", B: "failed", C: "passed", D: "passed"})),
        entry(run("2026-11-02T10:00:00", {A: "passed", B: "failed", C: "failed", D: "passed"})),
    ]
    now = entry(run("2026-11-03T10:00:00", {A: "failed", B: "passed", C: "passed", "new": "passed"}))
    trend = history.trend(now, runs)
    assert trend is not None
    assert [(c.nodeid, c.before, c.now) for c in trend.new_failures] == [(A, "passed", "failed")]
    assert [(c.nodeid, c.before, c.now) for c in trend.fixed] == [(B, "failed", "passed"), (C, "failed", "passed")]
    # C went passed -> failed -> passed: flaky, whatever it did this time; B changed once: only fixed
    assert [(c.nodeid, c.seen) for c in trend.flaky] == [(C, ("passed", "failed", "passed"))]
    assert trend.new_tests == ["new"]
    assert trend.gone_tests == [D]
    assert trend.line().startswith(
        "Since the previous run (2026-11-02T10:00:00, PASS): 1 new failure, 2 fixed, 1 flaky (over 3 runs)"
    )


def test_a_test_is_slower_only_by_half_again_and_half_a_minute_over_its_median() -> None:
    before = [entry(run(f"2026-11-0{i}T10:00:00", {A: "passed", B: "passed"}, {A: 40.0, B: 10.0})) for i in (1, 2)]
    now = entry(run("2026-11-03T10:00:00", {A: "passed", B: "passed"}, {A: 75.0, B: 30.0}))
    trend = history.trend(now, before)
    # A: 75 >= 1.5 * 40 and 35 s more; B tripled but by 20 s only (timing noise of a short test)
    assert [(s.nodeid, s.median, s.now) for s in trend.slower] == [(A, 40.0, 75.0)]


def test_no_earlier_run_no_trend() -> None:
    assert history.trend(entry(run("2026-11-03T10:00:00", {A: "passed"})), []) is None


def test_the_same_run_again_replaces_its_file_and_the_oldest_go(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(history, "KEEP", 2)
    for day in (1, 2, 2, 3):
        history.record(tmp_path, entry(run(f"2026-11-0{day}T10:00:00", {A: "passed"})))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run-20261102T100000.json", "run-20261103T100000.json"]
    (tmp_path / "run-broken.json").write_text("{")
    (tmp_path / "run-other.json").write_text("[]")
    runs, left_out = history.load(tmp_path)
    assert [r["started"] for r in runs] == ["2026-11-02T10:00:00", "2026-11-03T10:00:00"]
    assert [w.split(":")[0] for w in left_out] == ["run-broken.json", "run-other.json"]


def _write(path: Path, results: dict) -> Path:
    path.write_text(json.dumps(results))
    return path


def test_report_keeps_each_run_and_says_what_changed_since_the_previous_one(tmp_path: Path, capsys) -> None:
    out = tmp_path / "reports"
    first = _write(tmp_path / "first.json", run("2026-11-01T10:00:00", {A: "passed", B: "failed"}))
    second = _write(tmp_path / "second.json", run("2026-11-02T10:00:00", {A: "failed", B: "passed"}))
    assert run_cli(["report", "--results", str(first), "--out", str(out)], capsys)[0] == 0
    rc, said = run_cli(["report", "--results", str(second), "--out", str(out)], capsys)
    assert rc == 0
    line = "Since the previous run (2026-11-01T10:00:00, FAIL): 1 new failure, 1 fixed"
    assert line in said
    assert sorted(p.name for p in (out / "history").iterdir()) == [
        "run-20261101T100000.json",
        "run-20261102T100000.json",
    ]
    md = (out / "conformance.md").read_text()
    assert line in md
    assert "`test_a`: passed -> failed" in md
    assert "`test_b`: failed -> passed" in md
    assert "id='trend'" in (out / "conformance.html").read_text()
    since = json.loads((out / "conformance.json").read_text())["since_previous"]
    assert [c["nodeid"] for c in since["new_failures"]] == [A]
    # the same run reported again compares with the run before it, never with itself
    rc, said = run_cli(["report", "--results", str(second), "--out", str(out)], capsys)
    assert line in said
    assert len(list((out / "history").iterdir())) == 2
    # --since: against a run named, here the first results file itself
    rc, said = run_cli(["report", "--results", str(second), "--out", str(out), "--since", str(first)], capsys)
    assert rc == 0
    assert "1 new failure, 1 fixed" in said


def test_the_first_run_says_nothing_about_changes(tmp_path: Path, capsys) -> None:
    first = _write(tmp_path / "first.json", run("2026-11-01T10:00:00", {A: "passed"}))
    rc, said = run_cli(["report", "--results", str(first), "--out", str(tmp_path / "r")], capsys)
    assert rc == 0
    assert "Since the previous run" not in said
    assert "since_previous" not in json.loads((tmp_path / "r" / "conformance.json").read_text())


@pytest.mark.parametrize(
    ("since", "says"),
    [
        ("missing.json", "run to compare with {p} does not exist (or is not a file)"),
        ("bad.json", "run to compare with {p} is not valid JSON"),
    ],
)
def test_since_a_run_that_is_not_one(tmp_path: Path, capsys, since: str, says: str) -> None:
    now = _write(tmp_path / "now.json", run("2026-11-02T10:00:00", {A: "passed"}))
    (tmp_path / "bad.json").write_text("{")
    given = tmp_path / since
    out = tmp_path / "r"
    rc, said = run_cli(["report", "--results", str(now), "--out", str(out), "--since", str(given)], capsys)
    assert_refused(rc, said, errors.EXIT_PRECONDITION, says.format(p=given), "reports/history/")
    assert not (out / "history").exists()
    assert not (out / "conformance.html").exists()


def test_since_with_compare_is_refused(tmp_path: Path, capsys) -> None:
    rc, said = run_cli(["report", "--compare", "a.json", "b.json", "--since", "c.json"], capsys)
    assert_refused(rc, said, errors.EXIT_USAGE, "--since goes with a run's report, not with --compare")
