"""The reliable-startup suite's modules say which part they belong to (PART, read by its conftest.py
to pick the part's roles, kit and node order), consistently with the moms the part needs. A static
read of the sources: no PBS, no cluster."""

import ast
from pathlib import Path

SUITE = Path(__file__).resolve().parents[2] / "ptl_tests" / "reliable_startup"
MOMS = {"A": 6, "B": 5}  # part A also uses the multi-vnode host


def module_constants(path: Path) -> dict[str, ast.expr]:
    tree = ast.parse(path.read_text(), str(path))
    return {t.id: s.value for s in tree.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}


def needs_moms(pytestmark: ast.expr) -> list[int]:
    return [
        m.args[0].value
        for m in ast.walk(pytestmark)
        if isinstance(m, ast.Call) and isinstance(m.func, ast.Attribute) and m.func.attr == "needs_moms"
    ]


def test_every_module_names_its_part_and_needs_its_moms() -> None:
    modules = sorted(SUITE.glob("test_*.py"))
    assert modules
    parts = {}
    for path in modules:
        names = module_constants(path)
        part = ast.literal_eval(names["PART"]) if "PART" in names else None
        assert part in MOMS, f"{path.name}: PART is {part!r}"
        assert needs_moms(names["pytestmark"]) == [MOMS[part]], path.name
        parts[path.name] = part
    assert set(parts.values()) == set(MOMS)
