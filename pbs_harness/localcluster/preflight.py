"""Checks before touching the machine: each failure names what is wrong and how to fix it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from pbs_harness.common import shell
from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import network, registry
from pbs_harness.localcluster.registry import STATE_PARENT
from pbs_harness.localcluster.spec import ClusterSpec

# Program -> Debian package that provides it.
REQUIRED_PROGRAMS = {
    "ip": "iproute2",
    "unshare": "util-linux",
    "tini": "tini",
    "sshd": "openssh-server",
    "ssh-keygen": "openssh-client",
    "iptables": "iptables",
    # The login user's passwordless sudo inside the hosts (--login-user), and the harness's `sudo -n`.
    "sudo": "sudo",
}


def check_root(geteuid: Callable[[], int] = os.geteuid) -> None:
    if geteuid() != 0:
        raise PreconditionError(
            "the local cluster needs root (it creates network namespaces, a bridge and mounts)",
            "run it as root, e.g. `sudo pbs-harness cluster up`",
        )


# System hosts bring their own sshd, sudo and init: this machine needs the container engine and
# the tools that make and mount their root filesystems.
SYSTEM_PROGRAMS = {
    "ip": "iproute2",
    "ssh-keygen": "openssh-client",
    "iptables": "iptables",
    "systemd-nspawn": "systemd-container",
    "debootstrap": "debootstrap",
    "mount": "mount",
}


def check_programs(which: Callable[[str], str | None] = shutil.which, flavour: str = "namespace") -> None:
    from pbs_harness import hosts  # the registry: each local kind names the programs it needs

    required = hosts.get_kind_class(flavour).programs()  # type: ignore[attr-defined]
    extra = {"sshd": "/usr/sbin/sshd"}
    missing = [
        f"{prog} (Debian package {pkg})"
        for prog, pkg in required.items()
        if not which(prog) and not (prog in extra and os.path.exists(extra[prog]))
    ]
    if missing:
        pkgs = " ".join(sorted({required[m.split()[0]] for m in missing}))
        raise PreconditionError("missing programs: " + ", ".join(missing), f"install them: apt-get install -y {pkgs}")


def check_netns() -> None:
    res = shell.run(["unshare", "--net", "--uts", "--mount", "--pid", "--fork", "true"], timeout=15)
    if not res.ok:
        raise PreconditionError(
            f"this machine cannot create namespaces: {res.stderr.strip() or 'unshare failed'}",
            "run on a Linux host (or VM) with network/mount/PID namespace support and as real root",
        )


def check_subnet(spec: ClusterSpec, ours: bool) -> None:
    """Refuse a subnet already used by something else on this machine."""
    conflicts = network.subnet_conflicts(spec)
    if conflicts and not ours:
        raise PreconditionError(
            f"subnet {spec.subnet} is already in use here: " + "; ".join(conflicts),
            "choose another private /24 with --subnet, e.g. --subnet 10.72.0.0/24",
        )


def _free_example(spec: ClusterSpec, others: list[registry.KnownCluster]) -> ClusterSpec:
    """A prefix and subnet no known cluster uses, for the hints."""
    used = {o.prefix for o in others} | {spec.prefix}
    prefix = next(p for p in ("vm", "vmb", *(f"c{i}" for i in range(2, 100))) if p not in used)
    for n in range(72, 255):
        cand = ClusterSpec(subnet=f"10.{n}.0.0/24", prefix=prefix, host_count=spec.host_count)
        if not any(o.overlaps(cand) for o in others) and not cand.network.overlaps(spec.network):
            return cand
    return ClusterSpec(prefix=prefix, host_count=spec.host_count)


def check_other_clusters(spec: ClusterSpec, root: Path | None = None, **where: Path) -> None:
    """Refuse the host names or the subnet of another local cluster of this machine."""
    own_names = {h.name for h in spec.hosts}
    others = [
        o
        for o in registry.others(root, **where)
        if o.state_dir or not set(o.names) <= own_names  # a legacy block of our own names is ours
    ]
    for other in others:
        free = _free_example(spec, others)
        if other.prefix == spec.prefix:
            raise PreconditionError(
                f"host name prefix {spec.prefix!r} is already used by {other.where} ({', '.join(other.names[:3])}...)",
                "give this cluster its own --name-prefix, --subnet and state directory (--state-dir), e.g. "
                f"--name-prefix {free.prefix} --subnet {free.subnet} --state-dir {STATE_PARENT / free.prefix}",
            )
        if other.overlaps(spec):
            used = other.subnet or ", ".join(other.addresses[:3])
            raise PreconditionError(
                f"subnet {spec.subnet} overlaps {used}, used by {other.where}",
                f"choose another private /24 with --subnet, e.g. --subnet {free.subnet}",
            )


def run_all(spec: ClusterSpec, ours: bool, root: Path | None = None) -> None:
    check_root()
    check_programs(flavour=spec.flavour)
    check_netns()
    check_other_clusters(spec, root)
    check_subnet(spec, ours)


# systemd in each system host holds inotify instances (about 7 running, more while it boots), and
# the kernel's default of 128 per user stops the 20th host or so: its systemd cannot watch its unit
# files ("Failed to create inotify object: Too many open files") and sshd never starts.
INOTIFY_INSTANCES = Path("/proc/sys/fs/inotify/max_user_instances")
INOTIFY_INSTANCES_WANTED = 8192


def ensure_inotify_instances(say: Callable[[str], None]) -> None:
    """Raise fs.inotify.max_user_instances for system hosts (never lowers it; lasts until reboot)."""
    current = int(INOTIFY_INSTANCES.read_text())
    if current < INOTIFY_INSTANCES_WANTED:
        INOTIFY_INSTANCES.write_text(str(INOTIFY_INSTANCES_WANTED))
        say(
            f"fs.inotify.max_user_instances raised from {current} to {INOTIFY_INSTANCES_WANTED}: "
            "systemd in every system host holds some (sysctl; until this machine restarts)"
        )
