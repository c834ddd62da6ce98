"""Host-level faults for inventories that are not the local cluster, done over SSH on the host.

  SshPartition  iptables chain that drops all traffic except loopback and the harness's own SSH
                session (so the fault can be healed over the same connection)
  DaemonKill    SIGKILL of every PBS daemon and every process of the test users (the closest
                SSH can get to a crash); heal starts PBS with its init script
  DaemonPause   SIGSTOP of the same processes; heal sends SIGCONT

Real power-off and VM pause need the cloud's API; these are the SSH-side equivalents.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pbs_harness.cluster import Cluster

CHAIN = "PBSH_PARTITION"
PBS_DAEMONS = "pbs_mom|pbs_server.bin|pbs_sched|pbs_comm|pbs_ds_monitor|postgres"


def _procs_pattern(cluster: Cluster) -> str:
    """pgrep/pkill selection: PBS daemons by name, plus everything the test users run."""
    users = ",".join(cluster.users()) or "nobody"
    return f"{{ pgrep -x '{PBS_DAEMONS}'; pgrep -u {users}; }} | sort -u"


@dataclass
class SshPartition:
    cluster: Cluster
    target: str
    kind: str = "host-partition"

    def start(self) -> None:
        host = self.cluster.hosts[self.target]
        # The harness's own session: keep it open so the partition can be healed over it. Read as
        # the login account itself: sudo's env_reset would clear SSH_CONNECTION.
        conn = host.run_as_login("echo $SSH_CONNECTION").stdout.split()
        if len(conn) != 4:
            raise RuntimeError(f"{self.target}: cannot tell the harness's own SSH session (SSH_CONNECTION={conn})")
        ctrl, port = conn[0], conn[3]
        ipt = "iptables -w 5"
        host.check(
            f"{ipt} -N {CHAIN} 2>/dev/null; {ipt} -F {CHAIN} && "
            f"{ipt} -A {CHAIN} -i lo -j ACCEPT && {ipt} -A {CHAIN} -o lo -j ACCEPT && "
            f"{ipt} -A {CHAIN} -p tcp -s {ctrl} --dport {port} -j ACCEPT && "
            f"{ipt} -A {CHAIN} -p tcp -d {ctrl} --sport {port} -j ACCEPT && "
            f"{ipt} -A {CHAIN} -j DROP && "
            f"{{ {ipt} -C INPUT -j {CHAIN} 2>/dev/null || {ipt} -I INPUT 1 -j {CHAIN}; }} && "
            f"{{ {ipt} -C OUTPUT -j {CHAIN} 2>/dev/null || {ipt} -I OUTPUT 1 -j {CHAIN}; }}"
        )

    def heal(self) -> None:
        ipt = "iptables -w 5"
        self.cluster.hosts[self.target].check(
            f"while {ipt} -D INPUT -j {CHAIN} 2>/dev/null; do :; done; "
            f"while {ipt} -D OUTPUT -j {CHAIN} 2>/dev/null; do :; done; "
            f"{ipt} -F {CHAIN} 2>/dev/null; {ipt} -X {CHAIN} 2>/dev/null; true"
        )


@dataclass
class _SignalProcesses:
    """Send `start_signal` to the PBS daemons and the test users' processes; subclasses heal."""

    cluster: Cluster
    target: str
    start_signal: ClassVar[str]

    def _signal(self, name: str) -> None:
        self.cluster.hosts[self.target].check(f"{_procs_pattern(self.cluster)} | xargs -r kill -{name}")

    def start(self) -> None:
        self._signal(self.start_signal)


@dataclass
class DaemonKill(_SignalProcesses):
    kind: str = "host-crash"
    start_signal: ClassVar[str] = "KILL"

    def heal(self) -> None:
        self.cluster.hosts[self.target].check("/etc/init.d/pbs start")


@dataclass
class DaemonPause(_SignalProcesses):
    kind: str = "host-pause"
    start_signal: ClassVar[str] = "STOP"

    def heal(self) -> None:
        self._signal("CONT")
