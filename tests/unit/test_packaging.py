"""What pip reads agrees with what the project pins and says: pyproject.toml's dependencies name
the same packages as requirements.txt, each pin satisfies the declared range, and the Python
version is the same wherever it is stated. Reads the checkout's files; installs nothing."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from pbs_harness import project

ROOT = project.root()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _pins() -> dict[str, Requirement]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    reqs = [Requirement(line) for line in (ln.split("#")[0].strip() for ln in lines) if line]
    return {canonicalize_name(r.name): r for r in reqs}


def _declared() -> dict[str, Requirement]:
    reqs = [Requirement(d) for d in PYPROJECT["project"]["dependencies"]]
    return {canonicalize_name(r.name): r for r in reqs}


def test_pyproject_declares_what_requirements_pin() -> None:
    assert sorted(_declared()) == sorted(_pins())


def test_every_pin_is_in_the_declared_range() -> None:
    declared = _declared()
    for name, pin in _pins().items():
        (spec,) = pin.specifier
        assert spec.operator == "==", f"requirements.txt pins exact versions: {pin}"
        assert declared[name].specifier.contains(spec.version), f"{pin} is outside pyproject's {declared[name]}"


def test_python_version_is_stated_alike() -> None:
    assert PYPROJECT["project"]["requires-python"] == ">=3.11"
    assert PYPROJECT["tool"]["ruff"]["target-version"] == "py311"
    readme = (ROOT / "README.md").read_text()
    assert "Python 3.11+" in readme
    assert not re.search(r"Python 3\.(?:[0-9]|10)\+", readme)
