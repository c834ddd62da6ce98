"""pbs_harness.localcluster.containers.image_cache (`pbs-harness cache`):
statuses of image layers and package sets in a cache
folder made here (PBS_HARNESS_CACHE_DIR), and pruning. Fakes: the recorded clusters (registry.known and
state.load are replaced by what a cluster on one layer and one package set would record)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pbs_harness.localcluster import registry, state
from pbs_harness.localcluster.containers import image_cache, images

DIST = images.DISTRIBUTIONS["debian-12"]


def layer_dir(root: Path, name: str, recipe: dict | None) -> Path:
    path = root / "images" / name
    (path / "tree" / "etc").mkdir(parents=True)
    (path / "tree" / "etc" / "os-release").write_text("x" * 1000)
    if recipe is not None:
        (path / "layer.json").write_text(json.dumps(recipe))
    return path


def package_dir(root: Path, name: str) -> Path:
    path = root / "packages" / name
    path.mkdir(parents=True)
    (path / "openpbs-source.json").write_text(json.dumps({"version": "23.06.06", "archive": "openpbs-x.tar.gz"}))
    (root / "packages" / f"{name}.build.log").write_text("log")
    return path


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(images.CACHE_ENV, str(tmp_path))
    return tmp_path


def statuses(found: list[image_cache.Entry]) -> dict[str, str]:
    return {e.path.name: e.status for e in found}


def test_current_stale_in_use_and_kept(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    host, builder = images.host_layer(DIST), images.builder_layer(DIST)
    layer_dir(cache, host.name, host.recipe())
    in_use = layer_dir(cache, images.base_layer(DIST).name, images.base_layer(DIST).recipe())
    layer_dir(cache, "debian-12-deps-aaaaaaaaaaaa", {"purpose": "deps", "packages": ["a"], "parent": host.key})
    layer_dir(cache, "debian-12-deps-bbbbbbbbbbbb", {"purpose": "deps", "packages": ["a"], "parent": "old"})
    layer_dir(cache, "debian-12-host-000000000000", {"purpose": "host", "packages": []})
    layer_dir(cache, "debian-12-host-111111111111", None)  # interrupted
    used_packages = package_dir(cache, f"aaaa-{builder.name}")
    package_dir(cache, "bbbb-debian-12-builder-000000000000")
    package_dir(cache, "cccc-zip")
    package_dir(cache, f"dddd-{builder.name}")
    recorded = SimpleNamespace(image_lowerdirs=[str(in_use / "tree")], packages_dir=str(used_packages))
    monkeypatch.setattr(registry, "known", lambda: [SimpleNamespace(state_dir="/sd")])
    monkeypatch.setattr(state, "load", lambda root: recorded if root == Path("/sd") else None)

    found = image_cache.entries()
    assert statuses(found) == {
        host.name: "current",
        in_use.name: "in use",
        "debian-12-deps-aaaaaaaaaaaa": "current",
        "debian-12-deps-bbbbbbbbbbbb": "stale",
        "debian-12-host-000000000000": "stale",
        "debian-12-host-111111111111": "stale",
        used_packages.name: "in use",
        "bbbb-debian-12-builder-000000000000": "stale",
        "cccc-zip": "kept",
        f"dddd-{builder.name}": "kept",
    }
    assert all(e.size >= 1000 for e in found if e.kind == "image")

    removed = image_cache.prune(found)
    assert {e.path.name for e in removed} == {n for n, s in statuses(found).items() if s == "stale"}
    assert sorted(p.name for p in (cache / "images").iterdir()) == sorted(
        [host.name, in_use.name, "debian-12-deps-aaaaaaaaaaaa"]
    )
    left = sorted(p.name for p in (cache / "packages").iterdir())
    assert "bbbb-debian-12-builder-000000000000" not in left
    assert "bbbb-debian-12-builder-000000000000.build.log" not in left
    assert f"dddd-{builder.name}" in left


def test_an_empty_cache_has_nothing(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "known", list)
    assert image_cache.entries() == []


def test_a_fake_package_set_cached_before_the_check_is_stale_and_pruned(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #34: a zip of zero-byte openpbs-*.deb files used to be cached as "OpenPBS 23.06.06", and
    `cache --prune` kept it. A set like that, already in a cache, is stale (it can never install), and
    `pbs-harness cache --prune` removes it; a real set beside it (ar archives) is kept. The sets are
    written here as the cache holds them; the command is the real CLI (root faked)."""
    from pbs_harness import cli

    fake = package_dir(cache, "eeee-zip")
    real = package_dir(cache, "ffff-zip")
    for kind in ("server", "execution", "client"):
        name = f"openpbs-{kind}_23.06.06-1_amd64.deb"
        (fake / name).write_bytes(b"")
        (real / name).write_bytes(b"!<arch>\ndebian-binary")
    monkeypatch.setattr(registry, "known", list)
    monkeypatch.setattr("os.geteuid", lambda: 0)

    assert cli.main(["cache"]) == 0
    listed = capsys.readouterr().out
    assert "eeee-zip" in listed, listed
    assert "not packages: openpbs-client_23.06.06-1_amd64.deb" in listed, listed
    assert "1 stale" in listed, listed

    assert cli.main(["cache", "--prune"]) == 0
    assert "removed 1 stale" in capsys.readouterr().out
    assert not fake.exists()
    assert not (cache / "packages" / "eeee-zip.build.log").exists()
    assert real.is_dir()
    assert statuses(image_cache.entries()) == {"ffff-zip": "kept"}
