"""The exit-code table is one table, and the bad-input table names only tests that exist.

README.md's "Exit codes" table must equal pbs_harness.common.errors.EXIT_CODES row for row, and every test
that docs/bad-input.md names (`tests/unit/FILE.py::test_NAME`) must be a test function in that file.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pbs_harness.common import errors

ROOT = Path(__file__).resolve().parents[2]
TEST_REF = re.compile(r"`(tests/unit/[\w/]+\.py)::(test_\w+)`")


def section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def test_readme_table_is_the_errors_table() -> None:
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", section((ROOT / "README.md").read_text(), "## Exit codes"), re.M)
    assert [(int(code), meaning) for code, meaning in rows] == list(errors.EXIT_CODES)


def test_every_code_has_its_constant() -> None:
    constants = {v for k, v in vars(errors).items() if k.startswith("EXIT_") and isinstance(v, int)}
    assert constants == {code for code, _ in errors.EXIT_CODES}


def test_bad_input_table_names_existing_tests_only() -> None:
    doc = (ROOT / "docs" / "bad-input.md").read_text()
    rows = [line for line in doc.splitlines() if re.match(r"^\| \d+ \|", line)]
    assert len(rows) >= 25
    for row in rows:
        refs = TEST_REF.findall(row)
        assert refs, f"row names no test: {row}"
        for path, name in refs:
            tree = ast.parse((ROOT / path).read_text())
            names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
            assert name in names, f"{path}::{name} (named in docs/bad-input.md) does not exist"
    codes = {str(code) for code, _ in errors.EXIT_CODES}
    for row in rows:
        exit_cell = row.split("|")[4].strip()
        assert exit_cell in codes | {"see row", "skip", "hook"}, row


def test_bad_input_rows_have_one_number_each_and_the_index_names_real_rows() -> None:
    """Two rows numbered 90 (and 91, 116, 117) made the symptom index's "row 90" name two rows."""
    doc = (ROOT / "docs" / "bad-input.md").read_text()
    numbers = [int(n) for n in re.findall(r"^\| (\d+) \|", doc, re.M)]
    twice = sorted({n for n in numbers if numbers.count(n) > 1})
    assert not twice, f"docs/bad-input.md numbers several rows {twice}"
    index = section(doc, "## Symptom → fix")
    named: set[int] = set()
    for listed in re.findall(r"\brows? (\d[\d, -]*\d|\d)", index):
        for part in listed.split(","):
            lo, _, hi = part.strip().partition("-")
            named.update(range(int(lo), int(hi or lo) + 1))
    assert named, "the symptom index names no row"
    assert named <= set(numbers), f"the symptom index names rows that do not exist: {sorted(named - set(numbers))}"
