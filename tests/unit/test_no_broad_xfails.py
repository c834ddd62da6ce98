"""Every expected failure in ptl_tests/ names its own exception, raised only on the exact observed
signature of the OpenPBS defect: a broad `raises=AssertionError` or `raises=WaitTimeout` (or an xfail
with no `raises=`) would turn any other regression in the same test into the known defect. And it
names exactly ONE: with `raises=(BugA, BugB)` a test whose bug A is fixed upstream still xfails on
bug B, and nobody learns of the fix (issue #30); each bug gets a strict xfail of its own, so that a
fix turns it into XPASS(strict), which fails."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BROAD = {"AssertionError", "WaitTimeout", "Exception", "BaseException", "TimeoutError"}


def _xfail_calls(tree: ast.AST):
    # pytest.mark.xfail(...) as a decorator or in pytest.param(marks=...); not pytest.xfail("reason")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "xfail"
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "mark"
        ):
            yield node


def test_every_xfail_in_the_suites_names_a_specific_exception() -> None:
    problems = []
    for path in sorted((ROOT / "ptl_tests").rglob("*.py")):
        for call in _xfail_calls(ast.parse(path.read_text(), str(path))):
            raises = next((k.value for k in call.keywords if k.arg == "raises"), None)
            where = f"{path.relative_to(ROOT)}:{call.lineno}"
            if raises is None:
                problems.append(f"{where}: xfail without raises=")
            else:
                named = raises.elts if isinstance(raises, ast.Tuple) else [raises]
                if len(named) != 1:
                    problems.append(f"{where}: raises= names {len(named)} exceptions; a strict xfail expects one bug")
                broad = [n.id for n in named if isinstance(n, ast.Name) and n.id in BROAD]
                problems += [f"{where}: raises={name} is broad" for name in broad]
            strict = next((k.value for k in call.keywords if k.arg == "strict"), None)
            if not (isinstance(strict, ast.Constant) and strict.value is True):
                problems.append(f"{where}: not strict=True")
    assert problems == []
