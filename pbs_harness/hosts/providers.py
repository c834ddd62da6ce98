"""Where a cluster's hosts come from, behind one small interface.

The inventory model, the session's availability checks and the pytest plugin ask an inventory's
provider what only it knows: whether the harness brings its hosts up (so that advice may say
`pbs-harness up`), how to heal them and check their network, and who brought them up. They never
ask for a particular provider.

Providers, tried in this order:
- the local cluster (pbs_harness.localcluster.inventory_provider), one per flavour of host (system
  hosts first, then namespace hosts): hosts the harness runs on this machine, recognised by its
  inventory script before listing and by its hosts' variables after (a written inventory is a
  plain file, but its hosts say they are local, and of which flavour);
- static hosts (pbs_harness.hosts.static): any other inventory, e.g. cloud VMs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from pbs_harness.hosts.static import STATIC
from pbs_harness.localcluster.inventory_provider import LOCAL, LOCAL_SYSTEM

# A host's inventory variables, as `ansible-inventory --list` gives them.
HostVars = Mapping[str, Any]


class BroughtUp(Protocol):
    """The machine's record of a cluster the harness brought up (the local cluster's state)."""

    owner: str | None  # the checkout that brought it up; None when the record predates owners

    @property
    def label(self) -> str: ...  # e.g. `local cluster pbsh01..pbsh06 (10.71.0.0/24)`


class Provider(Protocol):
    # The harness brings these hosts up itself (`pbs-harness up` also repairs them): it heals the host
    # faults a killed run left and crashes, pauses and partitions hosts from this machine. Advice names
    # `pbs-harness up` only then.
    brings_up: bool
    # The hosts run this machine's OpenPBS (its /opt is theirs): it is checked here, not over SSH.
    shares_openpbs: bool

    def owns_path(self, path: Path) -> bool:
        """The inventory at `path` is this provider's, known before it is listed."""
        ...

    def owns_hosts(self, server_vars: HostVars) -> bool:
        """A listed inventory is this provider's, by its server host's variables."""
        ...

    def check_listable(self, path: Path) -> None:
        """Refuse (PreconditionError) to list the inventory at `path` while its hosts are not there."""
        ...

    def check_network(self, server_vars: HostVars) -> None:
        """Refuse (PreconditionError) to probe the hosts while their addresses would not reach them."""
        ...

    def unreachable_hint(self, inventory_path: Path) -> str:
        """What to do about hosts that do not answer."""
        ...

    def heal(self, hosts: Mapping[str, HostVars]) -> None:
        """Undo the host faults a killed run may have left on these hosts (name -> variables)."""
        ...

    def brought_up(self) -> BroughtUp | None:
        """The record of the cluster this provider's inventory lists, or None (none up, or no record kept)."""
        ...

    def cluster_name(self, server_vars: HostVars) -> str | None:
        """A short name for the cluster in reports, or None for the server host's name."""
        ...

    def shared_dir(self, server_vars: HostVars) -> Path | None:
        """A directory of this machine that the hosts see at the same path (where PTL can be installed
        for them, pbs_harness.ptl.site), or None when the hosts have file systems of their own."""
        ...

    def host_ssh_config(self, server_vars: HostVars) -> Path | None:
        """An ssh_config, at a path the hosts see, with which root on one host of the cluster logs in to
        any other as root (PTL needs that); None: the hosts must already allow it on their own."""
        ...


# The first that recognises an inventory is its provider.
PROVIDERS: tuple[Provider, ...] = (LOCAL_SYSTEM, LOCAL, STATIC)


def of_path(path: Path) -> Provider:
    """The provider of the inventory at `path`, before it is listed."""
    return next(p for p in PROVIDERS if p.owns_path(path))


def of_hosts(server_vars: HostVars) -> Provider:
    """The provider of a listed inventory whose server host has these variables."""
    return next(p for p in PROVIDERS if p.owns_hosts(server_vars))
