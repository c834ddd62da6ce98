"""The PTL test -> our test mapping in docs/suites/<feature>.md (pbs_harness.ptl.mapping): every PTL test
of the selected files has a row, and every one of our tests a row names exists. Reads the repository's
docs and suites; the PTL test names are those of OpenPBS cd7ab5e (mapping.UPSTREAM, selection.FILES)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pbs_harness.ptl import mapping, selection

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("ptl_file", selection.FILES, ids=lambda f: f.path.split("/")[-1])
def test_every_selected_ptl_test_has_a_row_in_its_feature_s_doc(ptl_file: selection.PtlFile) -> None:
    doc = (ROOT / "docs" / "suites" / f"{ptl_file.feature}.md").read_text()
    assert mapping.unmapped(mapping.selected_tests(ptl_file.path), doc) == []


@pytest.mark.parametrize("feature", selection.FEATURES)
def test_every_test_of_ours_a_row_names_exists(feature: str) -> None:
    doc = (ROOT / "docs" / "suites" / f"{feature}.md").read_text()
    assert mapping.ours_named(doc), "the doc's PTL tables name none of our tests"
    assert mapping.unknown_ours(doc, ROOT / "ptl_tests") == []


def test_the_whole_files_of_the_snapshot_have_the_catalogue_s_counts() -> None:
    counts = {path.split("/")[-1]: len(names) for path, names in mapping.UPSTREAM.items()}
    assert counts == {
        "pbs_reliable_job_startup.py": 21,
        "pbs_node_rampdown.py": 51,
        "pbs_node_rampdown_keep_select.py": 23,
        "pbs_admin_suspend.py": 23,
    }


DOC = """\
| # | PTL test (pbs_x.py) | our test, or why not |
|---|---|---|
| 1 | test_basic | test_ours_one (and `test_ours_two[param]`) |
| 2-3 | pbs_y: test_a, test_b | not covered: a reason naming test_basic |

| module | tests |
|---|---|
| `test_m.py` | test_not_a_mapping |

| PTL | counterpart |
|---|---|
| t1, t2 | `test_ours_three` |
"""


def test_a_doc_s_ptl_tables_give_each_ptl_test_its_row_and_our_tests() -> None:
    rows = mapping.mapped(DOC)
    assert set(rows) == {"test_basic", "test_a", "test_b", "test_t1", "test_t2"}
    assert rows["test_a"] == "2-3 | not covered: a reason naming test_basic"
    assert mapping.unmapped(["test_basic", "test_t2", "test_t3"], DOC) == ["test_t3"]
    assert mapping.ours_named(DOC) == {"test_ours_one", "test_ours_two", "test_ours_three", "test_basic"}


def test_our_tests_are_the_functions_defined_under_the_suites(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "test_x.py").write_text("def test_ours_one() -> None:\n    pass\n\ndef helper():\n    pass\n")
    assert mapping.our_tests(tmp_path) == {"test_ours_one"}
    assert mapping.unknown_ours("| PTL | x |\n|---|---|\n| t1 | test_ours_one, test_gone |\n", tmp_path) == [
        "test_gone"
    ]
