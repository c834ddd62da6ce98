"""Fixtures shared by the unit tests: the bad-input tests' (badinput.py), the moto tests' (cloudmoto.py), and
this machine's OpenPBS as namespace hosts see it (FAKED for every test: a machine without /opt/pbs, such as
CI's bare Debian, runs the same tests)."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from pbs_harness.localcluster import openpbs_packages
from tests.unit import cloudmoto
from tests.unit.badinput import as_root, isolated, tmp_root  # noqa: F401 - pytest finds fixtures by name


# The moto test modules' fixtures (tests/unit/cloudmoto.py): one moto server per module that asks for it,
# the harness's cloud state pointed at it per test.
@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with cloudmoto.moto_server() as url:
        yield url


@pytest.fixture
def cloud(moto: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return cloudmoto.use_moto(monkeypatch, moto, tmp_path / "cloud")


@pytest.fixture(autouse=True)
def this_machines_openpbs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """FAKE /opt/pbs with an executable bin/qstat, which `up` of namespace hosts asks for before it makes
    anything; a test of that check points openpbs_packages.THIS_MACHINES_OPENPBS elsewhere itself."""
    prefix = tmp_path_factory.getbasetemp() / "this-machines-openpbs"
    qstat = prefix / "bin" / "qstat"
    if not qstat.exists():
        qstat.parent.mkdir(parents=True, exist_ok=True)
        qstat.write_text("#!/bin/sh\n")
        qstat.chmod(0o755)
    monkeypatch.setattr(openpbs_packages, "THIS_MACHINES_OPENPBS", prefix)
    return prefix
