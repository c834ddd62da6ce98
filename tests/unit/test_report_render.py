"""The reports as a reader sees them, in a real browser (#35): bench/check_report_render.py renders a
report made here from a RECORDED results file (tests/unit/data/results-rp-run.json: a real focused run
on one local cluster, 2026-11-28, OpenPBS master cd7ab5e; its evidence paths removed, the folders are
not kept) in headless Chromium at 1400 px and checks the verdict is on the first screen, nothing
scrolls sideways, every link resolves and the Gantt chart is there. Skipped, saying so, without
Debian's chromium."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pbs_harness.cli import test as cli_test

ROOT = Path(__file__).resolve().parents[2]
RECORDED = Path(__file__).parent / "data" / "results-rp-run.json"


@pytest.mark.skipif(
    shutil.which("chromium") is None, reason="chromium not found: apt-get install -y chromium (Debian's package)"
)
def test_the_report_of_a_recorded_run_renders_well_at_1400_px(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    out.mkdir()
    (out / "acceptance.html").write_text("<!doctype html><p>pytest-html stand-in</p>")  # linked when present
    cli_test.write_report(RECORDED, out)
    check = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "check_report_render.py"), str(out / "conformance.html")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert (out / "conformance.png").stat().st_size > 10_000


def test_the_check_finds_links_that_do_not_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker's own part that needs no browser: links to files and anchors."""
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import check_report_render as render  # a script, found by path

    (tmp_path / "t.html").write_text("<a href='#here'>x</a><p id='here'></p><a href='gone.html'>y</a>"
                                     "<a href='t.html#nowhere'>z</a><a href='https://example.org/'>w</a>")  # fmt: skip
    assert render.broken_links(tmp_path / "t.html") == [
        "t.html: link to a missing file: gone.html",
        "t.html: link to a missing anchor: t.html#nowhere",
        "t.html: link leaves the report folder: https://example.org/",
    ]


LONG_FAILURES = """
import pytest

ATTRS = {("Job_Name_" + str(i)): ("x" * 40 + str(i)) for i in range(30)}
VNODE = "+".join(f"(pbshc{n:02d}:ncpus=1:mem=1048576kb)" for n in range(1, 60))


@pytest.mark.spec("RJS-1")
def test_job_array_pruned_per_subjob_in_prologue_with_a_very_long_name_that_goes_on_and_on_and_on():
    assert VNODE == VNODE.replace("pbshc05", "pbshc06"), {"exec_vnode": VNODE, "attrs": ATTRS}


@pytest.mark.spec("RJS-2")
@pytest.mark.parametrize("shape", ["select=" + "+".join(["1:ncpus=1"] * 40)])
def test_sister_failing_during_its_prologue_is_waited_for_then_pruned(shape):
    print("log line: /var/spool/pbs/mom_logs/" + "a" * 600)
    raise AssertionError("qstat -F json said " + str(ATTRS).replace(" ", ""))
"""


@pytest.mark.skipif(
    shutil.which("chromium") is None, reason="chromium not found: apt-get install -y chromium (Debian's package)"
)
def test_failures_with_long_unbreakable_text_stay_within_1400_px(pytester: pytest.Pytester) -> None:
    """CI failed on a run with 2 failing tests: acceptance.html was 1691 px wide (its TABLE). Fake failing
    tests (no PBS: only their messages matter) whose node ids, messages and output carry long unbreakable
    text go through the same report path (recorder + pytest-html, then write_report); every page the
    check measures stays within 1400 px (before the fix: acceptance.html 12716 px, conformance.html 4664 px)."""
    pytester.makepyfile(test_long=LONG_FAILURES)
    out = pytester.path / "reports"
    out.mkdir()
    plugins = ("-p", "pbs_harness.conformance.recorder", "-p", "pbs_harness.suite.parallel.binding")
    child = pytester.runpytest_subprocess(
        *plugins, "-p", "no:cacheprovider", "--results-json", str(out / "results.json"),
        "--html", str(out / "acceptance.html"), "--self-contained-html",
    )  # fmt: skip
    child.assert_outcomes(failed=2)
    assert "a" * 600 in (out / "acceptance.html").read_text()  # shown whole, not cut
    cli_test.write_report(out / "results.json", out)
    check = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "check_report_render.py"), str(out / "conformance.html")],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
