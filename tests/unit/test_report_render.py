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
