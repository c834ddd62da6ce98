"""Host backends: one interface for what a kind of host does, four kinds.

A backend owns one host's lifecycle (boot, crash), its fault mechanisms (pause, partition) and
their cleanup after a killed run (`heal_leftovers`); the fault layer (pbs_harness.suite.faults) and the
local cluster's verbs call it and never ask which kind of host they hold. Commands run over SSH
for every kind (pbs_harness.remote.transport).

  namespace  local host in namespaces sharing this machine's /opt, /usr, /etc and /home, under tini
             (backends/namespace.py)
  system     local host with its own Debian root and systemd as PID 1, under systemd-nspawn
             (backends/system.py)
  ssh        any host reached over SSH only, e.g. a VM (backends/ssh.py): crash and pause act on
             PBS and the test users' processes, partition with iptables sparing the harness's session
  aws        EC2 instances of a cloud run (backends/aws.py, a HostKind): crash a forced stop, reboot,
             boot and partition (security groups) through the EC2 API

Adding a kind of host is one module with a HostKind subclass (pbs_harness.hosts.base) and one line in
the registry (pbs_harness.hosts.KINDS); `for_host` asks the registry. Each kind declares the faults it can
do (FAULTS); the fault layer refuses the others, and tests that need one skip (marker needs_faults).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from pbs_harness.remote.cluster import Cluster

# Inventory variable naming a local host's flavour (a local host without it is a namespace host).
FLAVOUR_VAR = "local_cluster_flavour"
FLAVOURS = ("namespace", "system")


class HostBackend(Protocol):
    name: str
    flavour: str  # namespace | system | ssh
    # How each fault acts on this kind of host, for the fault log (Jepsen's history).
    mechanisms: Mapping[str, str]

    def is_running(self) -> bool: ...

    def is_paused(self) -> bool: ...

    def is_partitioned(self) -> bool: ...

    def boot(self) -> None:
        """Bring the host (for ssh: its PBS) back after a crash; returns once sshd answers."""
        ...

    def crash(self) -> None:
        """Every process of the host dies at once (ssh: PBS and the test users' processes)."""
        ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def partition(self) -> None:
        """All traffic to and from the host dropped while its processes live (ssh: but ours)."""
        ...

    def reconnect(self) -> None: ...

    def can(self, fault: str) -> bool:
        """The kind declares this fault (pbs_harness.hosts.base: crash, boot, pause, partition, reboot)."""
        ...

    def pids(self) -> list[int]:
        """The host's processes as this machine sees them; [] where it cannot (ssh)."""
        ...

    def heal_leftovers(self) -> None:
        """Undo any fault a killed run left on the host: thaw, reconnect, boot."""
        ...


def flavour_of(host_vars: Mapping[str, Any]) -> str:
    """namespace or system for a local-cluster host, ssh for any other."""
    from pbs_harness.localcluster.provider import LOCAL_HOST_VAR

    if not host_vars.get(LOCAL_HOST_VAR):
        return "ssh"
    return str(host_vars.get(FLAVOUR_VAR) or "namespace")


def for_host(cluster: Cluster, name: str) -> HostBackend:
    """The backend of an inventory host, from the registry of host kinds (pbs_harness.hosts, the kind its
    inventory variables name): a kind on the HostKind interface (e.g. aws: faults through the cloud's API) is
    built from the host's variables; a local host of the cluster its inventory records; else ssh."""
    from pbs_harness import hosts
    from pbs_harness.hosts.base import HostKind

    host_vars = cluster.inventory.hosts[name].vars
    kind = hosts.kind_of(host_vars)
    if issubclass(kind, HostKind):
        return cast(HostBackend, kind(name, host_vars, cluster))
    if flavour_of(host_vars) == "ssh":
        from pbs_harness.hosts.ssh import SshHost

        return SshHost(cluster, name)
    from pbs_harness.localcluster import provider

    return provider.inventory_host(name, host_vars)
