"""Image layers of system hosts (pbs_harness.localcluster.containers.images):
recipes, keys, names, the container command line,
and what makes a root filesystem generic — nothing is debootstrapped, mounted or run.

Faked: the cache (PBS_HARNESS_CACHE_DIR, a tmp folder), the mirror (PBS_HARNESS_DEBIAN_MIRROR), and for
_make_generic a root filesystem of a few files in tmp_path standing in for debootstrap's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import spec
from pbs_harness.localcluster.containers import images, nspawn

ROOT = Path(__file__).resolve().parents[2]
BOOKWORM = images.distribution("debian-12")


@pytest.fixture(autouse=True)
def _cache_and_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(images.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(images.MIRROR_ENV, raising=False)


def test_a_layers_key_is_its_recipe_and_stays_the_same() -> None:
    layer = images.host_layer(BOOKWORM)
    assert layer.key == images.host_layer(BOOKWORM).key
    same_packages_reversed = images.Layer(BOOKWORM, "host", tuple(reversed(layer.packages)), parent=layer.parent)
    assert same_packages_reversed.key == layer.key  # order is no part
    assert layer.recipe()["mirror"] == images.DEFAULT_MIRROR
    assert layer.name == f"debian-12-host-{layer.key[:12]}"
    assert layer.tree == Path(images.cache_dir()) / "images" / layer.name / "tree"


def test_a_changed_package_list_mirror_parent_or_distribution_is_another_layer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host = images.host_layer(BOOKWORM)
    builder = images.builder_layer(BOOKWORM)
    keys = {
        "host": host.key,
        "more packages": images.Layer(BOOKWORM, "host", (*host.packages, "vim")).key,
        "other distribution": images.host_layer(images.distribution("debian-11")).key,
        "builder": builder.key,
        "builder on another parent": images.Layer(
            BOOKWORM, "builder", builder.packages, parent=images.Layer(BOOKWORM, "host", ("systemd-sysv",))
        ).key,
    }
    assert len(set(keys.values())) == len(keys), keys
    monkeypatch.setenv(images.MIRROR_ENV, "http://mirror.invalid/debian")
    # (A key is computed when asked for: the mirror is read then.)
    assert images.host_layer(BOOKWORM).key != keys["host"]
    # A derived layer's key changes with its parent's: a new mirror rebuilds the builder too.
    assert images.builder_layer(BOOKWORM).key != keys["builder"]


def test_the_host_and_builder_layers_lie_each_on_the_base_layer() -> None:
    """A change of the hosts' packages never makes another builder (and so never rebuilds packages)."""
    builder = images.builder_layer(BOOKWORM)
    host = images.host_layer(BOOKWORM)
    base = images.base_layer(BOOKWORM)
    assert builder.parent == base
    assert host.parent == base
    assert base.parent is None
    assert base.packages == ()
    assert builder.recipe()["parent"] == base.key
    assert builder.lowerdirs() == [builder.tree, base.tree]  # top first, as overlayfs wants
    assert host.lowerdirs() == [host.tree, base.tree]
    more = images.Layer(BOOKWORM, "host", (*host.packages, "vim"), parent=base)
    assert more.key != host.key
    assert images.builder_layer(BOOKWORM).key == builder.key


def test_the_host_layer_holds_openpbs_runtime_packages_from_the_install_role() -> None:
    """One list: the openpbs_install role's per-kind runtime packages (what it installs on VMs)."""
    defaults = yaml.safe_load((ROOT / "roles/openpbs_install/defaults/main.yml").read_text())
    runtime = {pkg for pkgs in defaults["openpbs_install_runtime_packages"]["apt"].values() for pkg in pkgs}
    assert {"postgresql", "libical3", "tcl"} <= runtime  # the server's, read from the role
    packages = set(images.host_layer(BOOKWORM).packages)
    assert runtime <= packages
    assert set(images.HOST_PACKAGES) <= packages
    assert images.runtime_packages() == tuple(sorted(runtime))


def test_a_layer_is_complete_once_its_recipe_is_written() -> None:
    layer = images.host_layer(BOOKWORM)
    assert not layer.complete
    layer.tree.mkdir(parents=True)
    assert not layer.complete  # an interrupted build
    (layer.path / "layer.json").write_text("{}")
    assert layer.complete


def test_distribution_names_and_the_refusal() -> None:
    assert images.distribution("debian-12") == images.Distribution("debian-12", "bookworm")
    assert images.distribution("debian-11").suite == "bullseye"
    with pytest.raises(PreconditionError) as err:
        images.distribution("centos-9")
    assert err.value.message == "there is no image 'centos-9'"
    assert err.value.hint == "use one of: debian-11, debian-12"
    # Every image the command line offers (--image) has a distribution.
    assert set(spec.IMAGES) == set(images.DISTRIBUTIONS)
    assert spec.DEFAULT_IMAGE == images.DEFAULT_DISTRIBUTION


def test_run_argv_without_network_and_with_binds(tmp_path: Path) -> None:
    src, conf = tmp_path / "src", tmp_path / "conf"
    argv = images.run_argv(tmp_path / "root", binds={src: "/pbssrc", conf: "/etc/x"}, ro={src}, name="build-1")
    assert argv[0] == nspawn.PROGRAM
    assert f"--directory={tmp_path / 'root'}" in argv
    assert "--machine=build-1" in argv
    assert "--private-network" in argv
    assert "--resolv-conf=off" in argv
    assert f"--bind-ro={src}:/pbssrc" in argv
    assert f"--bind={conf}:/etc/x" in argv
    # No service manager is asked for a scope (nspawn.py).
    assert "--register=no" in argv
    assert "--keep-unit" in argv
    assert "--boot" not in argv


def test_run_argv_with_this_machines_network_for_apt(tmp_path: Path) -> None:
    argv = images.run_argv(tmp_path, network="host")
    assert "--private-network" not in argv
    assert "--resolv-conf=copy-host" in argv
    assert "--machine=pbs-harness-build" in argv
    assert not any(a.startswith("--bind") for a in argv)


def test_a_root_filesystem_is_made_generic(tmp_path: Path) -> None:
    """What each host gets of its own at first boot is taken out of the image (a fake root in tmp)."""
    tree = tmp_path / "tree"
    for rel, text in {
        "etc/ssh/ssh_host_ed25519_key": "private",
        "etc/ssh/ssh_host_ed25519_key.pub": "public",
        "etc/ssh/sshd_config": "kept",
        "etc/machine-id": "0123456789abcdef\n",
        "etc/hostname": "builder\n",
        "lib/systemd/system/postgresql.service": "[Unit]\n",
        "etc/postgresql/15/main/postgresql.conf": "x",
        "var/lib/postgresql/15/main/PG_VERSION": "15",
        "var/cache/apt/archives/big.deb": "x",
    }.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    wants = tree / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True)
    (wants / "postgresql.service").symlink_to("/lib/systemd/system/postgresql.service")

    images._make_generic(tree)

    assert sorted(p.name for p in (tree / "etc/ssh").iterdir()) == ["sshd_config"]
    assert (tree / "etc/machine-id").read_text() == ""
    assert not (tree / "etc/hostname").exists()
    for unit in images._MASKED_UNITS:
        assert (tree / "etc/systemd/system" / unit).readlink() == Path("/dev/null")
    assert not (wants / "postgresql.service").is_symlink()
    assert not (tree / "etc/postgresql/15/main").exists()
    assert not (tree / "var/lib/postgresql/15/main").exists()
    assert list((tree / "var/cache/apt/archives").iterdir()) == [tree / "var/cache/apt/archives/partial"]
