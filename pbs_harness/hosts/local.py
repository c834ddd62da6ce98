"""What the two kinds of local host (hosts/namespace.py, hosts/system.py) share: hosts the harness runs
on this machine, each in network namespaces on the cluster's bridge, recorded in a state directory.

An instance is one host: processes in its cgroups (pause, crash, the process list), partitions in
its network namespace set from this machine, and the repair of what a killed run left. The class
answers for an inventory of such hosts: recognised before listing by the local inventory script
(inventory/local/cluster.py, listing the configured state directory's cluster), refused while the
cluster is not up, advised to `pbs-harness up`, named by its host-name prefix. Subclasses say how a
host starts, is prepared and removed, and what else the cluster shares with this machine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pbs_harness.common.errors import PreconditionError
from pbs_harness.hosts.base import BOOT, CRASH, PARTITION, PAUSE, ClusterConnections, HostKind, HostVars
from pbs_harness.localcluster import hostproc, network, state
from pbs_harness.localcluster.containers import cgroups
from pbs_harness.localcluster.spec import DEFAULT_FLAVOUR, ClusterSpec, HostSpec

if TYPE_CHECKING:
    from pbs_harness.localcluster.registry import KnownCluster

PARTITION_MECHANISM = f"iptables chain {network.PARTITION_CHAIN} in the host's network namespace, set from this machine"
# The local inventory script (inventory/local/cluster.py): it lists the configured state directory's cluster.
SCRIPT = "cluster.py"


class LocalHostBase(HostKind):
    managed = True
    runs_here = True
    # What the fault layer may ask of it; no reboot fault: crash + boot is the restart.
    FAULTS = frozenset({CRASH, BOOT, PAUSE, PARTITION})

    def __init__(
        self,
        name: str,
        host_vars: HostVars,
        cluster: ClusterConnections | None = None,
        *,
        st: state.ClusterState | None = None,
        root: Path | None = None,
    ) -> None:
        super().__init__(name, host_vars, cluster)
        if st is None:  # from an inventory: the cluster its hosts record (their state directory)
            root = state.state_dir_of(host_vars)
            st = state.require(root)
        self.state = st
        self.root = state.state_dir(root)
        self.spec: HostSpec = st.spec.host(name)

    @classmethod
    def in_cluster(cls, st: state.ClusterState, host: HostSpec, root: Path | None = None) -> LocalHostBase:
        """One host of the cluster recorded in `st` (state directory `root`), as `up`, `down` and `status` see it."""
        where = state.state_dir(root)
        host_vars = {state.LOCAL_HOST_VAR: True, state.STATE_DIR_VAR: str(where), "ansible_host": host.ip}
        return cls(host.name, host_vars, st=st, root=where)

    @property
    def cluster_spec(self) -> ClusterSpec:
        return self.state.spec

    @property
    def label(self) -> str:
        return f"host {self.name}"

    # -- inventory facts ------------------------------------------------------------------------

    @classmethod
    def claims_inventory(cls, path: Path) -> bool:
        """inventory/local (the directory of the inventory script), or the script itself, listing a
        cluster of this kind (no cluster up: the default kind of a state record, whose checks come first)."""
        script = path / SCRIPT if path.is_dir() else path
        if script.name != SCRIPT or not script.exists():
            return False
        st = state.load_checked()
        return (st.flavour if st else DEFAULT_FLAVOUR) == cls.NAME

    @classmethod
    def check_listable(cls, path: Path) -> None:
        """The script lists the cluster of the configured state directory: stop while none is up,
        before anything connects anywhere."""
        if state.load_checked() is None:
            raise PreconditionError(
                f"the local cluster is not up (no state in {state.describe_dir()})",
                "bring it up first: pbs-harness up (or pbs-harness cluster up, then deploy); if it is up elsewhere, "
                f"name it: {state.STATE_DIR_MEANS}",
            )

    @classmethod
    def check_network(cls, server_vars: HostVars) -> None:
        """Local addresses are only reachable over the cluster's bridge; without it they would route
        off-box. The cluster is the one the inventory records (its state directory), not the default."""
        root = state.state_dir_of(server_vars)
        st = state.load_checked(root)
        if st is None or st.spec.bridge not in network.link_names():
            raise PreconditionError(
                f"the local cluster in {root} is not up (no state, or its bridge is missing)",
                f"bring it up first: pbs-harness up --state-dir {root} (with the options it was made with)",
            )

    @classmethod
    def unreachable_hint(cls, inventory_path: Path) -> str:
        return "repair the local cluster: pbs-harness up (or pbs-harness cluster status / cluster boot HOST)"

    @classmethod
    def brought_up(cls, server_vars: HostVars | None = None) -> state.ClusterState | None:
        """The cluster the inventory script lists: the configured state directory's (or the one the
        server host's variables record)."""
        return state.load(state.state_dir_of(server_vars) if server_vars else None)

    @classmethod
    def cluster_name(cls, server_vars: HostVars) -> str | None:
        """The cluster's host-name prefix (pa, pab, pbsh)."""
        st = state.load(state.state_dir_of(server_vars))
        return st.prefix if st is not None else None

    # -- the cluster on this machine (the local cluster's `up`, `down` and inventory ask) --------

    @classmethod
    def programs(cls) -> Mapping[str, str]:
        """The programs this machine needs to run such hosts (program -> Debian package), checked by `up`."""
        raise NotImplementedError

    @classmethod
    def describe_hosts(cls, spec: ClusterSpec) -> str:
        """What the cluster's description says of its hosts (` debian-12 system`), or nothing."""
        return ""

    @classmethod
    def inventory_vars(cls, st: state.ClusterState) -> dict[str, Any]:
        """The host variables in which this kind's hosts differ (given per host: they outrank group_vars)."""
        raise NotImplementedError

    @classmethod
    def prepare_cluster(
        cls, st: state.ClusterState, old: state.ClusterState | None, root: Path | None, progress: Callable[[str], None]
    ) -> None:
        """What `up` makes on this machine for such a cluster before its hosts are prepared."""
        raise NotImplementedError

    @classmethod
    def forget_cluster(
        cls, st: state.ClusterState, root: Path | None, others: list[KnownCluster], progress: Callable[[str], None]
    ) -> None:
        """What `down` takes back of this machine's files for such a cluster (nothing, unless the kind
        changed them); `others`: the clusters still up."""

    # -- one host -------------------------------------------------------------------------------

    def is_running(self) -> bool:
        return cgroups.is_running(self.name)

    def is_paused(self) -> bool:
        return cgroups.is_frozen(self.name)

    def is_partitioned(self) -> bool:
        return network.is_partitioned(self.spec)

    def pids(self) -> list[int]:
        return cgroups.pids(self.name)

    def own_root(self) -> Path | None:
        """Where the host's own root file system is mounted on this machine (a mutant is put into it:
        deploy/mutants/hosts.py); None where the host has none of its own (it shares this machine's)."""
        return None

    def prepare(self) -> None:
        """Before the first boot (and at every `up`): what the host needs on this machine."""

    def start(self) -> None:
        """Boot without waiting for sshd (several hosts boot at once; wait_ready waits)."""
        raise NotImplementedError

    def create(self) -> None:
        self.prepare()

    def boot(self) -> None:
        self.start()
        self.wait_ready()

    def wait_ready(self, timeout: float = 30) -> None:
        hostproc.wait_ssh(self.spec, timeout, root=self.root, running=self.is_running)

    # The verbs' old name (`cluster boot`, status).
    wait_ssh = wait_ready

    def crash(self) -> None:
        cgroups.kill_all(self.name, label=self.label)

    def pause(self) -> None:
        if not self.is_running():
            raise PreconditionError(f"{self.label} is not running", f"boot it: pbs-harness cluster boot {self.name}")
        cgroups.set_frozen(self.name, True, self.label)

    def resume(self) -> None:
        cgroups.set_frozen(self.name, False)

    def partition(self) -> None:
        network.partition(self.spec)

    def reconnect(self) -> None:
        network.heal(self.spec)

    def remove(self) -> None:
        """Stop the host for good (`down`)."""
        raise NotImplementedError

    def destroy(self) -> None:
        self.remove()
