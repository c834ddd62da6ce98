"""Fixtures shared by the unit tests: the bad-input tests' (badinput.py) and the moto tests' (cloudmoto.py)."""

from collections.abc import Iterator
from pathlib import Path

import pytest

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
