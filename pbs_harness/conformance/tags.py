"""Which acceptance tests claim which spec interfaces: a static scan of their markers.

`scan(test_dir)` reads `@pytest.mark.spec(...)` (the interfaces a test exercises), `scan(test_dir,
"guards")` reads `@pytest.mark.guards(...)` (those its own assertions would catch a regression of),
and `marked(test_dir, "xfail")` lists the tests that are expected failures as a whole. Reading the
source (no import, no cluster) lets a unit test check every tag against the catalogue, and lets
the report tell "not covered" (no test at all) from "not run".
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path


def _is_mark(node: ast.AST, marker: str) -> bool:
    """`pytest.mark.<marker>` (the attribute itself, called or not)."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == marker
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "mark"
    )


def _ids(node: ast.AST, marker: str, names: dict[str, ast.expr], seen: frozenset[str] = frozenset()) -> list[str]:
    """String arguments of every `pytest.mark.<marker>("A", "B")` call inside node, and inside the
    module constants it names (e.g. a parameter list whose pytest.param entries carry the mark)."""
    ids: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and _is_mark(sub.func, marker):
            ids += [a.value for a in sub.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        elif isinstance(sub, ast.Name) and sub.id in names and sub.id not in seen:
            ids += _ids(names[sub.id], marker, names, seen | {sub.id})
    return ids


def _tests(test_dir: Path) -> Iterator[tuple[str, list[ast.expr], dict[str, ast.expr]]]:
    """(test id "path::Class::test", the marks that apply to it: module pytestmark, class and
    function decorators, the module's top-level assignments by name) for each test function."""
    for path in sorted(test_dir.rglob("test_*.py")):
        tree = ast.parse(path.read_text(), str(path))
        rel = path.relative_to(test_dir.parent).as_posix()
        names = {
            t.id: stmt.value
            for stmt in tree.body
            if isinstance(stmt, ast.Assign)
            for t in stmt.targets
            if isinstance(t, ast.Name)
        }
        module = names.get("pytestmark")
        module_marks = list(module.elts) if isinstance(module, ast.List | ast.Tuple) else [module] if module else []
        for owner, funcs, prefix in _test_functions(tree, rel):
            owner_marks = list(owner.decorator_list) if owner is not None else []
            for func in funcs:
                yield f"{prefix}::{func.name}", [*module_marks, *owner_marks, *func.decorator_list], names


def short(nodeid: str) -> str:
    """`ptl_tests/test_x.py::test_y[param]` -> `ptl_tests/test_x.py::test_y` (the scan's test id)."""
    return nodeid.split("[", 1)[0]


def scan(test_dir: Path, marker: str = "spec") -> dict[str, list[str]]:
    """{id: [test ids "path::Class::test"]} of `pytest.mark.<marker>(id, ...)` for test functions under test_dir."""
    found: dict[str, list[str]] = {}
    for test_id, marks, names in _tests(test_dir):
        for mark_id in dict.fromkeys(i for mark in marks for i in _ids(mark, marker, names)):
            found.setdefault(mark_id, []).append(test_id)
    return found


def marked(test_dir: Path, marker: str) -> list[str]:
    """Test ids carrying `pytest.mark.<marker>` as a whole (a decorator, the class's or the module's
    pytestmark, or a module constant holding the mark), not only in one parameter's marks."""
    return [test_id for test_id, marks, names in _tests(test_dir) if any(_marks(m, marker, names) for m in marks)]


def _marks(mark: ast.expr, marker: str, names: dict[str, ast.expr]) -> bool:
    if isinstance(mark, ast.Name) and mark.id in names:  # e.g. @CORRUPTED_XFAIL = pytest.mark.xfail(...)
        mark = names[mark.id]
    return _is_mark(mark.func if isinstance(mark, ast.Call) else mark, marker)


def _test_functions(tree: ast.Module, rel: str):
    top = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    yield None, top, rel
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.startswith("Test")):
        funcs = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
        yield cls, funcs, f"{rel}::{cls.name}"
