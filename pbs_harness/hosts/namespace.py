"""Namespace hosts: network, UTS, mount and PID namespaces under tini, sharing this machine's /opt,
/usr, /etc and /home (pbs_harness.localcluster.hostproc boots them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pbs_harness.hosts.local import PARTITION, LocalHostBase
from pbs_harness.localcluster import hostproc
from pbs_harness.localcluster.containers import cgroups

MECHANISMS = {
    "crash": "freeze the host's freezer cgroup, SIGKILL every member, thaw",
    "boot": "relaunch tini -> host-init.sh (sshd; PBS by its init script) in the kept namespaces",
    "pause": "cgroup freezer",
    "partition": PARTITION,
}


@dataclass
class NamespaceHost(LocalHostBase):
    flavour: str = "namespace"
    mechanisms: dict[str, str] = field(default_factory=lambda: dict(MECHANISMS))

    def start(self) -> None:
        hostproc.launch(self.spec, root=self.root)

    def prepare(self) -> None:
        """Before the first boot: the host's cgroups."""
        cgroups.prepare(self.name)

    def remove(self) -> None:
        """Stop the host for good (`down`): its processes and cgroups."""
        self.resume()
        self.crash()
        cgroups.remove(self.name)
