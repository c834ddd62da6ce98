"""What a run leaves for CI and for a reader beside the conformance report (#35): start and end times per
test in results.json, junit.xml with xfails as passes carrying the bug, times and cluster, the run
timeline (a Gantt chart with fault bands), and results.json without absolute paths. A real child pytest
session (pytester) writes the files; the fault windows and evidence paths are made up here."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

import pytest

from pbs_harness.conformance import junit, recorder, results, run_timeline

CHILD = """
import pytest

def test_passes():
    pass

def test_fails():
    assert 1 == 2

def test_skips():
    pytest.skip("needs 6 moms")

@pytest.mark.xfail(reason="OpenPBS bug: the one it pins", strict=True)
def test_xfails():
    assert False
"""
PLUGINS = ("-p", "pbs_harness.suite.plugin", "-p", "pbs_harness.conformance.recorder", "-p", "no:cacheprovider")


@pytest.fixture
def run(pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, Path]:
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path / "state"))
    pytester.makepyfile(test_run=CHILD)
    written, xml = tmp_path / "results.json", tmp_path / "junit.xml"
    child = pytester.runpytest_subprocess(*PLUGINS, "--results-json", str(written), "--junitxml", str(xml), timeout=120)
    child.assert_outcomes(passed=1, failed=1, skipped=1, xfailed=1)
    return results.load(written), xml


def test_every_test_has_its_start_and_end(run: tuple[dict, Path]) -> None:
    data, _ = run
    for test in data["tests"]:
        started, finished = datetime.fromisoformat(test["started"]), datetime.fromisoformat(test["finished"])
        assert started <= finished
        assert abs((finished - started).total_seconds() - test["duration"]) < 1.0


def test_junit_counts_an_xfail_as_a_pass_that_names_its_bug(run: tuple[dict, Path]) -> None:
    data, xml = run
    assert junit.annotate(xml, data) == 1
    suite = ET.parse(xml).getroot().find("testsuite")  # noqa: S314 - the child run's own file
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "1", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    xfail = cases["test_xfails"]
    assert xfail.find("skipped") is None
    props = {p.get("name"): p.get("value") for p in xfail.iter("property")}
    assert props["xfail"] == "OpenPBS bug: the one it pins"
    assert datetime.fromisoformat(props["started"]) <= datetime.fromisoformat(props["finished"])
    assert cases["test_skips"].find("skipped") is not None  # a real skip stays a skip


def test_the_run_timeline_draws_a_bar_per_test_and_a_band_per_fault(run: tuple[dict, Path], tmp_path: Path) -> None:
    data, _ = run
    first = data["tests"][0]
    first["cluster"] = "pa"
    first["faults"] = [
        {"kind": "host-crash", "target": "pa03", "started": first["started"], "healed": first["finished"]}
    ]
    page = run_timeline.write(tmp_path / "timeline.html", data).read_text()
    assert page.count("<rect class='test ") == 4
    assert page.count("<rect class='fault'") == 1
    assert "fault host-crash on pa03" in page
    assert "<script" not in page
    assert "http" not in page.replace("http://www.w3.org/2000/svg", "")  # nothing fetched
    old = run_timeline.write(tmp_path / "old.html", {"tests": [{"nodeid": "x::t", "outcome": "passed"}]}).read_text()
    assert "no timeline" in old


def test_results_json_holds_no_absolute_path(tmp_path: Path) -> None:
    rec = recorder.Recorder.__new__(recorder.Recorder)
    rec.started, rec.environments = "2026-01-01T10:00:00", {}
    evidence = tmp_path / "reports" / "evidence" / "run-1" / "test_x"
    rec.tests = {"t": {"nodeid": "t.py::test_x", "outcome": "failed", "duration": 1.0, "specs": [], "guards": [],
                       "differences": [], "evidence": str(evidence)}}  # fmt: skip
    path = tmp_path / "reports" / "results.json"
    recorder.write_results(rec, path)
    assert json.loads(path.read_text())["tests"][0]["evidence"] == "evidence/run-1/test_x"
    assert str(tmp_path) not in path.read_text()
    assert results.load(path)["tests"][0]["evidence"] == str(evidence)  # read back against the file's folder


def test_pytest_html_links_the_evidence_folder(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """The recorder puts the evidence's index.html into pytest-html's Links column (the folder is made
    up here: a test stands in for the plugin's fixture by adding the `evidence` property)."""
    pytester.makepyfile(
        test_ev=f"""
def test_ev(record_property):
    record_property("evidence", {str(tmp_path / "reports" / "evidence" / "t")!r})
"""
    )
    page = tmp_path / "reports" / "acceptance.html"
    plugins = ("-p", "pbs_harness.conformance.recorder", "-p", "no:cacheprovider")
    child = pytester.runpytest_subprocess(*plugins, "--results-json", str(tmp_path / "r.json"), "--html", str(page))
    child.assert_outcomes(passed=1)
    assert "evidence/t/index.html" in page.read_text()
