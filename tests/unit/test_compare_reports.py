"""`report --compare` and `report --matrix` on conformance.json files the real report code wrote
from SYNTHETIC results (tests/unit/report_fixtures.py says what is made up): what changed per
interface, the builds named by their provenance, the matrix's columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pbs_harness import cli
from pbs_harness.common import errors
from pbs_harness.conformance import builds, catalogue, compare
from tests.unit import report_fixtures as fx

ALL_PASS = {fx.MIDDLE: "passed", fx.AFTER_RESTART: "passed", fx.SUSPEND: "passed", fx.RESIZE: "passed"}


@pytest.fixture
def master(tmp_path: Path) -> Path:
    freed = fx.diff("RD-1", "Can't free 'pa01' since it's on a primary execution host", "17.pa01: pa01")
    return fx.write(tmp_path / "master", [fx.env("pa", fx.MASTER)], ALL_PASS, {fx.MIDDLE: [freed]})


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """v23.06.06 on another cluster (hosts vm01..): one guard of RD-3 fails, the resize event is not
    in the release, the same RD-1 difference on its own host and job, and one new difference."""
    outcomes = {**ALL_PASS, fx.AFTER_RESTART: "failed", fx.RESIZE: "not in this release"}
    freed = fx.diff("RD-1", "Can't free 'vm01' since it's on a primary execution host", "4.vm01: vm01")
    new = fx.diff("AS-1", "the node stays in maintenance after a restart")
    return fx.write(tmp_path / "v23", [fx.env("vm", fx.V23)], outcomes, {fx.MIDDLE: [freed], fx.SUSPEND: [new]})


def test_what_changed_per_interface(master: Path, release: Path) -> None:
    a, b = builds.load(master)[0], builds.load(release)[0]
    rows = {r.id: r for r in compare.compare(a, b).rows}
    # A failed guard: the status changes and the test is named with both outcomes.
    assert (rows["RD-3"].a, rows["RD-3"].b, rows["RD-3"].what_changed) == ("pass", "fail", "status, tests")
    assert rows["RD-3"].tests == [compare.TestChange(fx.AFTER_RESTART, "passed", "failed")]
    # A release skip is its own status and outcome, not "skipped".
    assert (rows["RJS-9"].a, rows["RJS-9"].b) == ("pass", "not in this release")
    assert rows["RJS-9"].tests == [compare.TestChange(fx.RESIZE, "passed", "not in this release")]
    # The same difference seen on other hosts and jobs is the same difference; a new one appears.
    assert (rows["RD-1"].appeared, rows["RD-1"].disappeared, rows["RD-1"].changed) == ([], [], False)
    assert [d["openpbs_does"] for d in rows["AS-1"].appeared] == ["the node stays in maintenance after a restart"]
    assert rows["AS-1"].what_changed == "differences"
    # Interfaces no test covers are in both, unchanged.
    assert (rows["RD-2"].a, rows["RD-2"].b, rows["RD-2"].changed) == ("not covered", "not covered", False)
    # Swapped, what appeared disappears.
    back = {r.id: r for r in compare.compare(b, a).rows}
    assert [d["openpbs_does"] for d in back["AS-1"].disappeared] == ["the node stays in maintenance after a restart"]
    assert compare.compare(a, b).summary() == {
        "interfaces": len(rows),
        "status changed": 2,
        "tests with another outcome": 2,
        "differences that appear": 1,
        "differences that disappear": 0,
    }


def test_the_pages_name_both_builds_by_provenance(master: Path, release: Path, tmp_path: Path) -> None:
    out = tmp_path / "diff"
    assert cli.main(["report", "--compare", str(master), str(release), "--out", str(out)]) == errors.EXIT_OK
    md = (out / "compare.md").read_text()
    assert "| OpenPBS | 23.06.06 | 23.06.06 |" in md
    assert f"upstream commit {fx.MASTER}" in md
    assert f"archive openpbs-v23.06.06.tar.gz (sha256 934b2cd0bd86); upstream commit {fx.V23}" in md
    assert f"| report | {master} | {release} |" in md
    row = [line for line in md.splitlines() if line.startswith("| RD-3 |")][-1]  # its feature's table
    assert "| pass | **fail** | status, tests | test_release_after_restart: passed → failed |" in row
    status_table = md.split("## Interfaces whose status differs")[1].split("##")[0]
    assert "| RJS-9 |" in status_table
    assert "| RD-1 |" not in status_table
    page = (out / "compare.html").read_text()
    assert f"upstream commit {fx.V23}" in page
    assert "test_release_after_restart: <b>passed</b> &rarr; <b>failed</b>" in page
    assert ">not in this release</span>" in page
    assert sorted(p.name for p in out.iterdir()) == ["compare.html", "compare.md"]
    # Run again into the same folder: it holds only an earlier diff, which is replaced.
    assert cli.main(["report", "--compare", str(release), str(master), "--out", str(out)]) == errors.EXIT_OK
    assert f"| report | {release} | {master} |" in (out / "compare.md").read_text()


def test_the_matrix_has_a_column_per_build(master: Path, release: Path, tmp_path: Path) -> None:
    """Three files, four builds: a parallel run over v22.05.11 and master clusters has one verdict each."""
    both = fx.write(
        tmp_path / "both",
        [fx.env("ol", fx.V22, "22.05.11"), fx.env("pb", fx.MASTER)],
        [
            (fx.MIDDLE, "passed", "ol"),
            (fx.RESIZE, "not in this release", "ol"),
            (fx.MIDDLE, "passed", "pb"),
            (fx.RESIZE, "passed", "pb"),
        ],
    )
    out = tmp_path / "matrix"
    assert cli.main(["report", "--matrix", str(master), str(release), str(both), "--out", str(out)]) == 0
    md = (out / "matrix.md").read_text()
    heads = (
        "| 1: 23.06.06 @ cd7ab5edaf | 2: 23.06.06 @ be361a18ef | 3: 22.05.11 @ 08f5dd4cf8 | 4: 23.06.06 @ cd7ab5edaf |"
    )
    assert f"| {heads}\n" in md  # the first column holds what each row of the head table says
    rjs9 = next(line for line in md.splitlines() if line.startswith("| RJS-9 |"))
    assert rjs9.endswith("| pass | not in this release | not in this release | pass | yes |")
    rd2 = next(line for line in md.splitlines() if line.startswith("| RD-2 |"))
    assert rd2.endswith("| not covered | not covered | not covered | not covered | - |")
    rd3 = next(line for line in md.splitlines() if line.startswith("| RD-3 |"))
    assert "| pass | fail | incomplete | incomplete | yes |" in rd3  # the parallel run ran one guard of two
    assert f"upstream commit {fx.V22}" in md
    page = (out / "matrix.html").read_text()
    # The column head names the build in the head table and in each feature's table.
    assert page.count("<th>3: 22.05.11 @ 08f5dd4cf8</th>") == 1 + len(catalogue.load().features)


def test_a_report_of_an_older_harness_has_no_provenance(master: Path, tmp_path: Path) -> None:
    """A conformance.json written before provenance existed: its build is named by version only."""
    data = json.loads(master.read_text())
    del data["header"]["provenance"], data["header"]["openpbs_source"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    build = builds.load(old)[0]
    assert (build.name, build.short, build.source, build.provenance) == ("23.06.06", "23.06.06", "not recorded", None)


def _build(name: str, tests: list[dict], untested: list[str]) -> builds.Build:
    """A build whose report has one interface, RD-2, with these tests (rows written here)."""
    row = {"id": "RD-2", "status": "pass", "tests": tests, "untested": untested, "differences": []}
    return builds.Build(Path(f"{name}.json"), "23.06.06", "-", None, "-", [], {"RD-2": row})


def test_a_parametrized_test_that_one_build_did_not_run() -> None:
    """A test that did not run is listed without its parameters; its cases are "not run" there,
    not "absent", and the bare name is not a test of its own."""
    ran = [{"nodeid": f"t.py::test_x[{p}]", "outcome": "passed"} for p in ("a", "b")]
    change = compare.compare(_build("a", [], ["t.py::test_x"]), _build("b", ran, [])).rows[0]
    assert change.tests == [
        compare.TestChange("t.py::test_x[a]", "not run", "passed"),
        compare.TestChange("t.py::test_x[b]", "not run", "passed"),
    ]
    gone = compare.compare(_build("a", ran[:1], []), _build("b", ran[1:], [])).rows[0]
    assert [(t.a, t.b) for t in gone.tests] == [("passed", "absent"), ("absent", "passed")]
