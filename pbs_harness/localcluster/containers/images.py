"""Root filesystems of system hosts and package builders, made once from Debian's registry and cached
by content.

A layer is a recipe (distribution, purpose, package list, parent layer); its key is the sha256 of
that recipe, so a changed package list is a new layer and an unchanged one is found again. Layers
live in the cache (default /var/cache/pbs-harness/images, env PBS_HARNESS_CACHE_DIR):

  <name>/tree/        the base layer's root filesystem (debootstrap), or a derived layer's
                      overlayfs upper directory (what it adds to its parent)
  <name>/layer.json   the recipe; written last, so a layer without it is incomplete and is rebuilt

A host or a build sees a layer through overlayfs: lowerdir = the layer's tree and its parents',
with an upper directory of its own, so nothing ever writes into a cached layer.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from pbs_harness.common import project, shell
from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster.containers import nspawn

CACHE_ENV = "PBS_HARNESS_CACHE_DIR"
DEFAULT_CACHE = Path("/var/cache/pbs-harness")
MIRROR_ENV = "PBS_HARNESS_DEBIAN_MIRROR"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# Bumped when what a recipe produces changes without its fields changing (the post-steps below).
RECIPE_VERSION = 2

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Distribution:
    name: str  # what --image takes
    suite: str  # Debian's code name, for debootstrap


DISTRIBUTIONS = {d.name: d for d in (Distribution("debian-12", "bookworm"), Distribution("debian-11", "bullseye"))}
DEFAULT_DISTRIBUTION = "debian-12"

# What a minimal cloud VM of the distribution offers: systemd as PID 1, sshd, Python for Ansible
# (python3-apt for its apt module), sudo, the network tools the harness's faults use, and a host
# firewall that lets only SSH in (HOST_FIREWALL) until the roles open it to the cluster. gdb: the
# interleaving faults (suite/faults/interleave.py) hold a PBS process at a chosen system call with it.
HOST_PACKAGES = (
    "ufw",
    "systemd-sysv",
    "dbus",
    "openssh-server",
    "openssh-client",
    "python3",
    "python3-apt",
    "sudo",
    "iproute2",
    "iptables",
    "procps",
    "less",
    "gdb",
)

# What ci/etc/build-pbs-packages.sh of the OpenPBS source needs on Debian (the Debian/Ubuntu list
# of its ci/etc/install-system-packages, without the tools its own CI uses for other things, and
# without sendmail, whose postinst can hang in newaliases).
BUILD_PACKAGES = (
    "build-essential",
    "dpkg-dev",
    "debhelper",
    "m4",
    "autoconf",
    "automake",
    "libtool",
    "libltdl-dev",
    "pkg-config",
    "rpm",
    "alien",
    "fakeroot",
    "elfutils",
    "bison",
    "flex",
    "libhwloc-dev",
    "libx11-dev",
    "libxt-dev",
    "libedit-dev",
    "libical-dev",
    "libncurses-dev",
    "libpq-dev",
    "postgresql-server-dev-all",
    "python3-dev",
    "tcl-dev",
    "tk-dev",
    "swig",
    "libexpat1-dev",
    "libssl-dev",
    "libxext-dev",
    "libxft-dev",
    "libcjson-dev",
    "zlib1g-dev",
)


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def check_cache_dir(*, writable: bool) -> None:
    """The cache folder is a folder (and, to build into it, one this user can create or write): a file there
    used to give a raw `[Errno 20] Not a directory`, and `cache` called it "empty"."""
    where = cache_dir()
    named = f"{where} (from ${CACHE_ENV})" if os.environ.get(CACHE_ENV) else str(where)
    hint = f"point ${CACHE_ENV} at a folder (or unset it for {DEFAULT_CACHE})"
    blocker = next((p for p in (where, *where.parents) if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        what = "is a file, not a folder" if blocker == where else f"cannot be a folder: {blocker} is a file"
        raise PreconditionError(f"the cache folder {named} {what}", hint)
    if writable and blocker is not None and not os.access(blocker, os.W_OK | os.X_OK):
        raise PreconditionError(f"the cache folder {named} cannot be created or written ({blocker})", hint)


def runtime_packages() -> tuple[str, ...]:
    """The Debian packages OpenPBS's packages need at run time, from the openpbs_install role's
    defaults (the one list the role installs on VMs too): baked into host images so that the role
    finds them installed on hosts that have no route to a package registry."""
    defaults = yaml.safe_load((project.root() / "roles/openpbs_install/defaults/main.yml").read_text())
    per_kind = defaults["openpbs_install_runtime_packages"]["apt"]
    return tuple(sorted({pkg for pkgs in per_kind.values() for pkg in pkgs}))


@dataclass(frozen=True)
class Layer:
    distribution: Distribution
    purpose: str  # host | builder
    packages: tuple[str, ...]
    parent: Layer | None = None

    def recipe(self) -> dict:
        return {
            "version": RECIPE_VERSION,
            "distribution": self.distribution.name,
            "suite": self.distribution.suite,
            "mirror": mirror(),
            "purpose": self.purpose,
            "packages": sorted(self.packages),
            "parent": self.parent.key if self.parent else None,
        }

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.recipe(), sort_keys=True).encode()).hexdigest()

    @property
    def name(self) -> str:
        return f"{self.distribution.name}-{self.purpose}-{self.key[:12]}"

    @property
    def path(self) -> Path:
        return cache_dir() / "images" / self.name

    @property
    def tree(self) -> Path:
        return self.path / "tree"

    def lowerdirs(self) -> list[Path]:
        """This layer's tree and its parents', top first (overlayfs lowerdir order)."""
        return [self.tree, *(self.parent.lowerdirs() if self.parent else [])]

    @property
    def complete(self) -> bool:
        return (self.path / "layer.json").is_file()


def mirror() -> str:
    return os.environ.get(MIRROR_ENV) or DEFAULT_MIRROR


def distribution(name: str) -> Distribution:
    try:
        return DISTRIBUTIONS[name]
    except KeyError:
        raise PreconditionError(
            f"there is no image {name!r}", f"use one of: {', '.join(sorted(DISTRIBUTIONS))}"
        ) from None


def base_layer(dist: Distribution) -> Layer:
    """debootstrap's minimal system: what host and builder layers are made on, each apart."""
    return Layer(dist, "base", ())


def host_layer(dist: Distribution) -> Layer:
    return Layer(dist, "host", tuple(sorted({*HOST_PACKAGES, *runtime_packages()})), parent=base_layer(dist))


def installed(layer: Layer) -> set[str]:
    """The Debian packages installed in the layer (its topmost dpkg status file)."""
    for tree in layer.lowerdirs():
        status = tree / "var/lib/dpkg/status"
        if status.is_file():
            packages, name = set(), None
            for line in status.read_text(errors="replace").splitlines():
                if line.startswith("Package: "):
                    name = line.split(": ", 1)[1]
                elif line.startswith("Status: ") and line.endswith(" installed") and name:
                    packages.add(name)
            return packages
    return set()


def host_layer_for(dist: Distribution, needs: set[str], progress: Progress) -> Layer:
    """The host layer, with a layer on top for whatever of `needs` (the OpenPBS packages' own
    dependencies) it lacks: hosts have no route to a registry, so everything the packages depend
    on must be in the image when the role installs them."""
    base = ensure(host_layer(dist), progress)
    missing = sorted(needs - installed(base))
    return ensure(Layer(dist, "deps", tuple(missing), parent=base), progress) if missing else base


def builder_layer(dist: Distribution) -> Layer:
    return Layer(dist, "builder", BUILD_PACKAGES, parent=base_layer(dist))


@contextlib.contextmanager
def _locked(layer: Layer) -> Iterator[None]:
    """One builder per layer on this machine; a second one waits, then finds the layer made."""
    lock = cache_dir() / "images" / f".{layer.name}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def ensure(layer: Layer, progress: Progress) -> Layer:
    """The layer, built (with its parents) unless the cache has it."""
    if layer.parent:
        ensure(layer.parent, progress)
    if layer.complete:
        return layer
    with _locked(layer):
        if layer.complete:
            return layer
        if layer.path.exists():
            shutil.rmtree(layer.path)  # an interrupted build
        layer.path.mkdir(parents=True)
        start = time.monotonic()
        if layer.parent is None:
            _debootstrap(layer, progress)
        else:
            _derive(layer, progress)
        (layer.path / "layer.json").write_text(json.dumps(layer.recipe(), indent=2) + "\n")
        progress(f"image layer {layer.name} made in {time.monotonic() - start:.0f}s")
    return layer


def _debootstrap(layer: Layer, progress: Progress) -> None:
    if not shutil.which("debootstrap"):
        raise PreconditionError(
            "debootstrap is missing (it makes the system hosts' root filesystem)",
            "install it: apt-get install -y debootstrap",
        )
    progress(f"image layer {layer.name}: debootstrap {layer.distribution.suite} from {mirror()} (about a minute, once)")
    log = layer.path / "build.log"
    include = [f"--include={','.join(sorted(layer.packages))}"] if layer.packages else []
    argv = ["debootstrap", "--variant=minbase", *include, layer.distribution.suite, str(layer.tree), mirror()]
    res = shell.run(argv, timeout=1800)
    log.write_text(res.stdout + res.stderr)
    if not res.ok:
        raise PreconditionError(
            f"debootstrap of {layer.distribution.suite} failed (rc={res.rc}); the last lines of {log}:\n"
            + "\n".join((res.stdout + res.stderr).strip().splitlines()[-8:]),
            f"check that {mirror()} is reachable from this machine ({MIRROR_ENV} names another mirror)",
        )


# Units a host has no use for in a container with no route out: they would only fail or wake up.
_MASKED_UNITS = (
    "console-getty.service",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "e2scrub_all.timer",
    "fstrim.timer",
)


# The host firewall of the image, as a hardened cloud image has it: incoming traffic dropped but
# SSH, on at boot (ufw.service). The openpbs_common role lets the cluster's hosts through, as it must
# on such VMs. ufw's modprobe of conntrack helpers has nothing to load in a container.
HOST_FIREWALL = (
    "ufw allow 22/tcp comment ssh && sed -i 's/^ENABLED=.*/ENABLED=yes/' /etc/ufw/ufw.conf "
    "&& sed -i 's/^IPT_MODULES=.*/IPT_MODULES=\"\"/' /etc/default/ufw"
)


def _make_generic(tree: Path) -> None:
    """What makes each host itself is written per host at its first boot: host keys, machine id,
    host name. The distribution's own PostgreSQL cluster is not started: OpenPBS runs its own."""
    for key in (tree / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    (tree / "etc/machine-id").write_text("")
    (tree / "etc/hostname").unlink(missing_ok=True)
    systemd_dir = tree / "etc/systemd/system"
    for unit in _MASKED_UNITS:
        link = systemd_dir / unit
        link.unlink(missing_ok=True)
        link.symlink_to("/dev/null")
    if (tree / "lib/systemd/system/postgresql.service").exists():
        wants = systemd_dir / "multi-user.target.wants/postgresql.service"
        wants.unlink(missing_ok=True)
        for cluster in (tree / "etc/postgresql").glob("*/main"):
            shutil.rmtree(cluster)
        for data in (tree / "var/lib/postgresql").glob("*/main"):
            shutil.rmtree(data)
    shutil.rmtree(tree / "var/cache/apt/archives", ignore_errors=True)
    (tree / "var/cache/apt/archives/partial").mkdir(parents=True)


@contextlib.contextmanager
def overlay(lower: list[Path], work_root: Path) -> Iterator[Path]:
    """A writable view of `lower` (top first) whose changes go to work_root/upper; yields the mount point."""
    upper, work, merged = (work_root / d for d in ("upper", "work", "merged"))
    for d in (upper, work, merged):
        d.mkdir(parents=True, exist_ok=True)
    mount_overlay(lower, upper, work, merged)
    try:
        yield merged
    finally:
        umount(merged)


def mount_overlay(lower: list[Path], upper: Path, work: Path, merged: Path) -> None:
    opts = f"lowerdir={':'.join(str(p) for p in lower)},upperdir={upper},workdir={work}"
    shell.check(["mount", "-t", "overlay", "overlay", "-o", opts, str(merged)])


def is_mounted(path: Path) -> bool:
    return os.path.ismount(path)


def umount(path: Path) -> None:
    if is_mounted(path):
        shell.check(["umount", str(path)])


def _derive(layer: Layer, progress: Progress) -> None:
    """A layer that adds packages to its parent: apt-get inside a container on an overlay of the
    parent, keeping the overlay's upper directory."""
    assert layer.parent is not None
    progress(
        f"image layer {layer.name}: installing {len(layer.packages)} packages on {layer.parent.name} "
        "(a few minutes, once)"
    )
    work_root = layer.path / "build"
    log = layer.path / "build.log"
    with overlay(layer.parent.lowerdirs(), work_root) as merged:
        pkgs = " ".join(sorted(layer.packages))
        script = (
            "set -e; export DEBIAN_FRONTEND=noninteractive; apt-get update -q; "
            f"apt-get install -y -q --no-install-recommends {pkgs}; apt-get clean"
        )
        if layer.purpose == "host":
            script += "; " + HOST_FIREWALL
        argv = [*run_argv(merged, network="host"), "/bin/sh", "-c", script]
        rc = nspawn.run(f"img-{layer.key[:12]}", argv, log, timeout=3600)
        if rc == 0 and layer.purpose == "host":
            _make_generic(merged)
    if rc != 0:
        raise PreconditionError(
            f"installing the packages of {layer.name} failed (rc={rc}); see {log}",
            f"check that {mirror()} is reachable from this machine ({MIRROR_ENV} names another mirror)",
        )
    (work_root / "upper").rename(layer.tree)
    shutil.rmtree(work_root)


@contextlib.contextmanager
def cache_lock(path: Path) -> Iterator[None]:
    """One maker of the cache entry `path` on this machine (a lock file beside it); a second one waits,
    then finds the entry made. For entries made in a builder container (package sets, mutant build trees)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with (path.parent / f".{path.name}.lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def run_in_layer(
    layer: Layer,
    work_root: Path,
    command: list[str],
    *,
    machine: str,
    log: Path,
    timeout: float,
    binds: dict[Path, str] | None = None,
    ro: frozenset[Path] | set[Path] = frozenset(),
    prepare: Callable[[Path], None] | None = None,
) -> int:
    """`command` in a container of `layer` (no network), on an overlay under `work_root` that is unmounted
    after; `prepare(root)` may write into the container's root first. Output appended to `log`; the exit code."""
    with overlay(layer.lowerdirs(), work_root) as merged:
        if prepare:
            prepare(merged)
        argv = [*run_argv(merged, binds=binds, ro=ro), *command]
        return nspawn.run(machine, argv, log, timeout=timeout)


def log_tail(log: Path, lines: int) -> str:
    """The last `lines` lines of a build log, for the error that names it."""
    return "\n".join(log.read_text(errors="replace").strip().splitlines()[-lines:])


def run_argv(
    root: Path,
    *,
    network: str = "none",
    binds: dict[Path, str] | None = None,
    ro: frozenset[Path] | set[Path] = frozenset(),
    name: str = "pbs-harness-build",
) -> list[str]:
    """A container that runs one command on `root` (no init): with this machine's network (`host`,
    for apt from the registry) or none, and `binds` (controller path -> path inside; those in `ro`
    read-only). `name` is its host name."""
    argv = [
        nspawn.PROGRAM,
        "--quiet",
        f"--directory={root}",
        f"--machine={name}",
        "--register=no",
        "--keep-unit",
        "--link-journal=no",
        "--timezone=off",
        "--resolv-conf=" + ("copy-host" if network == "host" else "off"),
        "--console=pipe",
    ]
    if network != "host":
        argv.append("--private-network")
    for src, dest in (binds or {}).items():
        argv.append(f"--bind{'-ro' if src in ro else ''}={src}:{dest}")
    return argv
