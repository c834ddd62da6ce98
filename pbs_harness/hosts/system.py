"""System hosts: their own Debian root and systemd as PID 1 under systemd-nspawn
(pbs_harness.localcluster.system_host boots them), in network namespaces made beforehand."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pbs_harness.hosts.local import PARTITION, LocalHostBase
from pbs_harness.localcluster import system_host

MECHANISMS = {
    "crash": "freeze the container's freezer cgroup, SIGKILL every member (systemd, nspawn included), thaw",
    "boot": "systemd-nspawn --boot on the kept root: systemd starts sshd and pbs.service",
    "pause": "cgroup freezer of the container",
    "partition": PARTITION,
}


@dataclass
class SystemHost(LocalHostBase):
    lowerdirs: list[Path] = field(default_factory=list)  # the image's overlayfs layers, top first
    flavour: str = "system"
    mechanisms: dict[str, str] = field(default_factory=lambda: dict(MECHANISMS))

    def start(self) -> None:
        system_host.boot(self.cluster, self.spec, self.lowerdirs, self.root)

    def prepare(self) -> None:
        """Before the first boot: the host's root filesystem."""
        system_host.mount_root(self.spec, self.lowerdirs, self.root)

    def remove(self) -> None:
        system_host.remove(self.spec, self.root)
