"""The first screen of the conformance report (#35): the one-line verdict, a row per feature, FAIL as
prominent as PASS naming the failed interfaces, merged provenance, anchors, and the CI summary.
Reports are written by the real report code from SYNTHETIC results (report_fixtures: the suite,
outcomes and clusters are made up; the commits and archives are those in /work/shared/openpbs)."""

from __future__ import annotations

from pathlib import Path

from pbs_harness.conformance import catalogue, ci_summary, headline, report
from tests.unit import report_fixtures as fx

PASSES = {fx.MIDDLE: "passed", fx.AFTER_RESTART: "passed", fx.SUSPEND: "xfailed", fx.RESIZE: "passed"}


def _results(outcomes: dict[str, str], clusters: tuple[str, ...] = ("pa", "pb")) -> dict:
    envs = [fx.env(c, fx.MASTER) for c in clusters]
    tests = [
        {**fx.result(n, o, clusters[i % len(clusters)]), "xfail_reason": f"OpenPBS bug {i}"} if o == "xfailed"
        else fx.result(n, o, clusters[i % len(clusters)])
        for i, (n, o) in enumerate(outcomes.items())
    ]  # fmt: skip
    return {"started": "2026-01-01T10:00:00", "finished": "2026-01-01T11:00:00", "environment": envs[0],
            "clusters": envs, "tests": tests}  # fmt: skip


def _write(tmp_path: Path, results: dict) -> tuple[str, str, Path]:
    suite = fx.suite(tmp_path / "suite")
    html_path, md_path, _ = report.write_all(catalogue.load(), results, suite, tmp_path / "out")
    return html_path.read_text(), md_path.read_text(), suite


def test_a_passing_run_says_so_in_one_line_before_anything_else(tmp_path: Path) -> None:
    page, md, suite = _write(tmp_path, _results(PASSES))
    line = report.headline_of(catalogue.load(), _results(PASSES), suite).line()
    assert line.startswith("PASS — 3/4 features conform (1 not run) · 4 tests: 3 passed, 1 xfailed")
    assert "(1 known OpenPBS bug), 0 failed · OpenPBS master cd7ab5e" in line
    # The verdict comes right after the title, before any provenance or cluster line.
    assert page.index("id='verdict' class='verdict pass'") < page.index("Run details") < page.index("openpbs-master")
    assert md.splitlines()[2] == f"**{line}**"
    # The two clusters of one build share one provenance line, not one block each.
    assert page.count("openpbs-master-cd7ab5e.tar.gz") == 1
    assert "on pa, pb:" in page


def test_a_failing_run_says_fail_as_prominently_and_names_the_interfaces(tmp_path: Path) -> None:
    page, md, _ = _write(tmp_path, _results({**PASSES, fx.AFTER_RESTART: "failed"}))
    assert (
        "class='verdict fail'><span class='state'>FAIL</span> — 2/4 features conform (1 not run), failed: RD-3" in page
    )
    assert "Failed tests (1)" in page
    assert "test_release_after_restart on pb" in page
    assert "| **FAIL: RD-3** |" in md


def test_every_interface_has_an_anchor_and_every_feature_a_section(tmp_path: Path) -> None:
    page, _, _ = _write(tmp_path, _results(PASSES))
    cat = catalogue.load()
    for ident in cat.ids():
        assert f"<tr id='{ident}'>" in page
    for key in cat.features:
        assert f"<h2 id='{key}'>" in page
        assert f"href='#{key}'" in page


def test_labels_show_known_bugs_wherever_a_test_xfailed(tmp_path: Path) -> None:
    page, _, _ = _write(tmp_path, _results({**PASSES, fx.AFTER_RESTART: "xfailed"}))
    rows = page.split("<tr id=")
    rd3 = next(r for r in rows if r.startswith("'RD-3'"))
    assert ">pass (1 known bug)</span>" in rd3  # its other guard passed
    assert ">pass</span>" in next(r for r in rows if r.startswith("'RD-1'"))


def test_build_names_read_like_the_archive(tmp_path: Path) -> None:
    assert headline.build_name(fx.env("pa", fx.MASTER)) == "master cd7ab5e"
    assert headline.build_name(fx.env("pa", fx.V23)) == "v23.06.06 be361a1"
    assert headline.build_name({"pbs_version": "23.06.06"}) == "23.06.06"


def test_no_tests_is_no_pass(tmp_path: Path) -> None:
    head = report.headline_of(catalogue.load(), {"tests": []}, fx.suite(tmp_path))
    assert head.state == "NO TESTS"
    assert head.line().startswith("NO TESTS — 0/4 features conform (4 not run) · 0 tests")


def test_the_ci_summary_is_short_and_goes_where_ci_reads_it(tmp_path: Path, capsys) -> None:
    results = _results({**PASSES, fx.AFTER_RESTART: "failed"})
    head = report.headline_of(catalogue.load(), results, fx.suite(tmp_path))
    text = ci_summary.markdown(head, results)
    assert text.startswith("### OpenPBS conformance: FAIL\n\n" + head.line())
    assert "- `ptl_tests/test_fx.py::test_release_after_restart`" in text
    assert len(text.splitlines()) <= 25
    summary = tmp_path / "summary.md"
    assert ci_summary.publish(text, {}) == []
    assert ci_summary.publish(text, {"GITHUB_STEP_SUMMARY": str(summary), "GITLAB_CI": "true"}) == [
        str(summary),
        "the job log",
    ]
    assert summary.read_text() == text
    assert capsys.readouterr().out == text
