"""The local cluster as the provider of an inventory's hosts (the interface of pbs_harness.hosts.providers).

Recognised before listing by its inventory script (inventory/local/cluster.py), and after by the
variable every host of the script's listing and of a written inventory carries (local_cluster_host).
Its hosts are the harness's own: `pbs-harness up` brings them up and repairs them, faults act on
them from this machine, and they run this machine's OpenPBS.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pbs_harness.common.errors import PreconditionError
from pbs_harness.hosts.backend import flavour_of
from pbs_harness.localcluster import network, provider, sshkeys, state

SCRIPT = "cluster.py"


class LocalCluster:
    """One flavour of local host: namespace hosts run this machine's OpenPBS (its /opt is theirs),
    system hosts their own, installed from packages (checked over SSH, as on VMs)."""

    brings_up = True

    def __init__(self, flavour: str) -> None:
        self.flavour = flavour
        self.shares_openpbs = flavour == "namespace"

    def owns_path(self, path: Path) -> bool:
        """inventory/local (the directory of the inventory script), or the script itself, listing a
        cluster of this flavour (no cluster up: the namespace flavour, whose checks come first)."""
        script = path / SCRIPT if path.is_dir() else path
        if script.name != SCRIPT or not script.exists():
            return False
        st = state.load_checked()
        return (st.flavour if st else "namespace") == self.flavour

    def owns_hosts(self, server_vars: Mapping[str, Any]) -> bool:
        return bool(server_vars.get(provider.LOCAL_HOST_VAR)) and flavour_of(server_vars) == self.flavour

    def check_listable(self, path: Path) -> None:
        """The script lists the cluster of the configured state directory: stop while none is up,
        before anything connects anywhere."""
        if state.load_checked() is None:
            raise PreconditionError(
                f"the local cluster is not up (no state in {state.describe_dir()})",
                "bring it up first: pbs-harness up (or pbs-harness cluster up, then deploy); if it is up elsewhere, "
                f"name it: {state.STATE_DIR_MEANS}",
            )

    def check_network(self, server_vars: Mapping[str, Any]) -> None:
        """Local addresses are only reachable over the cluster's bridge; without it they would route
        off-box. The cluster is the one the inventory records (its state directory), not the default."""
        root = provider.state_dir_of(server_vars)
        st = state.load_checked(root)
        if st is None or st.spec.bridge not in network.link_names():
            raise PreconditionError(
                f"the local cluster in {root} is not up (no state, or its bridge is missing)",
                f"bring it up first: pbs-harness up --state-dir {root} (with the options it was made with)",
            )

    def unreachable_hint(self, inventory_path: Path) -> str:
        return "repair the local cluster: pbs-harness up (or pbs-harness cluster status / cluster boot HOST)"

    def heal(self, hosts: Mapping[str, Mapping[str, Any]]) -> None:
        """Thaw, reconnect and boot each host (Jepsen: heal in setup too), in the cluster its inventory records."""
        for name, host_vars in hosts.items():
            provider.inventory_host(name, host_vars).heal_leftovers()

    def brought_up(self) -> state.ClusterState | None:
        """The cluster the inventory script lists: the configured state directory's."""
        return state.load()

    def cluster_name(self, server_vars: Mapping[str, Any]) -> str | None:
        """The cluster's host-name prefix (pa, pab, pbsh)."""
        st = state.load(provider.state_dir_of(server_vars))
        return st.prefix if st is not None else None

    def shared_dir(self, server_vars: Mapping[str, Any]) -> Path | None:
        """Namespace hosts: the cluster's state directory (they share this machine's /var/lib; only
        /var/spool/pbs, /root, /tmp and /run are their own). System hosts share nothing."""
        if not self.shares_openpbs:
            return None
        return provider.state_dir_of(dict(server_vars))

    def host_ssh_config(self, server_vars: Mapping[str, Any]) -> Path | None:
        """The harness's own ssh_config (its key authorises root on every host, its known_hosts pins
        every host key), which the hosts read in the shared state directory; None for a cluster with a
        login user, whose hosts refuse root logins."""
        root = provider.state_dir_of(dict(server_vars))
        st = state.load(root)
        if st is None or st.spec.login_user or not self.shares_openpbs:
            return None  # system hosts do not see this machine's files
        return sshkeys.ssh_config(root)


LOCAL = LocalCluster("namespace")
LOCAL_SYSTEM = LocalCluster("system")
