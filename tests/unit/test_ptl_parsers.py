"""PTL side by side (pbs_harness.ptl): what is read from PTL's files and results, on texts shaped like
OpenPBS's (a PTL test file's decorators, PTL's JSON results as ptl_report_json.py writes them, upstream
CI's account lines), and the report made from them. Nothing runs PTL or PBS here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pbs_harness.ptl import report, results, selection
from pbs_harness.ptl.results import Outcome

PTL_FILE = """
from tests.functional import *


@requirements(num_moms=3)
class TestThree(TestFunctional):
    def setUp(self):
        pass

    def test_plain(self):
        pass

    @timeout(400)
    def test_with_timeout(self):
        pass

    def helper_not_a_test(self):
        pass


class TestOne(TestFunctional):
    def test_a(self):
        pass

    @requirements(num_moms=2)
    def test_two(self):
        pass

    @skipOnCpuSet
    def test_b(self):
        pass
"""


def test_tests_and_their_declared_moms_come_from_the_decorators() -> None:
    assert selection.read_tests(PTL_FILE, "TestThree") == [
        selection.PtlTest("test_plain", 3),
        selection.PtlTest("test_with_timeout", 3),
    ]
    one = selection.read_tests(PTL_FILE, "TestOne")
    assert [(t.name, t.num_moms) for t in one] == [("test_a", 1), ("test_two", 2), ("test_b", 1)]


def test_a_file_runs_in_groups_by_mom_count_each_with_its_tests_in_file_order() -> None:
    whole = selection.PtlFile("admin_suspend", "functional/x.py", "TestOne")
    groups = selection.groups(whole, PTL_FILE)
    assert [(g.num_moms, g.tests) for g in groups] == [(1, ("test_a", "test_b")), (2, ("test_two",))]
    assert groups[0].selector == "TestOne.test_a,TestOne.test_b"
    subset = selection.PtlFile("resv_reconfirm", "functional/x.py", "TestOne", ("test_b", "test_two"))
    assert [(g.num_moms, g.tests) for g in selection.groups(subset, PTL_FILE)] == [(1, ("test_b",)), (2, ("test_two",))]


def test_a_selected_test_or_class_missing_from_the_file_is_an_error_naming_it() -> None:
    with pytest.raises(selection.SelectionError, match="TestOne has no test test_gone"):
        selection.groups(selection.PtlFile("f", "functional/x.py", "TestOne", ("test_a", "test_gone")), PTL_FILE)
    with pytest.raises(selection.SelectionError, match="class TestNone not found"):
        selection.read_tests(PTL_FILE, "TestNone")


def test_the_selection_covers_four_features_with_the_issue_s_files() -> None:
    assert selection.FEATURES == ("reliable_startup", "ramp_down", "admin_suspend", "resv_reconfirm")
    assert [f.path.split("/")[-1] for f in selection.FILES if f.feature == "resv_reconfirm"] == [
        "pbs_reservations.py",
        "pbs_maintenance_reservations.py",
        "pbs_resv_confirm_hook.py",
        "pbs_conf_resv_stale_vnode.py",
    ]
    assert all(not f.tests for f in selection.FILES if f.feature != "resv_reconfirm")


def test_a_sample_is_given_per_feature_or_for_all() -> None:
    assert selection.parse_limits("2") == dict.fromkeys(selection.FEATURES, 2)
    assert selection.parse_limits("0") == dict.fromkeys(selection.FEATURES)
    assert selection.parse_limits("ramp_down=3,reliable_startup=0") == {"ramp_down": 3, "reliable_startup": None}
    with pytest.raises(ValueError, match="'rampdown=3': expected N or FEATURE=N"):
        selection.parse_limits("rampdown=3")


def _case(status: str, duration: str, data: str = "") -> dict:
    return {"docstring": "", "requirements": {"num_moms": 1}, "results": {"1": {
        "status": status, "status_data": data, "duration": duration, "start_time": "2026-11-25 18:53:02.278375",
        "end_time": "2026-11-25 18:53:25.761220", "measurements": []}}}  # fmt: skip


RESULTS = {
    "command": "pbs_benchpress -t ...",
    "testsuites": {
        "TestAdminSuspend": {
            "module": "tests.functional.pbs_admin_suspend",
            "file": "tests/functional/pbs_admin_suspend.py",
            "testcases": {
                "test_basic": _case("PASS", "0:00:23.482845"),
                "test_cmd_perm": _case(
                    "FAIL", "0:01:02.5", "Traceback (most recent call last):\n  File ...\nAssertionError: not found\n"
                ),
                "test_hook": _case("ERROR", "1 day, 0:00:01"),
                "test_list_jobs_1": _case("SKIP", "0:00:00.1", "test supported only in CLI mode"),
                "test_loop": _case("TIMEDOUT", "0:10:00"),
            },
        }
    },
    "test_summary": {"1": {"result_summary": {"run": 5}}},
}


def test_ptl_json_results_give_each_test_s_status_reason_and_seconds() -> None:
    outs = {o.test: o for o in results.parse(json.dumps(RESULTS))}
    assert outs["test_basic"] == Outcome("TestAdminSuspend", "test_basic", "PASS", "", 23.482845)
    assert outs["test_cmd_perm"].seconds == 62.5
    assert outs["test_hook"].seconds == 86401.0
    assert {t: o.count for t, o in outs.items()} == {
        "test_basic": "passed",
        "test_cmd_perm": "failed",
        "test_hook": "failed",  # ERROR: an exception outside an assert, setUp included
        "test_list_jobs_1": "skipped",
        "test_loop": "failed",  # TIMEDOUT
    }
    assert results.counts(list(outs.values()), asked=7) == {
        "tests": 7, "passed": 1, "failed": 3, "skipped": 1, "not_run": 2}  # fmt: skip


def test_a_repeated_test_counts_by_its_last_repeat() -> None:
    data = json.loads(json.dumps(RESULTS))
    runs = data["testsuites"]["TestAdminSuspend"]["testcases"]["test_basic"]["results"]
    runs["2"] = dict(runs["1"], status="FAIL")
    outs = {o.test: o for o in results.parse(json.dumps(data))}
    assert outs["test_basic"].status == "FAIL"


@pytest.mark.parametrize(
    ("text", "message"),
    [("not json", "not JSON"), ('{"testsuites": []}', "no `testsuites`"), ("[1]", "no `testsuites`")],
)
def test_what_is_not_ptl_json_results_is_refused(text: str, message: str) -> None:
    with pytest.raises(results.ResultsError, match=message):
        results.parse(text)


def test_a_duration_that_is_not_ptl_s_is_refused() -> None:
    with pytest.raises(results.ResultsError, match="not a PTL duration"):
        results.seconds("62s")


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="5">
<testcase classname="ptl_tests.admin_suspend.test_a" name="test_ok" time="3.1"/>
<testcase classname="ptl_tests.admin_suspend.test_a" name="test_bug" time="9.0">
  <skipped type="pytest.xfail" message="OpenPBS bug"/></testcase>
<testcase classname="ptl_tests.admin_suspend.test_a" name="test_no_host" time="0.1">
  <skipped type="pytest.skip" message="needs 3 hosts"/></testcase>
<testcase classname="ptl_tests.admin_suspend.test_a" name="test_broken" time="1.0"><failure message="x"/></testcase>
<testcase classname="ptl_tests.admin_suspend.test_a" name="test_err" time="1.0"><error message="y"/></testcase>
</testsuite></testsuites>"""


def test_our_suite_s_counts_come_from_its_junit_file() -> None:
    assert report.suite_counts(JUNIT) == {"tests": 5, "passed": 1, "xfailed": 1, "failed": 2, "skipped": 1}


def _files() -> list[report.FileResult]:
    outs = results.parse(json.dumps(RESULTS))
    return [
        report.file_result("admin_suspend", "functional/pbs_admin_suspend.py", 6, outs, 600.0),
        report.file_result("ramp_down", "functional/pbs_node_rampdown.py", 2, [], 100.0, in_file=4),
        report.file_result("ramp_down", "functional/pbs_node_rampdown_keep_select.py", 1, [], 200.0),
    ]


def test_each_ptl_file_is_one_row_with_its_feature_suite_s_figures_and_the_ratio_is_per_feature() -> None:
    suites = {
        "admin_suspend": report.SuiteResult("admin_suspend", 26, 25, 1, 0, 0, 300.0),
        "ramp_down": report.SuiteResult("ramp_down", 83, 80, 3, 0, 0, 600.0),
    }
    rows = report.rows(_files(), suites)
    keys = ["feature", "ptl_file", "ptl_tests", "ptl_passed", "ptl_failed", "ptl_skipped", "ptl_seconds",
            "ours_tests", "ours_passed", "ours_seconds"]  # fmt: skip
    assert all(set(keys) <= set(r) for r in rows)
    assert [r[k] for k in keys for r in rows[:1]] == [
        "admin_suspend", "functional/pbs_admin_suspend.py", 6, 1, 3, 1, 600.0, 26, 25, 300.0]  # fmt: skip
    assert rows[0]["ptl_not_run"] == 1
    assert rows[0]["ptl_failures"][0] == {
        "test": "test_cmd_perm",
        "status": "FAIL",
        "reason": "AssertionError: not found",
    }
    assert rows[1]["ours_seconds"] == rows[2]["ours_seconds"] == 600.0
    assert report.ratios(_files(), suites) == {"admin_suspend": 2.0, "ramp_down": 0.5, "all": 1.0}
    # pbs_node_rampdown.py ran 2 of its 4 tests in 100 s: 200 s estimated for the whole file.
    assert rows[1]["ptl_seconds_full_estimate"] == 200.0
    assert report.ratios(_files(), suites, full=True) == {"admin_suspend": 2.0, "ramp_down": round(400 / 600, 2),
                                                          "all": round(1000 / 900, 2)}  # fmt: skip


def test_a_feature_whose_suite_did_not_run_has_no_ratio_and_is_left_out_of_the_whole() -> None:
    suites = {"admin_suspend": report.SuiteResult("admin_suspend", 26, 25, 1, 0, 0, 300.0)}
    assert report.ratios(_files(), suites) == {"admin_suspend": 2.0, "ramp_down": None, "all": 2.0}
    assert report.ratios(_files(), {})["all"] is None
    assert report.rows(_files(), {})[0]["ours_tests"] is None


def test_a_failure_s_reason_is_the_exception_line_even_when_a_diff_follows() -> None:
    diff = "Traceback (most recent call last):\n  File x\nAssertionError: 'a\\nb' != 'b\\na'\n  a\n+ b\n  pt05\n"
    assert report.first_line(diff) == "AssertionError: 'a\\nb' != 'b\\na'"
    assert report.first_line("test supported only in CLI mode") == "test supported only in CLI mode"
    assert report.first_line("") == ""


def test_the_markdown_table_gives_the_ratio_failures_and_skips() -> None:
    suites = {"admin_suspend": report.SuiteResult("admin_suspend", 26, 25, 1, 0, 0, 300.0)}
    md = report.markdown(_files(), suites, {"cluster": "pt: 6 hosts"})
    assert "- cluster: pt: 6 hosts" in md
    assert "| admin_suspend | functional/pbs_admin_suspend.py | 6 (6) | 1 | 3 | 1 | 1 | 600 s (10.0 min) |" in md
    assert "| ramp_down | functional/pbs_node_rampdown.py | 2 (4) | 0 | 0 | 0 | 2 | 100 s (1.7 min) |" in md
    whole = "| admin_suspend | 6 (1) | 600 s (10.0 min) | 26 | 25 | 1 | 0 | 300 s (5.0 min) | 2.0 "
    assert whole + "| 600 s (10.0 min) | 2.0 |" in md
    assert "| ramp_down | 3 (2) | 300 s (5.0 min) | - | - | - | - | - | - | 400 s (6.7 min) | - |" in md
    # The whole-run ratio compares different scopes and the sample's estimate is labelled one: neither in bold.
    assert "ratio PTL/ours 2.0; with PTL's whole files estimated from the sample (an estimate), 2.0." in md
    assert "**" not in md  # no headline without the same-scenario pairing (pbs_harness.ptl.scenarios)
    assert "| functional/pbs_admin_suspend.py | test_cmd_perm | FAIL | `AssertionError: not found` |" in md
    assert "| functional/pbs_admin_suspend.py | test_list_jobs_1 | `test supported only in CLI mode` |" in md


def test_the_bench_script_explains_itself_and_refuses_an_unknown_feature() -> None:
    script = Path(__file__).resolve().parents[2] / "bench" / "bench_ptl.py"
    shown = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, check=True)
    assert "--limit" in shown.stdout
    assert "OpenPBS's own PTL test files" in shown.stdout
    bad = subprocess.run(
        [sys.executable, str(script), "--features", "rampdown"], capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2
    assert "unknown feature rampdown" in bad.stderr
