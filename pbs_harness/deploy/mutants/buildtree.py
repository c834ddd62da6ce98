"""A configured, built OpenPBS tree kept in the cache, so that a mutant rebuilds one daemon in
minutes instead of the whole package build (openpbs_build: about 10 minutes on 2 cores).

The tree is made once per source and builder layer, in a container of the builder image (this
machine gets no build dependencies), configured the way openpbs.spec configures the package build
(same prefix, PBS home, database user, version, --enable-ptl; the script's -g -O2 -Wall flags):

  <cache>/mutants/<sha256[:16]>-<layer>/
      src/             the source, unpacked and autogen'ed; mutants are applied here and taken back
      build/           the configured build (VPATH), fully made once
      stage-pristine/  `make install DESTDIR=` of the pristine build: what a mutant's files are compared with
      stage-mutant/    the last mutant's `make -C DIR install DESTDIR=` of the folders it touched
      tree.json        written last: a tree without it is incomplete and made again

Inside the container the folder is always /pbs, so the absolute paths configure wrote stay valid.
A rebuild runs `make` in the build folder of each touched file (make recompiles what changed and
relinks), installs that folder into stage-mutant, and returns the installed files whose bytes
differ from the pristine stage: the daemon (or Python file) the patch changed, nothing else.
"""

from __future__ import annotations

import filecmp
import json
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pbs_harness.common.errors import HarnessError, PreconditionError
from pbs_harness.deploy import openpbs_build
from pbs_harness.deploy.openpbs_source import Source
from pbs_harness.localcluster.containers import images

Progress = Callable[[str], None]
INSIDE = PurePosixPath("/pbs")
FORMAT = "pbs-harness/mutant-build-tree/1"
BUILD_TIMEOUT = 3600
REBUILD_TIMEOUT = 1800
# openpbs.spec's %build configure line, with the values of its macros for the Debian packages
# (pbs_prefix, pbs_home, pbs_dbuser) and ci/etc/build-pbs-packages.sh's --enable-ptl; -Werror left
# out for the reason openpbs_build gives (newer compilers warn where upstream's CI did not).
CONFIGURE = (
    "--prefix=/opt/pbs",
    "--enable-ptl",
    "--with-pbs-server-home=/var/spool/pbs",
    "--with-database-user=postgres",
)
CFLAGS = "-g -O2 -Wall -Wno-unused-result"


class BuildFailed(HarnessError):
    """make failed inside the builder container."""


@dataclass(frozen=True)
class BuildTree:
    path: Path
    version: str

    @property
    def src(self) -> Path:
        return self.path / "src"

    @property
    def build(self) -> Path:
        return self.path / "build"

    @property
    def pristine(self) -> Path:
        return self.path / "stage-pristine"

    @property
    def mutant(self) -> Path:
        return self.path / "stage-mutant"


def tree_path(source: Source, layer: images.Layer) -> Path:
    return images.cache_dir() / "mutants" / f"{source.sha256[:16]}-{layer.name}"


# One user of a build tree at a time (a second bench waits).
locked = images.cache_lock


def _run(tree: Path, layer: images.Layer, script: str, log: Path, timeout: float) -> int:
    """`script` (sh) in a container of the builder layer with the tree at /pbs; output appended to log."""
    work = tree.parent / f".{tree.name}.run"
    shutil.rmtree(work, ignore_errors=True)
    try:
        return images.run_in_layer(
            layer,
            work,
            ["/bin/sh", "-c", script],
            machine=f"mutbuild-{tree.name[:12]}",
            log=log,
            timeout=timeout,
            binds={tree: str(INSIDE)},
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def ensure(source: Source, version: str, dist: images.Distribution, progress: Progress) -> BuildTree:
    """The built tree of `source` (an archive or tree) for the builder layer of `dist`: cached or made.
    Call it holding `locked(path)`."""
    if source.form not in ("archive", "tree"):
        raise PreconditionError(
            f"{source.path} is not an OpenPBS source: a mutant is a change to the source",
            "give the source archive or tree the cluster's packages were built from (--source)",
        )
    layer = images.ensure(images.builder_layer(dist), progress)
    path = tree_path(source, layer)
    record = path / "tree.json"
    if record.is_file():
        data = json.loads(record.read_text())
        if data.get("format") == FORMAT and data.get("sha256") == source.sha256:
            progress(f"build tree of {source.path.name}: cached in {path}")
            return BuildTree(path, data["version"])
    shutil.rmtree(path, ignore_errors=True)  # an interrupted one
    path.mkdir(parents=True)
    log = path / "build.log"
    start = time.monotonic()
    _unpack(source, path / "src")
    progress(
        f"build tree of {source.path.name}: autogen, configure, make, make install into a stage, in "
        f"{layer.name} (once per source; 10-20 minutes on 2 cores; log {log})"
    )
    configure = " ".join(shlex.quote(a) for a in (f"PBS_VERSION={version}", *CONFIGURE))
    script = (
        "set -ex; cd /pbs/src; ./autogen.sh; mkdir -p /pbs/build; cd /pbs/build; "
        f"CFLAGS={shlex.quote(CFLAGS)} CXXFLAGS={shlex.quote(CFLAGS)} ../src/configure {configure}; "
        "nice -n 10 make -j2; make install DESTDIR=/pbs/stage-pristine"
    )
    rc = _run(path, layer, script, log, BUILD_TIMEOUT)
    if rc != 0:
        raise BuildFailed(
            f"the build tree of {source.path.name} failed (rc={rc}); the end of {log}:\n{images.log_tail(log, 20)}",
            "read the log",
        )
    data = {"format": FORMAT, "source": source.path.name, "sha256": source.sha256, "version": version,
            "layer": layer.name, "configure": [f"PBS_VERSION={version}", *CONFIGURE], "cflags": CFLAGS}  # fmt: skip
    (path / "tree.json.tmp").write_text(json.dumps(data, indent=2) + "\n")
    (path / "tree.json.tmp").replace(record)
    progress(f"build tree made in {time.monotonic() - start:.0f}s: {path}")
    return BuildTree(path, version)


def _unpack(source: Source, into: Path) -> None:
    """The source, writable at `into` (make builds in the tree): a tree copied, an archive unpacked
    as the package build unpacks it (openpbs_build.unpack_source)."""
    if source.form == "tree":
        shutil.copytree(source.path, into, symlinks=True)
        return
    tmp = into.parent / ".unpack"
    shutil.rmtree(tmp, ignore_errors=True)
    openpbs_build.unpack_source(source, tmp).rename(into)
    shutil.rmtree(tmp, ignore_errors=True)


def make_dir(tree: BuildTree, rel: str) -> str:
    """The build folder (relative to build/) whose Makefile builds source file `rel`: the nearest
    folder above it that has a Makefile in the build tree."""
    parent = PurePosixPath(rel).parent
    while str(parent) not in ("", "."):
        if (tree.build / parent / "Makefile").is_file():
            return str(parent)
        parent = parent.parent
    raise PreconditionError(
        f"no Makefile of the build tree builds {rel}",
        "a mutant changes a daemon's or Python module's source under src/ (e.g. src/resmom/*.c, src/server/*.c)",
    )


def rebuild(tree: BuildTree, dist: images.Distribution, files: list[str], progress: Progress) -> list[str]:
    """Rebuild the folders of the changed `files` (already applied to tree.src) and install them into
    the mutant stage; return the installed paths (e.g. opt/pbs/sbin/pbs_mom) whose bytes differ from
    the pristine build's."""
    layer = images.builder_layer(dist)
    dirs = sorted({make_dir(tree, f) for f in files})
    shutil.rmtree(tree.mutant, ignore_errors=True)
    log = tree.path / "rebuild.log"
    log.unlink(missing_ok=True)
    steps = "; ".join(
        f"nice -n 10 make -C /pbs/build/{d} -j2; make -C /pbs/build/{d} install DESTDIR=/pbs/stage-mutant" for d in dirs
    )
    progress(f"rebuilding {', '.join(dirs)} (make; make install into a stage; log {log})")
    start = time.monotonic()
    rc = _run(tree.path, layer, f"set -ex; {steps}", log, REBUILD_TIMEOUT)
    if rc != 0:
        raise BuildFailed(
            f"rebuilding {', '.join(dirs)} with the mutant failed (rc={rc}); the end of {log}:\n"
            f"{images.log_tail(log, 20)}",
            "the patch must compile against this source",
        )
    changed = changed_files(tree.pristine, tree.mutant)
    progress(f"rebuilt in {time.monotonic() - start:.0f}s; changed: {', '.join(changed) or 'nothing'}")
    return changed


# Byte-compiled Python is made again by the hosts' Python from the .py it belongs with.
IGNORED_SUFFIXES = (".pyc", ".pyo")


def changed_files(pristine: Path, mutant: Path) -> list[str]:
    """Files under `mutant` (relative paths) that pristine lacks or holds with other bytes."""
    out = []
    for p in sorted(mutant.rglob("*")):
        if not p.is_file() or p.is_symlink() or p.suffix in IGNORED_SUFFIXES:
            continue
        rel = p.relative_to(mutant)
        other = pristine / rel
        if not other.is_file() or not filecmp.cmp(p, other, shallow=False):
            out.append(str(rel))
    return out


def copy_files(stage: Path, files: list[str], into: Path) -> None:
    """`files` of a stage into a folder of the caller's own (emptied first), modes kept."""
    shutil.rmtree(into, ignore_errors=True)
    for rel in files:
        (into / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(stage / rel, into / rel)
