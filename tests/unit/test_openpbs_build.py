"""OpenPBS packages from `--openpbs` (pbs_harness.deploy.openpbs_build): provenance, unpacking, the cache, the build's
container — without building anything.

Faked: packages are empty files named like OpenPBS's .deb files; the cache is a tmp folder
(PBS_HARNESS_CACHE_DIR); the image layer, the overlay mount and the container are replaced by
recorders (images.ensure, images.overlay, nspawn.run), or by tripwires where a cached set must be used
without building. Real: the compiler wrappers, run with this machine's gcc.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from pbs_harness.common.errors import PreconditionError
from pbs_harness.deploy import openpbs_build
from pbs_harness.deploy.mutants import buildtree
from pbs_harness.deploy.openpbs_build import NO_WERROR, RPM_MACROS, BuildFailed, PackageSet
from pbs_harness.deploy.openpbs_source import BUILD_SCRIPT, PROVENANCE_FILE, Provenance, Source, judge
from pbs_harness.localcluster.containers import images, nspawn

# FAKE package files: the first bytes of a .deb (an ar archive), which --openpbs checks; nothing more.
FAKE_DEB = b"!<arch>\n"

VERSION = "23.06.06"
DIST = images.distribution("debian-12")


def deb(kind: str, version: str = VERSION) -> str:
    return f"openpbs-{kind}_{version}-1_amd64.deb"


def package_folder(path: Path, names: list[str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name in names:
        (path / name).write_bytes(FAKE_DEB if name.endswith(".deb") else b"")
    return path


def tripwire(what: str):
    def fail(*_: object, **__: object) -> None:
        raise AssertionError(f"a cached package set went on to {what}")

    return fail


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(images.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


# --- provenance of a folder of packages -------------------------------------------------------


def test_a_folder_of_packages_is_used_where_it_is_with_its_provenance(tmp_path: Path, cache: Path) -> None:
    folder = package_folder(tmp_path / "debs", [deb(k) for k in ("server", "execution", "client", "ptl")])
    source = judge(folder)
    packages = openpbs_build.ensure(source, DIST, tripwire("print progress"))
    assert packages.path == folder.resolve()
    assert packages.provenance == Provenance(
        form="packages",
        archive="debs",
        sha256=source.sha256,
        commit=None,
        version=VERSION,
        package_kinds={k: deb(k) for k in ("server", "execution", "client", "ptl")},
        build_image=None,
    )
    assert packages.file("execution") == deb("execution")
    assert not cache.exists()  # nothing copied into the cache


def test_mixed_versions_are_refused(tmp_path: Path) -> None:
    folder = package_folder(tmp_path / "debs", [deb("server"), deb("execution", "22.05.11"), deb("client")])
    with pytest.raises(PreconditionError) as err:
        openpbs_build.ensure(judge(folder), DIST, print)
    assert err.value.message == f"{folder.resolve()} mixes OpenPBS versions 22.05.11, 23.06.06"
    assert err.value.hint == "keep one version's packages in it"


def test_a_missing_kind_is_refused_naming_what_is_there(tmp_path: Path) -> None:
    folder = package_folder(tmp_path / "debs", [deb("server"), deb("execution"), deb("ptl")])
    with pytest.raises(PreconditionError) as err:
        openpbs_build.ensure(judge(folder), DIST, print)
    assert err.value.message == (
        f"{folder.resolve()} has no openpbs-client package (found: openpbs-execution, openpbs-ptl, openpbs-server)"
    )
    assert "server, execution and client packages" in err.value.hint


# --- a release zip: unpacked flat into the cache, once ------------------------------------------


def make_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("openpbs_23.06.06/", b"")  # a folder entry
        for kind in ("server", "execution", "client"):
            zf.writestr(f"openpbs_23.06.06/debs/{deb(kind)}", FAKE_DEB + f"{kind} package".encode())
        zf.writestr("openpbs_23.06.06/README.md", b"read me")
    return path


def test_unzip_takes_the_package_files_flat_whatever_folders_hold_them(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    openpbs_build._unzip(make_zip(tmp_path / "release.zip"), out)
    assert sorted(p.name for p in out.iterdir()) == sorted(deb(k) for k in ("server", "execution", "client"))
    assert (out / deb("client")).read_bytes() == FAKE_DEB + b"client package"


def test_a_zip_is_unpacked_into_the_cache_once_and_found_there_again(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = judge(make_zip(tmp_path / "release.zip"))
    said: list[str] = []
    first = openpbs_build.ensure(source, DIST, said.append)
    assert first.path == cache / "packages" / f"{source.sha256[:16]}-zip"
    assert (first.provenance.form, first.provenance.archive, first.version) == ("zip", "release.zip", VERSION)
    assert json.loads((first.path / PROVENANCE_FILE).read_text()) == first.provenance.to_json()

    monkeypatch.setattr(openpbs_build, "_unzip", tripwire("unzip again"))
    again = openpbs_build.ensure(source, DIST, said.append)
    assert again == first
    assert said == [f"OpenPBS {VERSION} packages of release.zip: cached in {first.path}"]


def test_an_interrupted_unpacking_is_done_again(tmp_path: Path, cache: Path) -> None:
    source = judge(make_zip(tmp_path / "release.zip"))
    folder = cache / "packages" / f"{source.sha256[:16]}-zip"
    package_folder(folder, [deb("server")])  # half unpacked: no openpbs-source.json yet
    (folder / "junk.part").write_bytes(b"")
    packages = openpbs_build.ensure(source, DIST, print)
    assert not (folder / "junk.part").exists()
    assert set(packages.provenance.package_kinds) == {"server", "execution", "client"}


# --- a source: built once, then found in the cache --------------------------------------------


def make_source_archive(path: Path) -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT, pax_headers={"comment": "ab" * 20}) as tar:
        for name, text in {"openpbs-x/configure.ac": "AC_INIT\n", f"openpbs-x/{BUILD_SCRIPT}": "#!/bin/bash\n"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text.encode()))
    return path


def test_a_cached_build_is_used_without_building(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = judge(make_source_archive(tmp_path / "openpbs-x.tar.gz"))
    layer = images.builder_layer(DIST)
    folder = package_folder(
        cache / "packages" / f"{source.sha256[:16]}-{layer.name}", [deb(k) for k in ("server", "execution", "client")]
    )
    recorded = Provenance("archive", "openpbs-x.tar.gz", source.sha256, "ab" * 20, VERSION, {"server": "s"}, layer.name)
    (folder / PROVENANCE_FILE).write_text(json.dumps(recorded.to_json()))
    for module, name in ((openpbs_build, "_build"), (images, "ensure"), (nspawn, "run"), (images, "cache_lock")):
        monkeypatch.setattr(module, name, tripwire(f"{module.__name__}.{name}"))
    said: list[str] = []
    packages = openpbs_build.ensure(source, DIST, said.append)
    assert packages == PackageSet(folder, recorded)
    assert said == [f"OpenPBS {VERSION} packages of openpbs-x.tar.gz: cached in {folder}"]


def test_a_source_is_built_in_the_builder_layer_and_recorded(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build itself is a recorder that leaves .deb files, as the build script's alien step does."""
    source = judge(make_source_archive(tmp_path / "openpbs-x.tar.gz"))
    ensured: list[str] = []
    monkeypatch.setattr(images, "ensure", lambda layer, progress: ensured.append(layer.name) or layer)

    def fake_build(src: Source, layer: images.Layer, folder: Path, progress) -> None:
        assert src == source
        assert folder.is_dir()
        assert not any(folder.iterdir())
        package_folder(folder, [deb(k) for k in ("server", "execution", "client", "ptl")])

    monkeypatch.setattr(openpbs_build, "_build", fake_build)
    packages = openpbs_build.ensure(source, DIST, print)
    layer = images.builder_layer(DIST)
    assert ensured == [layer.name]
    assert packages.path == cache / "packages" / f"{source.sha256[:16]}-{layer.name}"
    assert (packages.provenance.form, packages.provenance.commit, packages.provenance.build_image) == (
        "archive",
        "ab" * 20,
        layer.name,
    )
    assert json.loads((packages.path / PROVENANCE_FILE).read_text())["build_image"] == layer.name


def test_an_archive_is_unpacked_without_its_top_folder_and_a_tree_is_built_where_it_is(tmp_path: Path) -> None:
    source = judge(make_source_archive(tmp_path / "openpbs-x.tar.gz"))
    tree = openpbs_build.unpack_source(source, tmp_path / "src")
    assert tree == tmp_path / "src" / "openpbs-x"
    assert (tree / "configure.ac").is_file()
    tree_source = Source(tmp_path / "src" / "openpbs-x", "tree", "0" * 64)
    assert openpbs_build.unpack_source(tree_source, tmp_path / "unused") == tree_source.path
    assert not (tmp_path / "unused").exists()


def test_the_mutant_build_tree_unpacks_an_archive_by_the_same_rule(tmp_path: Path) -> None:
    """deploy/mutants/buildtree.py unpacks with unpack_source (one rule, duplicates D1): its tree is the
    archive's top folder's content, writable, and the unpacking folder is gone; a tree is copied."""
    source = judge(make_source_archive(tmp_path / "openpbs-x.tar.gz"))
    buildtree._unpack(source, tmp_path / "mut" / "src")
    assert (tmp_path / "mut" / "src" / "configure.ac").is_file()
    assert sorted(p.name for p in (tmp_path / "mut").iterdir()) == ["src"]
    buildtree._unpack(Source(tmp_path / "mut" / "src", "tree", "0" * 64), tmp_path / "copy")
    assert (tmp_path / "copy" / "configure.ac").is_file()


@contextlib.contextmanager
def fake_overlay(lower: list[Path], work_root: Path):
    """Stands in for the overlayfs mount: a plain folder as the merged root."""
    merged = work_root / "merged"
    (merged / "root").mkdir(parents=True)
    yield merged


def test_the_build_runs_upstreams_script_in_a_container_and_keeps_only_the_debs(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = judge(make_source_archive(tmp_path / "openpbs-x.tar.gz"))
    layer = images.builder_layer(DIST)
    folder = cache / "packages" / "f"
    folder.mkdir(parents=True)
    seen: dict = {}

    def fake_run(unit: str, argv: list[str], log: Path, timeout: float) -> int:
        merged = Path(next(a for a in argv if a.startswith("--directory=")).split("=", 1)[1])
        binds = dict(a.split("=", 1)[1].rsplit(":", 1)[::-1] for a in argv if a.startswith("--bind"))
        seen.update(unit=unit, argv=argv, rpmmacros=(merged / "root/.rpmmacros").read_text(), binds=binds)
        out = Path(binds["/src"])
        package_folder(out / "packages", [deb(k) for k in ("server", "execution", "client")] + ["x.rpm"])
        log.write_text("build log\n")
        return 0

    monkeypatch.setattr(images, "overlay", fake_overlay)
    monkeypatch.setattr(nspawn, "run", fake_run)
    openpbs_build._build(source, layer, folder, print)

    argv = seen["argv"]
    assert seen["unit"] == f"build-{source.sha256[:12]}"
    assert argv[-1] == f"/pbssrc/{BUILD_SCRIPT}"  # the script itself: its shebang's `bash -xe`
    assert "--private-network" in argv
    assert seen["rpmmacros"] == RPM_MACROS
    ro = {a.split("=", 1)[1].rsplit(":", 1)[1] for a in argv if a.startswith("--bind-ro=")}
    assert ro == {"/pbssrc", "/usr/local/bin"}  # the source and the compiler wrappers: read-only
    assert sorted(p.name for p in folder.iterdir()) == sorted(deb(k) for k in ("server", "execution", "client"))
    assert not (cache / "packages" / ".f.work").exists()  # the work folder is removed


def test_a_failed_build_says_where_its_log_is_and_quotes_its_end(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = judge(make_source_archive(tmp_path / "openpbs-x.tar.gz"))
    folder = cache / "packages" / "f"
    folder.mkdir(parents=True)

    def failing_run(unit: str, argv: list[str], log: Path, timeout: float) -> int:
        log.write_text("".join(f"line {i}\n" for i in range(40)) + "mom_comm.c: error: array subscript\n")
        return 2

    monkeypatch.setattr(images, "overlay", fake_overlay)
    monkeypatch.setattr(nspawn, "run", failing_run)
    with pytest.raises(BuildFailed) as err:
        openpbs_build._build(source, images.builder_layer(DIST), folder, print)
    log = cache / "packages" / "f.build.log"
    assert f"the OpenPBS package build of openpbs-x.tar.gz failed (rc=2); the end of {log}:" in err.value.message
    assert err.value.message.endswith("line 39\nmom_comm.c: error: array subscript")
    assert "line 24\n" not in err.value.message  # the last 15 lines only
    assert "--image" in err.value.hint
    assert not any(folder.iterdir())


# --- the compiler wrappers --------------------------------------------------------------------


def test_compiler_wrappers_add_no_werror_after_the_builds_flags(tmp_path: Path) -> None:
    folder = openpbs_build._compilers(tmp_path / "compilers")
    for name in openpbs_build.COMPILERS:
        wrapper = folder / name
        assert wrapper.read_text() == f'#!/bin/sh\nexec /usr/bin/{name} "$@" {NO_WERROR}\n'
        assert wrapper.stat().st_mode & 0o777 == 0o755


@pytest.mark.skipif(shutil.which("gcc") != "/usr/bin/gcc", reason="needs /usr/bin/gcc")
def test_the_gcc_wrapper_keeps_a_warning_a_warning_under_werror(tmp_path: Path) -> None:
    """What the wrappers are for: a -Werror build that today's GCC warns in still compiles."""
    (tmp_path / "warn.c").write_text("int main(void) { int unused; return 0; }\n")
    flags = ["-Werror", "-Wunused-variable", "-c", str(tmp_path / "warn.c"), "-o", str(tmp_path / "warn.o")]
    plain = subprocess.run(["/usr/bin/gcc", *flags], capture_output=True, text=True, check=False)
    assert plain.returncode != 0
    assert "unused" in plain.stderr
    wrapper = openpbs_build._compilers(tmp_path / "compilers") / "gcc"
    wrapped = subprocess.run([str(wrapper), *flags], capture_output=True, text=True, check=False)
    assert wrapped.returncode == 0, wrapped.stderr
    assert "warning: unused variable" in wrapped.stderr
