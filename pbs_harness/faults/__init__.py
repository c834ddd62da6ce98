"""Fault injection with a heal contract.

A fault is started on one target and healed exactly once; `Nemesis` keeps the active faults,
refuses to start a second fault of the same kind on the same target, and `heal_all` heals
whatever is still active — in a `finally`, in fixture teardown, on Ctrl-C.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from pbs_harness.cluster import Cluster
from pbs_harness.faults.ssh import DaemonKill, DaemonPause, SshPartition
from pbs_harness.localcluster import provider


class Fault(Protocol):
    kind: str
    target: str

    def start(self) -> None: ...

    def heal(self) -> None: ...


def _local_host(cluster: Cluster, name: str) -> provider.LocalHost:
    """The host in the local cluster the inventory records (its state directory), not the default one."""
    if not cluster.inventory.provider.brings_up:
        raise NotImplementedError(f"{name} is not a local-cluster host: use the SSH-side faults (faults.ssh)")
    return provider.inventory_host(name, cluster.inventory.hosts[name].vars)


@dataclass
class HostCrash:
    """Every process of the host dies at once; heal boots it (same name, IP, disk; PBS restarts)."""

    cluster: Cluster
    target: str
    kind: str = "host-crash"

    def start(self) -> None:
        _local_host(self.cluster, self.target).crash()
        self.cluster.hosts[self.target].close()

    def heal(self) -> None:
        _local_host(self.cluster, self.target).boot()


@dataclass
class HostPause:
    """All processes of the host frozen (the cgroup freezer); heal thaws them."""

    cluster: Cluster
    target: str
    kind: str = "host-pause"

    def start(self) -> None:
        _local_host(self.cluster, self.target).pause()

    def heal(self) -> None:
        _local_host(self.cluster, self.target).resume()


@dataclass
class HostPartition:
    """Traffic to and from the host dropped while its processes live; heal restores it."""

    cluster: Cluster
    target: str
    kind: str = "host-partition"

    def start(self) -> None:
        _local_host(self.cluster, self.target).partition()

    def heal(self) -> None:
        _local_host(self.cluster, self.target).heal()


@dataclass
class MomSignal:
    """SIGSTOP (pause) or SIGKILL the host's pbs_mom; heal sends SIGCONT or starts pbs_mom again."""

    cluster: Cluster
    target: str
    signal: str = "STOP"
    kind: str = field(init=False)

    def __post_init__(self) -> None:
        if self.signal not in ("STOP", "KILL"):
            raise ValueError(f"MomSignal supports STOP and KILL, not {self.signal}")
        self.kind = f"mom-{self.signal.lower()}"

    def start(self) -> None:
        self.cluster.hosts[self.target].check(["pkill", f"-{self.signal}", "-x", "pbs_mom"])

    def heal(self) -> None:
        host = self.cluster.hosts[self.target]
        host.run(["pkill", "-CONT", "-x", "pbs_mom"])
        if not host.run(["pgrep", "-x", "pbs_mom"]).ok:
            host.check([str(self.cluster.prefix / "sbin" / "pbs_mom")])


class FaultAlreadyActive(RuntimeError):
    """A second fault of the same kind on the same target (Jepsen's "already disrupting")."""


@dataclass
class RejectHook:
    """A temporary execjob hook that fails on some hosts: reject, raise, or sleep; heal deletes it."""

    cluster: Cluster
    event: str
    hosts: tuple[str, ...]
    how: str = "reject"
    seconds: int = 60
    kind: str = field(init=False)
    target: str = field(init=False)

    def __post_init__(self) -> None:
        if self.how not in ("reject", "exception", "sleep"):
            raise ValueError(f"RejectHook how= must be reject, exception or sleep, not {self.how}")
        self.kind = f"hook-{self.event}"
        self.target = ",".join(self.hosts)
        # One name per event and kind, so a begin fault and a prologue fault can be active together.
        self.name = f"pbsh_fault_{self.event.removeprefix('execjob_')}_{self.how}"

    def start(self) -> None:
        from pbs_harness.faults.hookbodies import failing_hook_body
        from pbs_harness.pbs.hooks import Hooks

        body = failing_hook_body(self.hosts, self.how, self.seconds)
        attrs = {"event": self.event, "enabled": True, "alarm": max(30, self.seconds + 10)}
        Hooks(self.cluster).create(self.name, body, attrs)

    def heal(self) -> None:
        from pbs_harness.pbs.hooks import Hooks

        Hooks(self.cluster).delete(self.name)


@dataclass
class Nemesis:
    """Registry of active faults for one test, with constructors for the usual ones."""

    cluster: Cluster | None = None
    active: list[Fault] = field(default_factory=list)

    def _c(self) -> Cluster:
        if self.cluster is None:
            raise RuntimeError("this Nemesis has no cluster")
        return self.cluster

    def kill_mom(self, host: str) -> Fault:
        return self.start(MomSignal(self._c(), host, "KILL"))

    def stop_mom(self, host: str) -> Fault:
        return self.start(MomSignal(self._c(), host, "STOP"))

    def _local(self) -> bool:
        """Host-level faults act from this machine on hosts the harness brings up (the local cluster)."""
        return self._c().inventory.provider.brings_up

    def crash_host(self, host: str) -> Fault:
        """Local cluster: every process dies at once. Elsewhere: SIGKILL of PBS and the test users' processes."""
        return self.start(HostCrash(self._c(), host) if self._local() else DaemonKill(self._c(), host))

    def pause_host(self, host: str) -> Fault:
        """Local cluster: the cgroup freezer. Elsewhere: SIGSTOP of PBS and the test users' processes."""
        return self.start(HostPause(self._c(), host) if self._local() else DaemonPause(self._c(), host))

    def partition(self, host: str) -> Fault:
        """Local cluster: netns firewall from outside. Elsewhere: iptables over SSH, sparing our session."""
        return self.start(HostPartition(self._c(), host) if self._local() else SshPartition(self._c(), host))

    def reject_hook(self, event: str, hosts: tuple[str, ...], how: str = "reject", seconds: int = 60) -> Fault:
        return self.start(RejectHook(self._c(), event, tuple(hosts), how, seconds))

    def start(self, fault: Fault) -> Fault:
        if any(f.kind == fault.kind and f.target == fault.target for f in self.active):
            raise FaultAlreadyActive(f"{fault.kind} already active on {fault.target}")
        self.active.append(fault)  # recorded first: a half-started fault is still healed
        fault.start()
        return fault

    def heal(self, fault: Fault) -> None:
        if fault in self.active:
            self.active.remove(fault)
            fault.heal()

    @contextlib.contextmanager
    def inject(self, fault: Fault) -> Iterator[Fault]:
        self.start(fault)
        try:
            yield fault
        finally:
            self.heal(fault)

    def heal_all(self) -> list[str]:
        """Heal every active fault, last first; returns errors instead of raising them."""
        problems = []
        while self.active:
            fault = self.active.pop()
            try:
                fault.heal()
            except Exception as exc:  # noqa: BLE001 - teardown reports, never masks the test's failure
                problems.append(f"healing {fault.kind} on {fault.target}: {exc}")
        return problems
