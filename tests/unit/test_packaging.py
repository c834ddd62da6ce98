"""What pip reads agrees with what the project pins and says, both ways: pyproject.toml's dependencies
are ranges with a lower and an upper bound; requirements.txt pins the same packages exactly, each
inside its range; constraints.txt (the lock `make venv` installs with) pins every package of the
environment, the requirements' pins among them; this environment is what the lock says. The Python
version is the same wherever it is stated. Reads the checkout's files and this environment's
installed distributions; installs nothing."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from pbs_harness.common import project

ROOT = project.root()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# Installed with the venv itself (ensurepip), or the project: never in the lock.
NOT_LOCKED = {"pip", "setuptools", "wheel", "pbs-harness"}


def _requirements(name: str) -> dict[str, Requirement]:
    lines = (ROOT / name).read_text().splitlines()
    words = (ln.split("#")[0].strip() for ln in lines)
    reqs = [Requirement(w) for w in words if w and not w.startswith("-")]
    return {canonicalize_name(r.name): r for r in reqs}


def _declared() -> dict[str, Requirement]:
    reqs = [Requirement(d) for d in PYPROJECT["project"]["dependencies"]]
    return {canonicalize_name(r.name): r for r in reqs}


def _exact(req: Requirement) -> str:
    (spec,) = req.specifier
    assert spec.operator == "==", f"an exact version is expected: {req}"
    return spec.version


def test_pyproject_declares_what_requirements_pin() -> None:
    assert sorted(_declared()) == sorted(_requirements("requirements.txt"))


def test_every_range_is_bounded_both_ways_around_its_pin() -> None:
    declared = _declared()
    for name, pin in _requirements("requirements.txt").items():
        operators = {s.operator for s in declared[name].specifier}
        assert operators == {">=", "<"}, f"pyproject.toml: {declared[name]} needs a lower and an upper bound"
        assert declared[name].specifier.contains(_exact(pin)), f"{pin} is outside pyproject's {declared[name]}"


def test_the_lock_pins_every_requirement_at_its_pin() -> None:
    lock = _requirements("constraints.txt")
    for file in ("requirements.txt", "requirements-dev.txt"):
        for name, pin in _requirements(file).items():
            assert name in lock, f"{file} names {name}, which constraints.txt does not lock (make lock)"
            assert _exact(lock[name]) == _exact(pin), f"{file} pins {pin}, constraints.txt {lock[name]} (make lock)"


def test_this_environment_is_the_lock() -> None:
    """Every installed distribution is locked at its installed version, and every locked one is installed:
    `make venv` installed exactly the lock (a package added by hand, or a stale lock, shows here)."""
    lock = {name: _exact(req) for name, req in _requirements("constraints.txt").items()}
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}
    installed = {n: v for n, v in installed.items() if n not in NOT_LOCKED}
    assert {n: v for n, v in installed.items() if lock.get(n) != v} == {}, "installed, not as locked"
    assert sorted(set(lock) - set(installed)) == [], "locked, not installed"


def test_python_version_is_stated_alike() -> None:
    assert PYPROJECT["project"]["requires-python"] == ">=3.11"
    assert PYPROJECT["tool"]["ruff"]["target-version"] == "py311"
    readme = (ROOT / "README.md").read_text()
    assert "Python 3.11+" in readme
    assert not re.search(r"Python 3\.(?:[0-9]|10)\+", readme)
    assert "sys.version_info < (3, 11)" in (ROOT / "scripts" / "ci" / "check-python.sh").read_text()
