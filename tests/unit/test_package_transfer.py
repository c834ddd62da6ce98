"""`pbs-harness cache --export/--import` of an OpenPBS package set (pbs_harness.deploy.package_transfer), between two
cache folders of the test (PBS_HARNESS_CACHE_DIR). The package set is a folder the test writes (a fake
.deb's bytes and a provenance record): what this proves is the transfer and its checks, not the packages."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from pbs_harness.common.errors import PreconditionError
from pbs_harness.deploy import openpbs_build, package_transfer
from pbs_harness.deploy.openpbs_source import PROVENANCE_FILE

NAME = "46a7c836d3213f53-debian-12-builder-2d5a0b73e731"


def package_set(cache: Path, name: str = NAME) -> Path:
    folder = cache / "packages" / name
    folder.mkdir(parents=True)
    (folder / "openpbs-server_23.06.06-1_amd64.deb").write_bytes(b"!<arch>\nfake")
    (folder / PROVENANCE_FILE).write_text(json.dumps({"version": "23.06.06"}))
    return folder


def test_export_then_import_into_another_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    folder = package_set(first)
    (first / "packages" / f"{NAME}.build.log").write_text("not exported")
    monkeypatch.setenv("PBS_HARNESS_CACHE_DIR", str(first))
    out = tmp_path / "set.tar.gz"
    assert package_transfer.export(package_transfer.choose(None), out) > 0
    monkeypatch.setenv("PBS_HARNESS_CACHE_DIR", str(second))
    landed, added = package_transfer.import_(out)
    assert added
    assert landed == second / "packages" / NAME
    assert sorted(p.name for p in landed.iterdir()) == sorted(p.name for p in folder.iterdir())
    assert (landed / PROVENANCE_FILE).read_text() == (folder / PROVENANCE_FILE).read_text()
    assert package_transfer.import_(out) == (landed, False)  # a second import changes nothing
    assert not [p for p in (second / "packages").iterdir() if p.name.startswith(".import-")]


def test_export_needs_a_name_when_there_are_several(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package_set(tmp_path)
    package_set(tmp_path, "0123456789abcdef-debian-11-builder-0")
    monkeypatch.setenv("PBS_HARNESS_CACHE_DIR", str(tmp_path))
    with pytest.raises(PreconditionError, match="2 package sets") as err:
        package_transfer.choose(None)
    assert "--packages NAME" in str(err.value)
    with pytest.raises(PreconditionError, match="no package set 'nope'"):
        package_transfer.choose("nope")
    assert package_transfer.choose(NAME).name == NAME


def tarball(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ({f"{NAME}/a.deb": b"x"}, "no openpbs-source.json"),
        ({f"{NAME}/{PROVENANCE_FILE}": b"{}", f"{NAME}/x/../../../etc/passwd": b"x"}, "plain files in one folder"),
        ({f"a/{PROVENANCE_FILE}": b"{}", "b/a.deb": b"x"}, "plain files in one folder"),
    ],
)
def test_import_refuses_what_is_not_an_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, members: dict[str, bytes], message: str
) -> None:
    monkeypatch.setenv("PBS_HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(PreconditionError, match=message):
        package_transfer.import_(tarball(tmp_path / "bad.tar.gz", members))
    assert not (tmp_path / "cache" / "packages").exists() or not any((tmp_path / "cache" / "packages").iterdir())


def test_import_of_a_file_that_is_no_tarball(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PBS_HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "x.tar.gz").write_text("hello")
    with pytest.raises(PreconditionError, match="could not be read"):
        package_transfer.import_(tmp_path / "x.tar.gz")
    with pytest.raises(PreconditionError, match="does not exist"):
        package_transfer.import_(tmp_path / "missing.tar.gz")


def test_build_estimate_is_labelled_then_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PBS_HARNESS_CACHE_DIR", str(tmp_path))
    assert openpbs_build.build_estimate().startswith("estimate: about ")
    (tmp_path / "packages").mkdir()
    openpbs_build._record_build_time(600.4)
    assert openpbs_build.build_estimate().startswith("the last build on this machine took 600s")
