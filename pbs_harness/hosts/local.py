"""What the two kinds of local host share: processes in their cgroups
(pbs_harness.localcluster.containers.cgroups: pause, crash, the process list), partitions in their
network namespace set from this machine, and the repair of what a killed run left. Subclasses say
how a host starts, crashes, is prepared and removed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pbs_harness.hosts import base as faults
from pbs_harness.localcluster import hostproc, network
from pbs_harness.localcluster.containers import cgroups
from pbs_harness.localcluster.spec import ClusterSpec, HostSpec

PARTITION = f"iptables chain {network.PARTITION_CHAIN} in the host's network namespace, set from this machine"


@dataclass
class LocalHostBase:
    cluster: ClusterSpec
    spec: HostSpec
    root: Path  # the state directory of the host's cluster
    # What the fault layer may ask of it (hosts.base's names); no reboot fault: crash + boot is the restart.
    FAULTS: ClassVar[frozenset[str]] = frozenset({faults.CRASH, faults.BOOT, faults.PAUSE, faults.PARTITION})

    def can(self, fault: str) -> bool:
        return fault in self.FAULTS

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def label(self) -> str:
        return f"host {self.name}"

    def is_running(self) -> bool:
        return cgroups.is_running(self.name)

    def is_paused(self) -> bool:
        return cgroups.is_frozen(self.name)

    def is_partitioned(self) -> bool:
        return network.is_partitioned(self.spec)

    def pids(self) -> list[int]:
        return cgroups.pids(self.name)

    def start(self) -> None:
        """Boot without waiting for sshd (several hosts boot at once; wait_ssh waits)."""
        raise NotImplementedError

    def boot(self) -> None:
        self.start()
        self.wait_ssh()

    def wait_ssh(self, timeout: float = 30) -> None:
        hostproc.wait_ssh(self.spec, timeout, root=self.root, running=self.is_running)

    def crash(self) -> None:
        cgroups.kill_all(self.name, label=self.label)

    def pause(self) -> None:
        if not self.is_running():
            from pbs_harness.common.errors import PreconditionError

            raise PreconditionError(f"{self.label} is not running", f"boot it: pbs-harness cluster boot {self.name}")
        cgroups.set_frozen(self.name, True, self.label)

    def resume(self) -> None:
        cgroups.set_frozen(self.name, False)

    def partition(self) -> None:
        network.partition(self.spec)

    def reconnect(self) -> None:
        network.heal(self.spec)

    def heal_leftovers(self) -> None:
        self.resume()
        self.reconnect()
        if not self.is_running():
            self.boot()
