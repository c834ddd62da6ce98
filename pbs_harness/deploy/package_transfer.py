"""Moving an OpenPBS package set between caches (`pbs-harness cache --export FILE / --import FILE`), so CI
and a second machine skip the package build (about ten minutes on 2 cores).

A package set is a folder of the cache, <cache>/packages/<sha256[:16] of the source>-<builder layer>/ with
its .deb files and openpbs-source.json (pbs_harness.deploy.openpbs_build). Its name is its key: a checkout whose
recipes make the same builder layer looks for exactly that folder, so an imported set is found by the
next `up --openpbs` of the same source and nothing is built. The export is a tar.gz holding that one
folder; the import checks it (one top folder, a provenance record, package files, no links or paths out
of the folder) before anything lands in the cache, and lands it whole (rename) or not at all.
"""

from __future__ import annotations

import json
import shutil
import tarfile
import tempfile
from pathlib import Path

from pbs_harness.common import safetar
from pbs_harness.common.errors import PreconditionError
from pbs_harness.deploy.openpbs_source import PROVENANCE_FILE
from pbs_harness.localcluster.containers import images


def packages_dir() -> Path:
    return images.cache_dir() / "packages"


def complete_sets() -> list[Path]:
    """The cache's package sets that have their provenance record (an interrupted build has none)."""
    parent = packages_dir()
    if not parent.is_dir():
        return []
    return sorted(p for p in parent.iterdir() if p.is_dir() and (p / PROVENANCE_FILE).is_file())


def choose(name: str | None) -> Path:
    """The package set named `name` (a folder name of `pbs-harness cache`), or the only one there is."""
    found = complete_sets()
    names = ", ".join(p.name for p in found) or "none"
    if name:
        match = [p for p in found if p.name == name]
        if not match:
            raise PreconditionError(
                f"no package set {name!r} in {packages_dir()} (there are: {names})",
                "name one that `pbs-harness cache` lists as a packages entry",
            )
        return match[0]
    if len(found) != 1:
        raise PreconditionError(
            f"{len(found)} package sets in {packages_dir()} ({names}): which one to export is not clear",
            "name it: pbs-harness cache --export FILE --packages NAME",
        )
    return found[0]


def export(folder: Path, target: Path) -> int:
    """Write the package set `folder` to the tar.gz `target` (written beside it, then renamed); its size."""
    if target.is_dir():
        raise PreconditionError(f"{target} is a directory", "give the file to write, e.g. openpbs-packages.tar.gz")
    if not target.parent.is_dir():
        raise PreconditionError(f"the folder of {target} does not exist", "create it or write somewhere else")
    tmp = target.with_name(f".{target.name}.tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for path in sorted(folder.iterdir()):
            if path.is_file() and not path.is_symlink():
                tar.add(path, arcname=f"{folder.name}/{path.name}")
    tmp.replace(target)
    return target.stat().st_size


def _check_members(members: list[tarfile.TarInfo], source: Path) -> str:
    """The one top folder of an export, after checking every member is a plain file right under it."""
    tops = {m.name.split("/", 1)[0] for m in members}
    bad = [
        m.name
        for m in members
        if not m.isfile() or m.name.count("/") != 1 or m.name.startswith("/") or ".." in m.name.split("/")
    ]
    if len(tops) != 1 or bad or not members:
        raise PreconditionError(
            f"{source} is not a package-set export: it must hold plain files in one folder"
            + (f" (not: {', '.join(bad[:3])})" if bad else f" (its top entries: {', '.join(sorted(tops)) or 'none'})"),
            "give a file written by `pbs-harness cache --export`",
        )
    top = tops.pop()
    names = {m.name.split("/", 1)[1] for m in members}
    if PROVENANCE_FILE not in names or not any(n.endswith((".deb", ".rpm")) for n in names):
        raise PreconditionError(
            f"{source} holds no {PROVENANCE_FILE} or no package file: not a complete package set",
            "export it again from a cache where `pbs-harness cache` lists it",
        )
    return top


def import_(source: Path) -> tuple[Path, bool]:
    """Unpack the export `source` into the cache; (its folder, False when the cache had it already)."""
    if not source.is_file():
        raise PreconditionError(f"{source} does not exist or is not a file", "give the file `cache --export` wrote")
    try:
        with tarfile.open(source, "r:gz") as tar:
            members = tar.getmembers()
            top = _check_members(members, source)
            folder = packages_dir() / top
            if (folder / PROVENANCE_FILE).is_file():
                return folder, False
            folder.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".import-") as work:
                safetar.extract(tar, work, members)
                json.loads((Path(work) / top / PROVENANCE_FILE).read_text())  # a readable record
                if folder.exists():
                    shutil.rmtree(folder)  # an interrupted build or import of the same set
                (Path(work) / top).rename(folder)
    except (tarfile.TarError, OSError, ValueError, EOFError) as exc:
        raise PreconditionError(
            f"{source} could not be read as a package-set export: {exc}", "give the file `cache --export` wrote"
        ) from exc
    return folder, True
