"""Hosts reached over SSH only (VMs, any static inventory): faults done on the host itself.

  crash      SIGKILL of every PBS daemon and every process of the test users (the closest SSH can
             get to a power cut); boot starts PBS again (systemd's pbs.service, else the init script)
  pause      SIGSTOP of the same processes; resume sends SIGCONT
  partition  an iptables chain that drops all traffic but loopback and the harness's own SSH
             session, so the fault can be healed over the same connection

Real power-off and VM pause need the cloud's API; these are the SSH-side equivalents.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from pbs_harness.hosts.base import BOOT, CRASH, PARTITION, PAUSE, HostKind, UnsupportedByKind

CHAIN = "PBSH_PARTITION"
PBS_DAEMONS = "pbs_mom|pbs_server.bin|pbs_sched|pbs_comm|pbs_ds_monitor|postgres"
IPT = "iptables -w 5"
# Start whatever PBS daemons are not running, the way the host runs PBS: under systemd, pbs.service
# (its reload runs the init script's start inside the unit, for a unit still active with some daemons
# dead), else the init script; a host without either (a client) has nothing to start.
START_PBS = (
    "if [ -d /run/systemd/system ] && systemctl cat pbs.service >/dev/null 2>&1; then "
    "if systemctl is-active --quiet pbs.service; then "
    "systemctl reload pbs.service 2>/dev/null || systemctl start pbs.service; "
    "else systemctl start pbs.service; fi; "
    "elif [ -x /etc/init.d/pbs ]; then /etc/init.d/pbs start; fi"
)


class SshHost(HostKind):
    """A host reached over SSH only; its faults act over the inventory's connections (`cluster`)."""

    NAME = "ssh"
    # What the fault layer may ask of it (hosts.base's names): no reboot, SSH cannot bring a host back.
    FAULTS = frozenset({CRASH, BOOT, PAUSE, PARTITION})
    MECHANISMS: ClassVar[Mapping[str, str]] = {
        "crash": "SIGKILL of the PBS daemons and the test users' processes, over SSH",
        "boot": "start PBS over SSH (systemctl start pbs.service, else /etc/init.d/pbs start)",
        "pause": "SIGSTOP of the PBS daemons and the test users' processes, over SSH",
        "partition": f"iptables chain {CHAIN} on the host, over SSH, sparing the harness's own session",
    }
    HEAL_MECHANISM = "thaw, reconnect, start PBS's stopped daemons (always: a crash leaves the host answering)"

    @classmethod
    def unreachable_hint(cls, inventory_path: Path) -> str:
        return (
            f"check that these hosts are running and that ansible_host/ansible_port in {inventory_path} are right "
            "(firewall or security group open for SSH from this machine)"
        )

    @property
    def _host(self):
        if self.cluster is None:
            raise UnsupportedByKind(self.NAME, "act on a host before the cluster's SSH connections exist")
        return self.cluster.hosts[self.name]

    def _procs(self) -> str:
        """pgrep selection: PBS daemons by name, plus everything the test users run."""
        assert self.cluster is not None  # _host refused first
        users = ",".join(self.cluster.users()) or "nobody"
        return f"{{ pgrep -x '{PBS_DAEMONS}'; pgrep -u {users}; }} | sort -u"

    def _signal(self, name: str) -> None:
        self._host.check(f"{self._procs()} | xargs -r kill -{name}")

    def is_running(self) -> bool:
        return self._host.run("true", timeout=15).ok

    def is_paused(self) -> bool:
        states = self._host.run(f'ps -o stat= -p "$({self._procs()} | paste -sd,)"').stdout.split()
        return any(s.startswith("T") for s in states)

    def is_partitioned(self) -> bool:
        return self._host.run(f"{IPT} -C INPUT -j {CHAIN}").ok

    def crash(self) -> None:
        self._signal("KILL")

    def boot(self) -> None:
        self._host.check(START_PBS)

    def pause(self) -> None:
        self._signal("STOP")

    def resume(self) -> None:
        self._signal("CONT")

    def partition(self) -> None:
        host = self._host
        # The harness's own session: keep it open so the partition can be healed over it. Read as
        # the login account itself: sudo's env_reset would clear SSH_CONNECTION.
        conn = host.run_as_login("echo $SSH_CONNECTION").stdout.split()
        if len(conn) != 4:
            raise RuntimeError(f"{self.name}: cannot tell the harness's own SSH session (SSH_CONNECTION={conn})")
        ctrl, port = conn[0], conn[3]
        host.check(
            f"{IPT} -N {CHAIN} 2>/dev/null; {IPT} -F {CHAIN} && "
            f"{IPT} -A {CHAIN} -i lo -j ACCEPT && {IPT} -A {CHAIN} -o lo -j ACCEPT && "
            f"{IPT} -A {CHAIN} -p tcp -s {ctrl} --dport {port} -j ACCEPT && "
            f"{IPT} -A {CHAIN} -p tcp -d {ctrl} --sport {port} -j ACCEPT && "
            f"{IPT} -A {CHAIN} -j DROP && "
            f"{{ {IPT} -C INPUT -j {CHAIN} 2>/dev/null || {IPT} -I INPUT 1 -j {CHAIN}; }} && "
            f"{{ {IPT} -C OUTPUT -j {CHAIN} 2>/dev/null || {IPT} -I OUTPUT 1 -j {CHAIN}; }}"
        )

    def reconnect(self) -> None:
        self._host.check(
            f"while {IPT} -D INPUT -j {CHAIN} 2>/dev/null; do :; done; "
            f"while {IPT} -D OUTPUT -j {CHAIN} 2>/dev/null; do :; done; "
            f"{IPT} -F {CHAIN} 2>/dev/null; {IPT} -X {CHAIN} 2>/dev/null; true"
        )

    def heal_leftovers(self) -> None:
        """The base's sequence (undo_faults: resume, then reconnect), then a boot whatever is_running says:
        a crash here kills PBS, not the host, so the host still answers (is_running) with PBS dead, and
        the base's "boot only if down" would leave it so. START_PBS starts only what is not running."""
        self.undo_faults()
        self.boot()
