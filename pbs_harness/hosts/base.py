"""The one interface every kind of host implements (the registry: pbs_harness.hosts).

A kind of host is one class in one module. Its class attributes say what the harness may do with
such hosts (Molecule's driver: `managed`, its capabilities); its class methods answer for an
inventory whose server host is of this kind (inventory facts, checks before anything connects,
the record of who brought the hosts up); an instance is one host, built from its inventory
variables, and owns that host's lifecycle (create, start, wait, destroy), its faults and their
mechanisms (Jepsen's nemesis acts through them), and the heal of what a killed run left.

Callers ask the registry for a host's kind once, from one inventory variable
(pbs_harness.hosts.KIND_VAR), and then only ask the kind: no code outside the kind modules
compares a kind's name. What differs by kind is a method of the kind; where the caller's own
behaviour differs (the suite heals only hosts the harness manages, checks OpenPBS here only when
the hosts share this machine's files), it asks the kind's declared facts, never its name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Protocol

# A host's inventory variables, as `ansible-inventory --list` gives them.
HostVars = Mapping[str, Any]
# The one inventory variable that names a host's kind (the registry, pbs_harness.hosts, reads it; the
# kinds that write inventories set it).
KIND_VAR = "pbs_harness_host_kind"

# The faults a kind may support; a kind lists those it can do in FAULTS, and a test that needs one
# it lacks skips naming the missing capability, never the kind (the needs_faults marker; the fault layer
# refuses to start an undeclared one). crash's heal is a boot: a crash needs both.
CRASH, BOOT, PAUSE, PARTITION, REBOOT = "crash", "boot", "pause", "partition", "reboot"
ALL_FAULTS = frozenset({CRASH, BOOT, PAUSE, PARTITION, REBOOT})


class UnsupportedByKind(NotImplementedError):
    """The kind of host cannot do this (e.g. create a host it does not manage)."""

    def __init__(self, kind: str, what: str) -> None:
        super().__init__(f"hosts of kind {kind!r} cannot {what}")
        self.kind = kind
        self.what = what


class BroughtUp(Protocol):
    """The machine's record of hosts the harness brought up (e.g. the local cluster's state)."""

    owner: str | None  # the checkout that brought them up; None when the record predates owners

    @property
    def label(self) -> str: ...  # e.g. `local cluster pbsh01..pbsh06 (10.71.0.0/24)`


class HostConnection(Protocol):
    """One host's connection, as a kind uses it (remote.transport.RemoteHost; results: its CommandResult)."""

    def run(self, cmd: str, *, timeout: float = 120) -> Any: ...

    def check(self, cmd: str, **kwargs: object) -> Any: ...

    def run_as_login(self, cmd: str, *, timeout: float = 120) -> Any: ...


class ClusterConnections(Protocol):
    """What a kind uses of the cluster under test (remote.cluster.Cluster): declared here, below the
    remote/ package, because remote/inventory.py asks the registry (pbs_harness.hosts) for its kind."""

    @property
    def hosts(self) -> Mapping[str, HostConnection]: ...

    def users(self) -> list[str]: ...


class HostKind(ABC):
    """One host of one kind. Subclasses set NAME and implement the abstract methods."""

    NAME: ClassVar[str]
    # The harness creates and destroys these hosts itself (`pbs-harness up` also repairs them; its
    # advice names `up` only then). Replaces the old Provider's "brings up" flag.
    managed: ClassVar[bool] = False
    # The hosts see this machine's /opt (its OpenPBS) and the state directory at the same paths, so
    # OpenPBS is checked here and PTL installed once for all. Replaces the old Provider's "shares OpenPBS" flag.
    shares_controller_files: ClassVar[bool] = False
    # The hosts run on this machine: their processes, network namespaces and addresses are this
    # machine's to inspect (pids(), a partition seen from here).
    runs_here: ClassVar[bool] = False
    # The hosts of a local cluster of this kind install OpenPBS from packages into a root of their own
    # (`up --openpbs`), and a mutant is put into each host's root: asked by localcluster/openpbs_packages.py and
    # deploy/mutants/hosts.py instead of comparing the kind's name.
    installs_openpbs_packages: ClassVar[bool] = False
    # The faults this kind can inject, and how each acts (for the fault log, Jepsen's history).
    FAULTS: ClassVar[frozenset[str]] = frozenset()
    MECHANISMS: ClassVar[Mapping[str, str]] = {}
    # How heal_leftovers acts, for the fault log's line of the session's heal (a kind that heals
    # otherwise says so with its override).
    HEAL_MECHANISM: ClassVar[str] = "thaw, reconnect, boot if down"

    def __init__(self, name: str, host_vars: HostVars, cluster: ClusterConnections | None = None) -> None:
        self.name = name
        self.host_vars = host_vars
        self.cluster = cluster  # the connections of the inventory (run, check); None before deploy

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    @property
    def kind(self) -> str:
        return self.NAME

    @property
    def flavour(self) -> str:
        """The kind's name, as the fault log writes it before each mechanism."""
        return self.NAME

    @property
    def mechanisms(self) -> Mapping[str, str]:
        return self.MECHANISMS

    def can(self, fault: str) -> bool:
        return fault in self.FAULTS

    # -- inventory facts: asked of the kind of an inventory's server host -----------------------

    @classmethod
    def claims_inventory(cls, path: Path) -> bool:
        """The inventory at `path` is this kind's, known before it is listed (e.g. an inventory script)."""
        return False

    @classmethod
    def check_listable(cls, path: Path) -> None:
        """Refuse (PreconditionError) to list the inventory at `path` while its hosts are not there."""
        return None

    @classmethod
    def check_network(cls, server_vars: HostVars) -> None:
        """Refuse (PreconditionError) to probe the hosts while their addresses would not reach them."""
        return None

    @classmethod
    def unreachable_hint(cls, inventory_path: Path) -> str:
        """What to do about hosts of this kind that do not answer."""
        return f"check that these hosts are running and that ansible_host/ansible_port in {inventory_path} are right"

    @classmethod
    def brought_up(cls, server_vars: HostVars | None = None) -> BroughtUp | None:
        """The record of the hosts the harness brought up, or None (not managed, or none up)."""
        return None

    @classmethod
    def cluster_name(cls, server_vars: HostVars) -> str | None:
        """A short name for the cluster in reports, or None for the server host's name."""
        return None

    @classmethod
    def shared_dir(cls, server_vars: HostVars) -> Path | None:
        """A directory of this machine the hosts see at the same path, or None."""
        return None

    @classmethod
    def staging_dir(cls, server_vars: HostVars) -> Path | None:
        """For hosts that see no directory of this machine (shared_dir None): a directory of this machine
        whose subdirectories the harness may copy into every host at the same path (put_tree), e.g. PTL
        built here for hosts with their own root; None: the kind takes no such copies."""
        return None

    @classmethod
    def host_ssh_config(cls, server_vars: HostVars) -> Path | None:
        """An ssh_config at a path the hosts see, with which root logs in from one host to another; None:
        the hosts must allow it on their own."""
        return None

    def put_tree(self, src: Path) -> None:
        """Copy the directory `src` of this machine (under staging_dir) into the host at the same path,
        replacing what is there, symbolic links kept as links."""
        raise UnsupportedByKind(self.NAME, "copy directories into hosts")

    def remove_tree(self, path: Path) -> None:
        """Remove what put_tree copied to `path` on the host (nothing there: nothing to do)."""
        raise UnsupportedByKind(self.NAME, "copy directories into hosts")

    # -- lifecycle (managed kinds; an unmanaged kind's hosts exist before and after the harness) --

    def create(self) -> None:
        """Make the host (disk, root file system, instance) before its first start."""
        raise UnsupportedByKind(self.NAME, "create hosts")

    def start(self) -> None:
        """Start the host without waiting for it (several start at once; wait_ready waits)."""
        raise UnsupportedByKind(self.NAME, "start hosts")

    def wait_ready(self, timeout: float = 30) -> None:
        """Return once the host's sshd answers; raise UnreachableError at the timeout."""
        raise UnsupportedByKind(self.NAME, "wait for hosts")

    def destroy(self) -> None:
        """Remove the host for good (`down`)."""
        raise UnsupportedByKind(self.NAME, "destroy hosts")

    # -- commands -------------------------------------------------------------------------------

    def run(self, command: str, timeout: float = 120) -> Any:
        """Run a command on the host over the inventory's connection (a transport.CommandResult)."""
        if self.cluster is None:
            raise UnsupportedByKind(self.NAME, "run commands before the cluster's connections exist")
        return self.cluster.hosts[self.name].run(command, timeout=timeout)

    # -- state and faults -----------------------------------------------------------------------

    @abstractmethod
    def is_running(self) -> bool: ...

    @abstractmethod
    def is_paused(self) -> bool: ...

    @abstractmethod
    def is_partitioned(self) -> bool: ...

    def pids(self) -> list[int]:
        """The host's processes as this machine sees them; [] where it cannot."""
        return []

    @abstractmethod
    def crash(self) -> None:
        """Every process of the host dies at once (or the closest the kind can get)."""

    @abstractmethod
    def boot(self) -> None:
        """Bring the host back after a crash; returns once it answers."""

    def reboot(self) -> None:
        """The host restarts at once, on its own; returns without waiting (wait_ready waits)."""
        raise UnsupportedByKind(self.NAME, "reboot hosts")

    @abstractmethod
    def pause(self) -> None: ...

    @abstractmethod
    def resume(self) -> None: ...

    @abstractmethod
    def partition(self) -> None:
        """All traffic to and from the host dropped while its processes live."""

    @abstractmethod
    def reconnect(self) -> None: ...

    def undo_faults(self, say: Callable[[str], None] | None = None) -> None:
        """Thaw and reconnect the host: the faults a test heals in its teardown, left in place when its run
        was killed (SIGKILL: no teardown). Both act whatever is_paused/is_partitioned say (idempotent; a
        run killed while it set a fault may leave half of one). With `say` (`pbs-harness up` prints it),
        what they found is said first; without it nothing is asked (on some kinds asking costs a call)."""
        if say is not None and self.is_paused():
            say(f"host {self.name}: paused (left by an interrupted test run): resuming it")
        self.resume()
        if say is not None and self.is_partitioned():
            say(f"host {self.name}: partitioned (left by an interrupted test run): reconnecting it")
        self.reconnect()

    def heal_leftovers(self) -> None:
        """Undo any fault a killed run left on the host: thaw, reconnect, boot (idempotent)."""
        self.undo_faults()
        if not self.is_running():
            self.boot()
