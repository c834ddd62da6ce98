"""Which acceptance tests claim which spec interfaces: a static scan of `@pytest.mark.spec(...)`.

Reading the source (no import, no cluster) lets a unit test check every tag against the
catalogue, and lets the report tell "not covered" (no test at all) from "not run".
"""

from __future__ import annotations

import ast
from pathlib import Path


def _spec_ids(node: ast.AST) -> list[str]:
    """IDs of every `pytest.mark.spec("A", "B")` call inside node."""
    ids: list[str] = []
    for call in ast.walk(node):
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "spec"
            and isinstance(call.func.value, ast.Attribute)
            and call.func.value.attr == "mark"
        ):
            ids += [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return ids


def scan(test_dir: Path) -> dict[str, list[str]]:
    """{spec id: [test ids "path::Class::test"]} for test functions under test_dir."""
    found: dict[str, list[str]] = {}
    for path in sorted(test_dir.rglob("test_*.py")):
        tree = ast.parse(path.read_text(), str(path))
        rel = path.relative_to(test_dir.parent).as_posix()
        module_ids = [i for stmt in tree.body if _is_pytestmark(stmt) for i in _spec_ids(stmt.value)]
        for owner, funcs, prefix in _test_functions(tree, rel):
            owner_ids = _spec_ids_of_decorators(owner) if owner is not None else []
            for func in funcs:
                test_id = f"{prefix}::{func.name}"
                for spec_id in module_ids + owner_ids + _spec_ids_of_decorators(func):
                    found.setdefault(spec_id, []).append(test_id)
    return found


def _is_pytestmark(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets)


def _spec_ids_of_decorators(node: ast.FunctionDef | ast.ClassDef) -> list[str]:
    return [i for dec in node.decorator_list for i in _spec_ids(dec)]


def _test_functions(tree: ast.Module, rel: str):
    top = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    yield None, top, rel
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.startswith("Test")):
        funcs = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
        yield cls, funcs, f"{rel}::{cls.name}"
