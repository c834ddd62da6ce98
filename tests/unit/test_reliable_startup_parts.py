"""The reliable-startup suite's two parts are folders whose conftest.py gives `roles` and `kit` for
their hosts; every module of a part asks for the moms the part's hosts need. A static read of the
sources: no PBS, no cluster."""

import ast
from pathlib import Path

SUITE = Path(__file__).resolve().parents[2] / "ptl_tests" / "reliable_startup"
MOMS = {"padding_pruning": 6, "timers_and_faults": 5}  # part A also uses the multi-vnode host


def pytestmark_of(path: Path) -> ast.expr:
    tree = ast.parse(path.read_text(), str(path))
    (value,) = [
        s.value
        for s in tree.body
        if isinstance(s, ast.Assign)
        for t in s.targets
        if getattr(t, "id", "") == "pytestmark"
    ]
    return value


def needs_moms(pytestmark: ast.expr) -> list[int]:
    return [
        m.args[0].value
        for m in ast.walk(pytestmark)
        if isinstance(m, ast.Call) and isinstance(m.func, ast.Attribute) and m.func.attr == "needs_moms"
    ]


def test_every_module_is_in_a_part_and_needs_its_moms() -> None:
    assert not list(SUITE.glob("test_*.py")), "a test module outside the parts gets no roles/kit"
    for part, moms in MOMS.items():
        modules = sorted((SUITE / part).glob("test_*.py"))
        assert modules, part
        for path in modules:
            assert needs_moms(pytestmark_of(path)) == [moms], path.name


def test_each_part_gives_its_own_roles_and_kit() -> None:
    for part in MOMS:
        tree = ast.parse((SUITE / part / "conftest.py").read_text())
        fixtures = {f.name for f in tree.body if isinstance(f, ast.FunctionDef)}
        assert {"roles", "kit"} <= fixtures, part
