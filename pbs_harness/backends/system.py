"""System hosts: their own Debian root and systemd as PID 1 under systemd-nspawn
(pbs_harness.localcluster.system_host boots them), in network namespaces made beforehand."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pbs_harness import cgroups
from pbs_harness.localcluster import hostproc, network, system_host
from pbs_harness.localcluster.spec import ClusterSpec, HostSpec

MECHANISMS = {
    "crash": "freeze the container's freezer cgroup, SIGKILL every member (systemd, nspawn included), thaw",
    "boot": "systemd-nspawn --boot on the kept root: systemd starts sshd and pbs.service",
    "pause": "cgroup freezer of the container",
    "partition": f"iptables chain {network.PARTITION_CHAIN} in the host's network namespace, set from this machine",
}


@dataclass
class SystemHost:
    cluster: ClusterSpec
    spec: HostSpec
    root: Path
    lowerdirs: list[Path]  # the image's overlayfs layers, top first
    flavour: str = "system"
    mechanisms: dict[str, str] = field(default_factory=lambda: dict(MECHANISMS))

    @property
    def name(self) -> str:
        return self.spec.name

    def is_running(self) -> bool:
        return cgroups.is_running(self.spec.name)

    def is_paused(self) -> bool:
        return cgroups.is_frozen(self.spec.name)

    def is_partitioned(self) -> bool:
        return network.is_partitioned(self.spec)

    def pids(self) -> list[int]:
        return cgroups.pids(self.spec.name)

    def boot(self) -> None:
        self.start()
        self.wait_ssh()

    def start(self) -> None:
        """Boot without waiting for sshd (several hosts boot at once; wait_ssh waits)."""
        system_host.boot(self.cluster, self.spec, self.lowerdirs, self.root)

    def wait_ssh(self, timeout: float = 30) -> None:
        hostproc.wait_ssh(self.spec, timeout, root=self.root, running=self.is_running)

    def crash(self) -> None:
        system_host.crash(self.spec)

    def pause(self) -> None:
        cgroups.set_frozen(self.spec.name, True, f"host {self.name}")

    def resume(self) -> None:
        cgroups.set_frozen(self.spec.name, False)

    def partition(self) -> None:
        network.partition(self.spec)

    def reconnect(self) -> None:
        network.heal(self.spec)

    def heal_leftovers(self) -> None:
        self.resume()
        self.reconnect()
        if not self.is_running():
            self.boot()

    def prepare(self) -> None:
        """Before the first boot: the host's root filesystem."""
        system_host.mount_root(self.spec, self.lowerdirs, self.root)

    def remove(self) -> None:
        system_host.remove(self.spec, self.root)
