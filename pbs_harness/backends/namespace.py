"""Namespace hosts: network, UTS, mount and PID namespaces under tini, sharing this machine's /opt,
/usr, /etc and /home (pbs_harness.localcluster.hostproc boots them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pbs_harness.localcluster import hostproc, network
from pbs_harness.localcluster.spec import ClusterSpec, HostSpec

MECHANISMS = {
    "crash": "freeze the host's freezer cgroup, SIGKILL every member, thaw",
    "boot": "relaunch tini -> host-init.sh (sshd; PBS by its init script) in the kept namespaces",
    "pause": "cgroup freezer",
    "partition": f"iptables chain {network.PARTITION_CHAIN} in the host's network namespace, set from this machine",
}


@dataclass
class NamespaceHost:
    cluster: ClusterSpec
    spec: HostSpec
    root: Path
    flavour: str = "namespace"
    mechanisms: dict[str, str] = field(default_factory=lambda: dict(MECHANISMS))

    @property
    def name(self) -> str:
        return self.spec.name

    def is_running(self) -> bool:
        return hostproc.is_running(self.spec)

    def is_paused(self) -> bool:
        return hostproc.is_paused(self.spec)

    def is_partitioned(self) -> bool:
        return network.is_partitioned(self.spec)

    def pids(self) -> list[int]:
        return hostproc.pids(self.spec)

    def boot(self) -> None:
        self.start()
        self.wait_ssh()

    def start(self) -> None:
        """Boot without waiting for sshd (several hosts boot at once; wait_ssh waits)."""
        hostproc.launch(self.spec, root=self.root)

    def wait_ssh(self, timeout: float = 20) -> None:
        hostproc.wait_ssh(self.spec, timeout, root=self.root)

    def crash(self) -> None:
        hostproc.crash(self.spec)

    def pause(self) -> None:
        hostproc.pause(self.spec)

    def resume(self) -> None:
        hostproc.resume(self.spec)

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
        """Before the first boot: the host's freezer group."""
        hostproc.ensure_cgroup(self.spec)

    def remove(self) -> None:
        """Stop the host for good (`down`): its processes and cgroup."""
        hostproc.resume(self.spec)
        hostproc.crash(self.spec)
        hostproc.remove_cgroup(self.spec)
