"""OpenPBS packages from `--openpbs PATH`, cached: built from a source the way upstream builds its
own, taken from a release zip, or used from a folder as they are.

A source (archive or tree) is built by the source's own ci/etc/build-pbs-packages.sh (configure,
make dist, rpmbuild of openpbs.spec with PTL, then `alien --to-deb --scripts` on Debian), inside
a container of the builder image layer of the hosts' distribution, so this machine gets no build
dependencies. The result is kept in the cache under the source's sha256 and that layer:

  <cache>/packages/<sha256[:16]>-<layer>/   the .deb files and openpbs-source.json (written last)

A second run with the same source and image finds them there and builds nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pbs_harness.common import safetar, shell
from pbs_harness.common.errors import HarnessError, PreconditionError
from pbs_harness.deploy.openpbs_source import BUILD_SCRIPT, KINDS, PROVENANCE_FILE, Provenance, Source, package_files
from pbs_harness.localcluster.containers import images

Progress = Callable[[str], None]
BUILD_TIMEOUT = 3600

# The build environment, not the build: upstream's script compiles with -Werror, and the newer
# compilers of today's distributions warn where upstream's CI compilers did not (GCC 12 on Debian 12:
# -Warray-bounds in src/resmom/mom_comm.c). Warnings stay warnings, printed in the build log;
# nothing of the source or the script changes. Wrappers first on PATH (/usr/local/bin) add the flag.
NO_WERROR = "-Wno-error"
COMPILERS = ("gcc", "g++", "cc", "c++")
# Debian's rpm defines no %__python3, which openpbs.spec's byte-compiling of PTL expands.
RPM_MACROS = "%__python3 /usr/bin/python3\n"


# The package build measured on a 2-core machine (issue #33's fresh run: 617 s), the base of the estimate
# for a machine that has not built a package set yet. After a build, its own time is the estimate.
MEASURED_BUILD_S = 617
MEASURED_BUILD_CPUS = 2
BUILD_TIMES = ".build-times.json"


def build_estimate() -> str:
    """How long the package build will take on this machine: its last build's time, else an estimate."""
    record = images.cache_dir() / "packages" / BUILD_TIMES
    try:
        last = json.loads(record.read_text())
        return f"the last build on this machine took {last['seconds']:.0f}s ({last['cpus']} CPUs, load {last['load']})"
    except (OSError, ValueError, KeyError, TypeError):
        pass
    cpus = os.cpu_count() or 1
    # make -j of upstream's script scales with the cores until about 8 (linking and alien are serial).
    seconds = MEASURED_BUILD_S * MEASURED_BUILD_CPUS / min(max(cpus, 1), 8)
    return (
        f"estimate: about {seconds / 60:.0f} minutes here ({cpus} CPUs; {MEASURED_BUILD_S}s were measured on "
        f"{MEASURED_BUILD_CPUS}), longer while the machine is busy (load now {os.getloadavg()[0]:.1f})"
    )


def _record_build_time(seconds: float) -> None:
    record = images.cache_dir() / "packages" / BUILD_TIMES
    load = f"{os.getloadavg()[0]:.1f}"
    record.write_text(json.dumps({"seconds": round(seconds), "cpus": os.cpu_count(), "load": load}) + "\n")


class BuildFailed(HarnessError):
    """The upstream build script failed inside the builder container."""


@dataclass(frozen=True)
class PackageSet:
    """A folder of OpenPBS packages for one distribution, and where they came from."""

    path: Path
    provenance: Provenance

    @property
    def version(self) -> str:
        return self.provenance.version

    def file(self, kind: str) -> str:
        return self.provenance.package_kinds[kind]


def depends(packages: Path) -> set[str]:
    """The Debian packages the server, execution and client packages depend on (names; the first
    of alternatives), read with dpkg-deb."""
    found = _load(packages)
    if found is None:
        raise PreconditionError(f"{packages} has no {PROVENANCE_FILE}", "name the packages with --openpbs again")
    names: set[str] = set()
    for kind in ("server", "execution", "client"):
        field = shell.check(["dpkg-deb", "--field", str(packages / found.file(kind)), "Depends"])
        for item in field.split(","):
            name = item.split("|")[0].strip().split(" ")[0].split(":")[0]
            if name:
                names.add(name)
    return names


def _provenance(source: Source, folder: Path, build_image: str | None) -> Provenance:
    found = package_files(sorted(p.name for p in folder.iterdir()))
    missing = [name for name in ("openpbs-server", "openpbs-execution", "openpbs-client") if name not in found]
    if missing:
        raise PreconditionError(
            f"{folder} has no {', '.join(missing)} package (found: {', '.join(sorted(found)) or 'none'})",
            "name a release zip or folder with the server, execution and client packages",
        )
    versions = {version for _, version in found.values()}
    if len(versions) != 1:
        raise PreconditionError(
            f"{folder} mixes OpenPBS versions {', '.join(sorted(versions))}", "keep one version's packages in it"
        )
    kinds = {KINDS.get(name, name.removeprefix("openpbs-")): file for name, (file, _) in found.items()}
    return Provenance(source.form, source.path.name, source.sha256, source.commit, versions.pop(), kinds, build_image)


def _load(folder: Path) -> PackageSet | None:
    record = folder / PROVENANCE_FILE
    if not record.is_file():
        return None
    try:
        return PackageSet(folder, Provenance.from_json(json.loads(record.read_text())))
    except (ValueError, TypeError):
        return None  # a record of another format: made again


def _save(folder: Path, provenance: Provenance) -> PackageSet:
    tmp = folder / (PROVENANCE_FILE + ".tmp")
    tmp.write_text(json.dumps(provenance.to_json(), indent=2) + "\n")
    tmp.replace(folder / PROVENANCE_FILE)
    return PackageSet(folder, provenance)


def ensure(source: Source, dist: images.Distribution, progress: Progress) -> PackageSet:
    """The packages of `source` for hosts of `dist`: from the cache, unpacked, or built."""
    if source.form == "packages":
        return PackageSet(source.path, _provenance(source, source.path, None))
    layer = images.builder_layer(dist) if source.needs_build else None
    folder = images.cache_dir() / "packages" / f"{source.sha256[:16]}-{layer.name if layer else source.form}"
    cached = _load(folder)
    if cached:
        progress(f"OpenPBS {cached.version} packages of {source.path.name}: cached in {folder}")
        return cached
    with images.cache_lock(folder):
        cached = _load(folder)
        if cached:
            return cached
        if folder.exists():
            shutil.rmtree(folder)  # an interrupted build or unpacking
        folder.mkdir(parents=True)
        if layer is None:
            _unzip(source.path, folder)
            return _save(folder, _provenance(source, folder, None))
        images.ensure(layer, progress)
        _build(source, layer, folder, progress)
        return _save(folder, _provenance(source, folder, layer.name))


def _unzip(path: Path, folder: Path) -> None:
    """The release zip's package files, flat in `folder` (whatever folders the zip holds them in)."""
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            name = Path(info.filename).name
            if name.endswith((".deb", ".rpm")) and not info.is_dir():
                with zf.open(info) as src, (folder / name).open("wb") as dst:
                    shutil.copyfileobj(src, dst)


def unpack_source(source: Source, into: Path) -> Path:
    """The source tree to build: a tree as it is, an archive unpacked (its one top folder stripped).
    Also the mutant build tree's unpacking (deploy/mutants/buildtree.py): one rule for both."""
    if source.form == "tree":
        return source.path
    into.mkdir(parents=True)
    with tarfile.open(source.path) as tar:
        safetar.extract(tar, into)
    tops = [p for p in into.iterdir() if p.is_dir()]
    return tops[0] if len(tops) == 1 and not (into / "configure.ac").exists() else into


def _compilers(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in COMPILERS:
        wrapper = folder / name
        wrapper.write_text(f'#!/bin/sh\nexec /usr/bin/{name} "$@" {NO_WERROR}\n')
        wrapper.chmod(0o755)
    return folder


def _build(source: Source, layer: images.Layer, folder: Path, progress: Progress) -> None:
    work = folder.parent / f".{folder.name}.work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log = folder.parent / f"{folder.name}.build.log"
    log.unlink(missing_ok=True)
    try:
        tree = unpack_source(source, work / "src")
        out = work / "out"
        out.mkdir()
        progress(
            f"building OpenPBS packages from {source.path.name} in {layer.name} with its own {BUILD_SCRIPT} "
            f"(configure, make dist, rpmbuild, alien; {build_estimate()}; log {log}; once: "
            "`pbs-harness cache --import` of another machine's export skips it)"
        )
        start = time.monotonic()
        compilers = _compilers(work / "compilers")
        rc = images.run_in_layer(
            layer,
            work / "root",
            # The script itself, so that its shebang's `bash -xe` stops it at the first error.
            [f"/pbssrc/{BUILD_SCRIPT}"],
            machine=f"build-{source.sha256[:12]}",
            log=log,
            timeout=BUILD_TIMEOUT,
            # /src, not /src/packages: the script removes and remakes /src/packages.
            binds={tree: "/pbssrc", out: "/src", compilers: "/usr/local/bin"},
            ro={tree, compilers},
            prepare=lambda root: (root / "root/.rpmmacros").write_text(RPM_MACROS),
        )
        if rc != 0:
            raise BuildFailed(
                f"the OpenPBS package build of {source.path.name} failed (rc={rc}); the end of {log}:\n"
                f"{images.log_tail(log, 15)}",
                "read the log; a source that does not build on this image may need another (--image)",
            )
        debs = sorted((out / "packages").glob("*.deb"))
        if not debs:
            raise BuildFailed(f"the package build of {source.path.name} left no .deb file in its output", f"see {log}")
        for deb in debs:
            shutil.move(str(deb), folder / deb.name)
        took = time.monotonic() - start
        _record_build_time(took)
        progress(f"OpenPBS packages built in {took:.0f}s: {', '.join(d.name for d in debs)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
