"""pbs_harness.common.safetar: the same refusals with and without tarfile's `filter` argument (Debian 12's
Python 3.11.2 has none). The no-filter path is tested by hiding tarfile.data_filter (monkeypatch)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from pbs_harness.common import safetar


def archive(tmp_path: Path, *members: tuple[str, str, str]) -> Path:
    path = tmp_path / "a.tar"
    with tarfile.open(path, "w") as tar:
        for name, kind, target in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(target)
                tar.addfile(info, io.BytesIO(target.encode()))
            else:
                info.type, info.linkname = tarfile.SYMTYPE, target
                tar.addfile(info)
    return path


@pytest.fixture(params=["filter", "no-filter"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "no-filter":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    return request.param


def test_a_good_archive_is_unpacked(mode: str, tmp_path: Path) -> None:
    path = archive(tmp_path, ("top/a.txt", "file", "hello"), ("top/link", "sym", "a.txt"))
    with tarfile.open(path) as tar:
        safetar.extract(tar, tmp_path / "out")
    assert (tmp_path / "out/top/a.txt").read_text() == "hello"
    assert (tmp_path / "out/top/link").read_text() == "hello"


@pytest.mark.parametrize(
    "member", [("../evil", "file", "x"), ("/abs/evil", "file", "x"), ("top/out", "sym", "../../etc/passwd")]
)
def test_an_escaping_member_is_refused(mode: str, member: tuple[str, str, str], tmp_path: Path) -> None:
    """Refused, or (tarfile's own filter, for an absolute name) put inside the folder: never outside it."""
    path = archive(tmp_path, member)
    with tarfile.open(path) as tar:
        try:
            safetar.extract(tar, tmp_path / "out")
        except (tarfile.TarError, safetar.UnsafeArchive):
            pass
        else:
            assert mode == "filter", "the check without tarfile's filter let it through"
            assert member[0].startswith("/")
    assert not (tmp_path / "evil").exists()
    assert not Path("/abs/evil").exists()
