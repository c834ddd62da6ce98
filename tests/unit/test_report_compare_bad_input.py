"""Bad input of `report --compare A B` and `report --matrix A ...` (docs/bad-input.md): refused with
the message, the fix and the exit code of the README's table, and nothing written. The good
reports are conformance.json files the real report code wrote from SYNTHETIC results
(tests/unit/report_fixtures.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pbs_harness.common import errors
from tests.unit import report_fixtures as fx
from tests.unit.badinput import assert_refused, run_cli, snapshot

PRECONDITION, USAGE = errors.EXIT_PRECONDITION, errors.EXIT_USAGE
ALL_PASS = {fx.MIDDLE: "passed", fx.RESIZE: "passed"}


@pytest.fixture
def good(tmp_root: Path) -> tuple[Path, Path]:
    """Two builds' reports (master, v23.06.06), outside the checkout."""
    base = tmp_root.parent / "runs"
    return (
        fx.write(base / "master", [fx.env("pa", fx.MASTER)], ALL_PASS),
        fx.write(base / "v23", [fx.env("vm", fx.V23)], ALL_PASS),
    )


def _nothing_written(root: Path, kept: dict) -> None:
    assert snapshot(root / "reports") == kept  # reports/compare/ and reports/matrix/ not created either


@pytest.mark.parametrize(
    "case",
    [
        (None, "does not exist (or is not a file)"),
        ('{"header": {', "is not valid JSON: Expecting property name enclosed in double quotes (line 1, column 13)"),
        ("[1, 2]", "is not a conformance report: it holds a JSON list, not an object"),
        (
            json.dumps({"tests": [], "environment": {}}),
            "is not a conformance report: it has no 'header' object",
        ),
        (
            json.dumps({"header": {}, "tests": []}),
            "it has neither 'interfaces' nor 'side_by_side' (it looks like a results.json: "
            "`pbs-harness report --results` turns it into one)",
        ),
        (json.dumps({"header": {}, "interfaces": [{"id": "RD-1"}]}), "interfaces[0] has no 'id' and 'status' strings"),
        (json.dumps({"header": {}, "side_by_side": []}), "'side_by_side' is not a list of verdicts"),
    ],
    ids=["missing", "bad-json", "a-list", "no-header", "a-results-file", "no-status", "no-verdicts"],
)
@pytest.mark.parametrize("verb", ["--compare", "--matrix"])
def test_a_report_that_is_not_one(
    verb: str, case: tuple[str | None, str], good: tuple[Path, Path], tmp_root: Path, capsys
) -> None:
    content, says = case
    bad = tmp_root.parent / "bad.json"
    if content is not None:
        bad.write_text(content)
    kept = snapshot(tmp_root / "reports")
    rc, out = run_cli(["report", verb, str(good[0]), str(bad)], capsys)
    assert_refused(rc, out, PRECONDITION, str(bad), says, "fix: give the conformance.json that `pbs-harness test`")
    _nothing_written(tmp_root, kept)


@pytest.mark.parametrize("verb", ["--compare", "--matrix"])
@pytest.mark.parametrize("how", ["same-path", "a-symlink"])
def test_one_file_given_twice(verb: str, how: str, good: tuple[Path, Path], tmp_root: Path, capsys) -> None:
    again = good[0]
    if how == "a-symlink":
        again = tmp_root.parent / "link.json"
        again.symlink_to(good[0])
    kept = snapshot(tmp_root / "reports")
    rc, out = run_cli(["report", verb, str(good[0]), str(again)], capsys)
    assert_refused(rc, out, USAGE, f"{verb}: {again} and {good[0]} are the same file", "fix: give the conformance")
    _nothing_written(tmp_root, kept)


@pytest.mark.parametrize(
    ("out_dir", "says"),
    [
        ("FILE", "is not a folder"),
        ("BUSY", "holds other files (conformance.html, conformance.md): nothing was written"),
        ("/dev/null/x", "output folder /dev/null/x cannot be created (/dev/null is not a writable folder)"),
    ],
    ids=["a-file", "holding-other-files", "under-a-device"],
)
def test_an_output_folder_that_cannot_take_the_pages(
    out_dir: str, says: str, good: tuple[Path, Path], tmp_root: Path, capsys
) -> None:
    target = Path(out_dir)
    if out_dir == "FILE":
        target = tmp_root.parent / "notes.txt"
        target.write_text("kept\n")
    elif out_dir == "BUSY":  # e.g. --out reports/
        target = tmp_root.parent / "busy"
        target.mkdir()
        (target / "conformance.md").write_text("kept\n")
        (target / "conformance.html").write_text("kept\n")
    before = snapshot(target) if target.is_dir() else None
    rc, out = run_cli(["report", "--compare", *map(str, good), "--out", str(target)], capsys)
    assert_refused(rc, out, PRECONDITION, says, "fix: give --out a new or empty folder this user can write")
    if before is not None:
        assert snapshot(target) == before
    elif target.name == "notes.txt":
        assert target.read_text() == "kept\n"


def test_compare_refuses_a_report_of_two_builds(good: tuple[Path, Path], tmp_root: Path, capsys) -> None:
    both = fx.write(
        tmp_root.parent / "both",
        [fx.env("ol", fx.V22, "22.05.11"), fx.env("pb", fx.MASTER)],
        [(fx.MIDDLE, "passed", "ol"), (fx.MIDDLE, "passed", "pb")],
    )
    kept = snapshot(tmp_root / "reports")
    rc, out = run_cli(["report", "--compare", str(good[0]), str(both)], capsys)
    assert_refused(
        rc,
        out,
        PRECONDITION,
        f"{both} holds 2 OpenPBS builds (22.05.11; 23.06.06): --compare takes reports of one build each",
        "fix: put it in --matrix",
    )
    _nothing_written(tmp_root, kept)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--compare", "a.json"], "argument --compare: expected 2 arguments"),
        (["--compare", "a.json", "b.json", "c.json"], "unrecognized arguments: c.json"),
        (["--compare", "a.json", "b.json", "--matrix", "c.json"], "argument --matrix: not allowed with argument"),
        (["--matrix"], "argument --matrix: expected at least one argument"),
        (["--results", "r.json", "--matrix", "a.json"], "argument --matrix: not allowed with argument --results"),
    ],
    ids=["one-file", "three-files", "with-matrix", "matrix-of-none", "with-results"],
)
def test_a_command_line_that_says_neither(argv: list[str], says: str, tmp_root: Path, capsys) -> None:
    kept = snapshot(tmp_root / "reports")
    rc, out = run_cli(["report", *argv], capsys)
    assert_refused(rc, out, USAGE, says)
    _nothing_written(tmp_root, kept)


def test_the_default_folders_are_in_reports(good: tuple[Path, Path], tmp_root: Path, capsys) -> None:
    rc, out = run_cli(["report", "--compare", *map(str, good)], capsys)
    assert rc == errors.EXIT_OK, out
    assert sorted(p.name for p in (tmp_root / "reports" / "compare").iterdir()) == ["compare.html", "compare.md"]
    rc, out = run_cli(["report", "--matrix", *map(str, good)], capsys)
    assert rc == errors.EXIT_OK, out
    assert sorted(p.name for p in (tmp_root / "reports" / "matrix").iterdir()) == ["matrix.html", "matrix.md"]
