"""Checks before touching the machine: each failure names what is wrong and how to fix it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable

from pbs_harness import shell
from pbs_harness.errors import PreconditionError
from pbs_harness.localcluster import network
from pbs_harness.localcluster.spec import ClusterSpec

# Program -> Debian package that provides it.
REQUIRED_PROGRAMS = {
    "ip": "iproute2",
    "unshare": "util-linux",
    "tini": "tini",
    "sshd": "openssh-server",
    "ssh-keygen": "openssh-client",
    "iptables": "iptables",
}


def check_root(geteuid: Callable[[], int] = os.geteuid) -> None:
    if geteuid() != 0:
        raise PreconditionError(
            "the local cluster needs root (it creates network namespaces, a bridge and mounts)",
            "run it as root, e.g. `sudo pbs-harness cluster up`",
        )


def check_programs(which: Callable[[str], str | None] = shutil.which) -> None:
    extra = {"sshd": "/usr/sbin/sshd"}
    missing = [
        f"{prog} (Debian package {pkg})"
        for prog, pkg in REQUIRED_PROGRAMS.items()
        if not which(prog) and not (prog in extra and os.path.exists(extra[prog]))
    ]
    if missing:
        pkgs = " ".join(sorted({REQUIRED_PROGRAMS[m.split()[0]] for m in missing}))
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


def run_all(spec: ClusterSpec, ours: bool) -> None:
    check_root()
    check_programs()
    check_netns()
    check_subnet(spec, ours)
