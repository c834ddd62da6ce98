"""Fault injection with a heal contract.

A fault is started on one target and healed exactly once; `Nemesis` keeps the active faults,
refuses to start a second fault of the same kind on the same target, and `heal_all` heals
whatever is still active — in a `finally`, in fixture teardown, on Ctrl-C. Host-level faults act
through the host's kind (pbs_harness.hosts.host: the registry of host kinds builds it), whatever the
kind of host, and only where its kind declares the fault (FaultNotDeclared otherwise); every start and
heal is written to the test's fault log (faults/log.py) with the kind's mechanism.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from pbs_harness import hosts
from pbs_harness.common.waits import WaitTimeout
from pbs_harness.hosts.base import BOOT, CRASH, PARTITION, PAUSE, REBOOT, HostKind, HostVars
from pbs_harness.remote.cluster import Cluster
from pbs_harness.suite.faults.log import FaultLog


def host_of(cluster: Cluster, name: str) -> HostKind:
    """An inventory host as its kind models it (the registry reads the kind from its variables)."""
    return hosts.host(name, cluster.inventory.hosts[name].vars, cluster)


class Fault(Protocol):
    kind: str
    target: str

    def start(self) -> None: ...

    def heal(self) -> None: ...


class FaultNotDeclared(RuntimeError):
    """The host's kind does not declare this fault (its FAULTS): refused before anything acts. A test that
    needs it carries the needs_faults marker, and skips on such a cluster, naming the fault."""


@dataclass
class _HostFault:
    """A fault acted by the host's backend, found through the registry of host kinds (namespace, system,
    ssh, aws): the test never branches on the kind of host. `backend` picks another mechanism on purpose
    (e.g. the SSH-side ones on a local host, to exercise them). `needs`: the kind's declared faults it uses.
    Each fault names the HostKind methods that start and heal it (`acts`); `drops_connection`: the start
    takes the host's processes, sshd's included, so the harness's connection to it is closed after."""

    cluster: Cluster
    target: str
    backend: HostKind | None = None
    needs: ClassVar[tuple[str, ...]] = ()
    acts: ClassVar[tuple[str, str]]  # (start, heal): names of HostKind methods
    drops_connection: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.backend is None:
            self.backend = host_of(self.cluster, self.target)
        missing = [f for f in self.needs if not self.backend.can(f)]
        if missing:
            raise FaultNotDeclared(
                f"{self.target}: hosts of kind {self.backend.kind!r} do not declare the fault(s) "
                f"{', '.join(missing)}; mark the test needs_faults({', '.join(repr(f) for f in self.needs)})"
            )

    @property
    def host(self) -> HostKind:
        assert self.backend is not None
        return self.backend

    @property
    def mechanism(self) -> str:
        action = self.kind.removeprefix("host-")
        return f"{self.host.kind}: {self.host.mechanisms.get(action, action)}"

    def start(self) -> None:
        getattr(self.host, self.acts[0])()
        if self.drops_connection:
            self.cluster.hosts[self.target].close()

    def heal(self) -> None:
        getattr(self.host, self.acts[1])()


@dataclass
class HostCrash(_HostFault):
    """Every process of the host dies at once; heal boots it (same name, IP, disk; PBS restarts)."""

    kind: str = "host-crash"
    needs: ClassVar[tuple[str, ...]] = (CRASH, BOOT)
    acts: ClassVar[tuple[str, str]] = ("crash", "boot")
    drops_connection: ClassVar[bool] = True


@dataclass
class HostPause(_HostFault):
    """All processes of the host frozen; heal thaws them."""

    kind: str = "host-pause"
    needs: ClassVar[tuple[str, ...]] = (PAUSE,)
    acts: ClassVar[tuple[str, str]] = ("pause", "resume")


@dataclass
class HostPartition(_HostFault):
    """Traffic to and from the host dropped while its processes live; heal restores it."""

    kind: str = "host-partition"
    needs: ClassVar[tuple[str, ...]] = (PARTITION,)
    acts: ClassVar[tuple[str, str]] = ("partition", "reconnect")


@dataclass
class HostReboot(_HostFault):
    """The host restarts at once, by its kind's mechanism (e.g. EC2's reboot); heal waits until it answers."""

    kind: str = "host-reboot"
    needs: ClassVar[tuple[str, ...]] = (REBOOT,)
    acts: ClassVar[tuple[str, str]] = ("reboot", "wait_ready")
    drops_connection: ClassVar[bool] = True


def start_mom_command(prefix: str, proc: str = "/proc") -> str:
    """Start the host's pbs_mom again, inside pbs.service where systemd runs PBS.

    pbs.service (the packages' unit: Type=forking, no main PID) stays active while any of its processes
    live and runs its ExecStop, `pbs_init.d stop`, once the last one has exited, even after they died
    on their own: a pbs_mom started beside the unit (say while the killed mom's job or hook processes
    were still exiting) would be stopped again by it. So, with systemd as PID 1: after waiting out a
    start or stop in progress, an inactive unit is started (`systemctl start pbs`: the daemons of this
    host); into an active one the new pbs_mom is started from within its cgroup (cgroup.procs of the
    unit's ControlGroup, in the unified and the name=systemd hierarchy), as the unit's own
    ExecReload, pbs_reload, would do (not `systemctl reload`: the packages install pbs_reload mode
    0644, openpbs.spec, so it fails with 203/EXEC). Without systemd (e.g. namespace hosts) pbs_mom
    is started directly. (`proc`: another /proc, for tests.)"""
    mom = f"{prefix}/sbin/pbs_mom"
    return (
        f'if [ "$(cat {proc}/1/comm)" = systemd ] && systemctl cat pbs.service >/dev/null 2>&1; then '
        "for i in $(seq 120); do s=$(systemctl is-active pbs.service); "
        'case "$s" in activating|deactivating|reloading) sleep 0.5;; *) break;; esac; done; '
        'if [ "$s" = active ]; then '
        "unit=$(systemctl show -p ControlGroup --value pbs.service); "
        'for m in $(awk \'$3 == "cgroup2" || ($3 == "cgroup" && $4 ~ /name=systemd/) {print $2}\' '
        f"{proc}/mounts); "
        'do [ -w "$m$unit/cgroup.procs" ] && echo $$ > "$m$unit/cgroup.procs"; done; '
        f"{mom}; "
        "else systemctl reset-failed pbs.service 2>/dev/null; systemctl start pbs.service; fi; "
        f"else {mom}; fi"
    )


@dataclass
class MomSignal:
    """SIGSTOP (pause) or SIGKILL the host's pbs_mom; heal sends SIGCONT or starts pbs_mom again
    (start_mom_command: inside pbs.service where systemd runs PBS)."""

    cluster: Cluster
    target: str
    signal: str = "STOP"
    kind: str = field(init=False)

    def __post_init__(self) -> None:
        if self.signal not in ("STOP", "KILL"):
            raise ValueError(f"MomSignal supports STOP and KILL, not {self.signal}")
        self.kind = f"mom-{self.signal.lower()}"
        self.mechanism = f"pkill -{self.signal} -x pbs_mom over SSH"

    def start(self) -> None:
        self.cluster.hosts[self.target].check(["pkill", f"-{self.signal}", "-x", "pbs_mom"])

    def heal(self) -> None:
        host = self.cluster.hosts[self.target]
        host.run(["pkill", "-CONT", "-x", "pbs_mom"])
        if not host.run(["pgrep", "-x", "pbs_mom"]).ok:
            host.check(start_mom_command(str(self.cluster.prefix)))
            if not host.run(["pgrep", "-x", "pbs_mom"]).ok:
                raise RuntimeError(f"{self.target}: pbs_mom did not start again")


# Faults that take a whole host out of reach: nothing new runs on it, and on a local host SSH cannot
# reach it either, until the heal.
OUT_OF_REACH = ("host-crash", "host-pause", "host-partition", "host-reboot")


class FaultAlreadyActive(RuntimeError):
    """A second fault of the same kind on the same target (Jepsen's "already disrupting")."""


@dataclass
class RejectHook:
    """A temporary execjob hook that fails on some hosts: reject, raise, raise late, or sleep; heal deletes it."""

    cluster: Cluster
    event: str
    hosts: tuple[str, ...]
    how: str = "reject"
    seconds: int = 60
    kind: str = field(init=False)
    target: str = field(init=False)

    def __post_init__(self) -> None:
        if self.how not in ("reject", "exception", "late_exception", "sleep"):
            raise ValueError(f"RejectHook how= must be reject, exception, late_exception or sleep, not {self.how}")
        self.kind = f"hook-{self.event}"
        self.target = ",".join(self.hosts)
        # One name per event and kind, so a begin fault and a prologue fault can be active together.
        self.name = f"pbsh_fault_{self.event.removeprefix('execjob_')}_{self.how}"
        self.mechanism = f"hook {self.name} ({self.how}) created with qmgr"

    def start(self) -> None:
        from pbs_harness.pbs.hooks import Hooks
        from pbs_harness.suite.faults.hookbodies import failing_hook_body

        body = failing_hook_body(self.hosts, self.how, self.seconds)
        attrs = {"event": self.event, "enabled": True, "alarm": max(30, self.seconds + 10)}
        Hooks(self.cluster).create(self.name, body, attrs)

    def heal(self) -> None:
        from pbs_harness.pbs.hooks import Hooks

        Hooks(self.cluster).delete(self.name)


@dataclass
class Nemesis:
    """Registry of active faults for one test, with constructors for the usual ones; every start
    and heal goes into its fault log."""

    cluster: Cluster | None = None
    active: list[Fault] = field(default_factory=list)
    log: FaultLog = field(default_factory=FaultLog)
    after_heal: list[tuple[str, Callable[[], None]]] = field(default_factory=list)

    def _c(self) -> Cluster:
        if self.cluster is None:
            raise RuntimeError("this Nemesis has no cluster")
        return self.cluster

    def setup(self, hosts_vars: Mapping[str, HostVars]) -> list[str]:
        """Jepsen's nemesis setup, once per test session before any test: every host's kind heals what a
        killed run may have left on it (HostKind.heal_leftovers: thaw, reconnect, boot), whatever the
        kind. Each heal is written to the fault log, with how the kind heals (HEAL_MECHANISM), when it
        begins and when it ends, so a heal that hangs (a boot that never answers) leaves its trace.
        Returns the heals that failed, instead of raising. Without connections (`cluster` None) only kinds
        that act from this machine can heal."""
        problems = []
        for name, host_vars in sorted(hosts_vars.items()):
            kind = hosts.host(name, host_vars, self.cluster)
            mechanism = f"{kind.kind}: {kind.HEAL_MECHANISM}"
            try:
                self._logged("setup", "heal-leftovers", name, mechanism, kind.heal_leftovers)
            except Exception as exc:  # noqa: BLE001 - reported for every host, the caller decides
                problems.append(f"healing what a killed run left on {name}: {type(exc).__name__}: {exc}")
        return problems

    def kill_mom(self, host: str) -> Fault:
        return self.start(MomSignal(self._c(), host, "KILL"))

    def stop_mom(self, host: str) -> Fault:
        return self.start(MomSignal(self._c(), host, "STOP"))

    def crash_host(self, host: str) -> Fault:
        """Every process of the host dies at once (on an SSH-only host: PBS and the test users' processes)."""
        return self.start(HostCrash(self._c(), host))

    def pause_host(self, host: str) -> Fault:
        """Every process of the host frozen (on an SSH-only host: PBS and the test users' processes stopped)."""
        return self.start(HostPause(self._c(), host))

    def partition(self, host: str) -> Fault:
        """The host cut off from the network (on an SSH-only host: all but the harness's session)."""
        return self.start(HostPartition(self._c(), host))

    def reboot_host(self, host: str) -> Fault:
        """The host restarts at once (only on kinds that declare reboot, e.g. aws: EC2's reboot)."""
        return self.start(HostReboot(self._c(), host))

    def reject_hook(self, event: str, hosts: tuple[str, ...], how: str = "reject", seconds: int = 60) -> Fault:
        return self.start(RejectHook(self._c(), event, tuple(hosts), how, seconds))

    def out_of_reach(self) -> set[str]:
        """Hosts an active fault has crashed, paused or cut off (OUT_OF_REACH)."""
        return {f.target for f in self.active if f.kind in OUT_OF_REACH}

    def when_healed(self, what: str, call: Callable[[], None]) -> None:
        """Run `call` in heal_all, once every fault is healed (e.g. a cleanup on a host the test cut off)."""
        self.after_heal.append((what, call))

    def _logged(self, action: str, kind: str, target: str, mechanism: str, call: Callable[[], None]) -> None:
        """Run `call` with a line in the fault log before it acts and one after, with its outcome or its
        error (raised again), as Jepsen logs every nemesis operation when invoked and when it completes:
        an action that hangs or kills the run (a heal that never returns, setup's boot of a host a killed
        run left down) still leaves its begin line, for a fault's start and heal as for setup."""
        started = time.monotonic()
        self.log.begin(action, kind, target, mechanism=mechanism, started=started)
        try:
            call()
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
            self.log.record(action, kind, target, mechanism=mechanism, started=started, error=error)
            raise
        self.log.record(action, kind, target, mechanism=mechanism, started=started, error=None)

    def _wait_for_moms_connected(self, timeout: float = 60) -> None:
        """Every vnode up (the baseline has them all free); one still down after `timeout` is left to the
        restore, which reports it."""
        from pbs_harness.pbs.nodes import Nodes, nodes_up

        with contextlib.suppress(WaitTimeout):
            Nodes(self._c()).wait(nodes_up, timeout=timeout, describe="every mom connected after the heal")

    def _act(self, action: str, fault: Fault, call: Callable[[], None]) -> None:
        mechanism = str(getattr(fault, "mechanism", fault.kind))
        self._logged(action, fault.kind, fault.target, mechanism, call)

    def start(self, fault: Fault) -> Fault:
        if any(f.kind == fault.kind and f.target == fault.target for f in self.active):
            raise FaultAlreadyActive(f"{fault.kind} already active on {fault.target}")
        self.active.append(fault)  # recorded first: a half-started fault is still healed
        self._act("start", fault, fault.start)
        return fault

    def heal(self, fault: Fault) -> None:
        if fault in self.active:
            self.active.remove(fault)
            self._act("heal", fault, fault.heal)

    @contextlib.contextmanager
    def inject(self, fault: Fault) -> Iterator[Fault]:
        self.start(fault)
        try:
            yield fault
        finally:
            self.heal(fault)

    def heal_all(self) -> list[str]:
        """Heal every active fault, last first, then run what waited for the heal (when_healed);
        returns errors instead of raising them."""
        problems = []
        healed_other = False
        while self.active:
            # Hook faults last, once the moms healed here are connected again: a hook deleted while a mom
            # is down can come back on that mom when it reconnects (docs/test-core.md, "A hook deleted
            # while a mom is down"). Each fault stays in `active` until its own heal, so a stop in between
            # leaves none unhealed.
            fault = next((f for f in reversed(self.active) if not isinstance(f, RejectHook)), None)
            if fault is None:
                fault = self.active[-1]
                if healed_other:
                    self._wait_for_moms_connected()
                    healed_other = False
            else:
                healed_other = True
            self.active.remove(fault)
            try:
                self._act("heal", fault, fault.heal)
            except Exception as exc:  # noqa: BLE001 - teardown reports, never masks the test's failure
                problems.append(f"healing {fault.kind} on {fault.target}: {exc}")
        while self.after_heal:
            what, call = self.after_heal.pop(0)
            try:
                call()
            except Exception as exc:  # noqa: BLE001 - as above
                problems.append(f"after healing, {what}: {exc}")
        return problems
