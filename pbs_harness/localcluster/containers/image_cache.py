"""What the system hosts' cache holds (/var/cache/pbs-harness, PBS_HARNESS_CACHE_DIR): image layers and
OpenPBS package sets, each with its size and whether it is current, in use or stale; and pruning the
stale ones (`pbs-harness cache [--prune]`).

A layer is current when this checkout's recipes make it
(pbs_harness.localcluster.containers.images: base, host and builder of
each distribution, and deps layers on a current host layer); in use when a recorded local cluster's
hosts run on it; else stale (an older recipe's). A package set is in use when a recorded cluster
installed from it, stale when its builder layer is stale (the same source would be built again on the
current one) or when its package files are not packages (a fake set cached before they were checked),
else kept: a package set cannot be made again without its source, so only stale ones go."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pbs_harness.deploy import openpbs_source
from pbs_harness.localcluster import registry, state
from pbs_harness.localcluster.containers import images


@dataclass(frozen=True)
class Entry:
    kind: str  # image | packages
    path: Path
    size: int  # bytes
    status: str  # current | in use | kept | stale
    about: str  # the layer's purpose and packages, or the package set's source and version


def _size(path: Path) -> int:
    total = 0
    for p in path.rglob("*"):
        try:
            if p.is_file() and not p.is_symlink():
                total += p.lstat().st_size
        except OSError:
            continue
    return total


def current_layers() -> set[str]:
    """Names of the layers this checkout's recipes make."""
    names = set()
    for dist in images.DISTRIBUTIONS.values():
        names |= {images.base_layer(dist).name, images.host_layer(dist).name, images.builder_layer(dist).name}
    return names


def _in_use() -> tuple[set[Path], set[Path]]:
    """Image layer folders and package folders that recorded local clusters use."""
    layers: set[Path] = set()
    packages: set[Path] = set()
    for cluster in registry.known():
        if not cluster.state_dir:
            continue
        try:
            st = state.load(Path(cluster.state_dir))
        except (OSError, ValueError, TypeError):
            continue
        if st is None:
            continue
        layers |= {Path(d).parent for d in st.image_lowerdirs}
        if st.packages_dir:
            packages.add(Path(st.packages_dir))
    return layers, packages


def entries() -> list[Entry]:
    """Every image layer and package set of the cache, with its status."""
    used_layers, used_packages = _in_use()
    root = images.cache_dir()
    return _image_entries(root / "images", used_layers) + _package_entries(root / "packages", used_packages)


def _folders(parent: Path) -> list[Path]:
    return sorted(p for p in parent.glob("*") if p.is_dir()) if parent.is_dir() else []


def _record(path: Path, describe: Callable[[dict], str], missing: str) -> tuple[dict, str]:
    """An entry's JSON record (its layer.json or openpbs-source.json) and what `describe` says of it;
    ({}, `missing`) when the file is absent or unreadable (a build was interrupted before writing it)."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}, missing
    return record, describe(record)


def _about_layer(recipe: dict) -> str:
    return f"{recipe.get('purpose', '?')} layer, {len(recipe.get('packages', []))} packages"


def _about_packages(record: dict) -> str:
    return f"OpenPBS {record.get('version', '?')} from {record.get('archive') or record.get('file', '?')}"


def _image_entries(parent: Path, used: set[Path]) -> list[Entry]:
    current = current_layers()
    host_keys = {images.host_layer(d).key for d in images.DISTRIBUTIONS.values()}  # deps layers sit on one
    out = []
    for path in _folders(parent):
        recipe, about = _record(
            path / "layer.json", _about_layer, "incomplete layer (no layer.json: an interrupted build)"
        )
        if path in used:
            status = "in use"
        elif path.name in current or (recipe.get("purpose") == "deps" and recipe.get("parent") in host_keys):
            status = "current"
        else:
            status = "stale"
        out.append(Entry("image", path, _size(path), status, about))
    return out


def _package_entries(parent: Path, used: set[Path]) -> list[Entry]:
    builders = {images.builder_layer(d).name for d in images.DISTRIBUTIONS.values()}
    out = []
    for path in _folders(parent):
        _, about = _record(
            path / "openpbs-source.json", _about_packages, "incomplete package set (no openpbs-source.json)"
        )
        built_on = path.name.split("-", 1)[1] if "-" in path.name else ""
        fake = openpbs_source.not_packages(path)
        if fake:
            about += f"; not packages: {', '.join(fake)} (cached before they were checked; it cannot install)"
        if path in used:
            status = "in use"
        elif fake:
            status = "stale"  # issue #34: a zip or folder of zero-byte .debs used to be cached as a version
        elif "-builder-" in built_on and built_on not in builders:
            status = "stale"  # the same source would be built again on the current builder layer
        else:
            status = "kept"
        out.append(Entry("packages", path, _size(path), status, about))
    return out


def prune(found: list[Entry]) -> list[Entry]:
    """Remove the stale entries (and a stale package set's build log); returns what was removed."""
    removed = []
    for entry in found:
        if entry.status != "stale":
            continue
        shutil.rmtree(entry.path)
        if entry.kind == "packages":
            entry.path.with_name(entry.path.name + ".build.log").unlink(missing_ok=True)
        removed.append(entry)
    return removed
