"""The suites fail with messages, never with a bare AssertionError or an IndexError, ValueError,
KeyError or StopIteration from their own code (static checks of ptl_tests/; the helpers' messages
themselves are checked by failing each on purpose in test_helper_messages.py).

- Helper modules (ptl_tests' modules other than tests, conftests, hook files and child tests) give
  every assertion a message, and are registered for pytest's assertion rewriting (ptl_tests/conftest.py).
- Nowhere in ptl_tests: `next(...)` without a default; a subscript of `re.search/match/fullmatch(...)`
  (None when nothing matched); unpacking or indexing the list an evidence reader returned
  (`y_records`, `wait_for`, `of`, `matching`, `lines`, `records`, `chunks_of`, `hosts_of`, `vnodes_of`,
  `chunk_vnodes`): pbs_harness.pbs.evidence.pick (one, first, last, nth, exactly) says what is missing.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

PTL_TESTS = Path(__file__).resolve().parents[2] / "ptl_tests"
EVIDENCE_LISTS = {
    "y_records", "wait_for", "of", "matching", "lines", "records", "chunks_of", "hosts_of", "vnodes_of", "chunk_vnodes",
}  # fmt: skip
REGEX_CALLS = {"search", "match", "fullmatch"}


def python_files() -> list[Path]:
    return [p for p in sorted(PTL_TESTS.rglob("*.py")) if "hooks" not in p.relative_to(PTL_TESTS).parts]


def is_helper(path: Path) -> bool:
    rel = path.relative_to(PTL_TESTS)
    return (
        not path.name.startswith("test_")
        and path.name not in ("conftest.py", "__init__.py")
        and not {"hooks", "children"} & set(rel.parts)
    )


def called_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return None


def problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(PTL_TESTS.parent)
    out = []
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', '?')}"
        if is_helper(path) and isinstance(node, ast.Assert) and node.msg is None:
            out.append(f"{line}: assert without a message in a helper module")
        if isinstance(node, ast.Raise) and called_name(node.exc) == "AssertionError" and not node.exc.args:  # type: ignore[union-attr]
            out.append(f"{line}: AssertionError without a message")
        if isinstance(node, ast.Call) and called_name(node) == "next" and len(node.args) == 1:
            out.append(f"{line}: next() without a default raises StopIteration: use pick.first/one")
        if isinstance(node, ast.Subscript) and called_name(node.value) in REGEX_CALLS:
            out.append(f"{line}: subscript of a regex match that may be None: use pick.group")
        if (
            isinstance(node, ast.Subscript)
            and called_name(node.value) in EVIDENCE_LISTS
            and not isinstance(node.slice, ast.Slice)
        ):
            out.append(f"{line}: indexing the list {called_name(node.value)}() returned: use pick.nth/first/last")
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Tuple | ast.List) for t in node.targets)
            and called_name(node.value) in EVIDENCE_LISTS
        ):
            out.append(f"{line}: unpacking the list {called_name(node.value)}() returned: use pick.exactly")
    return out


def test_no_bare_failures_in_the_suites() -> None:
    found = [p for path in python_files() for p in problems(path)]
    assert found == [], "\n".join(found)


def test_every_helper_module_is_registered_for_assertion_rewriting(monkeypatch: pytest.MonkeyPatch) -> None:
    registered: list[str] = []
    monkeypatch.setattr(pytest, "register_assert_rewrite", lambda *names: registered.extend(names))
    spec = importlib.util.spec_from_file_location("ptl_tests_conftest_copy", PTL_TESTS / "conftest.py")
    assert spec is not None
    assert spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    helpers = [p for p in python_files() if is_helper(p)]
    names = {".".join(p.relative_to(PTL_TESTS.parent).with_suffix("").parts) for p in helpers}
    assert len(helpers) >= 10, helpers  # the rule sees the helper modules at all
    assert set(registered) == names
