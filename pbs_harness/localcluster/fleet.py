"""Several local clusters brought up together (`pbs-harness up --clusters N`): a fleet.

Member 1 is the cluster of the given shape and state directory (by default pbsh01.. on 10.71.0.0/24
in /var/lib/pbs-harness/local). Member k (2..N) appends the k-th letter to the prefix (pbshb01..,
pbshc01..), takes the subnet k-1 networks further on (10.71.1.0/24, 10.71.2.0/24, ...) and a state
directory named after its prefix beside member 1's (/var/lib/pbs-harness/pbshb). Each member is a
whole cluster of its own: bridge, names, state directory, session lock, OpenPBS server and datastore.

Member 1's state lists the others (`fleet`), so `down` and `status` of member 1 reach them all; a
member records member 1 (`member_of`). Pure computation here, except `recorded` (reads states).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import string
from dataclasses import dataclass
from pathlib import Path

from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import state
from pbs_harness.localcluster.spec import ClusterSpec

# Letters b..z name members 2..26; the bound is what a 2-core machine could ever use, and more.
MAX_CLUSTERS = 12
INVENTORY_DIR = "inventory"  # <state dir>/inventory: the written inventory of a member


@dataclass(frozen=True)
class Member:
    """One cluster of a fleet: its position (1-based), shape and state directory."""

    index: int
    spec: ClusterSpec
    root: Path

    @property
    def name(self) -> str:
        """Short name of the cluster in progress lines and reports: its host-name prefix."""
        return self.spec.prefix

    def written_inventory(self) -> Path:
        return self.root / INVENTORY_DIR


def member_spec(base: ClusterSpec, index: int) -> ClusterSpec:
    """The shape of member `index` (1-based) of the fleet whose first member is `base`."""
    if index == 1:
        return base
    if len(base.prefix) >= 8:
        raise PreconditionError(
            f"host name prefix {base.prefix!r} leaves no room for the other clusters' letter (8 characters at most)",
            "give --name-prefix of at most 7 characters with --clusters",
        )
    prefix = base.prefix + string.ascii_lowercase[index - 1]
    net = base.network
    try:
        first = net.network_address + net.num_addresses * (index - 1)
        subnet = ipaddress.IPv4Network(f"{first}/{net.prefixlen}")
    except (ValueError, ipaddress.AddressValueError):
        subnet = None
    if subnet is None or not subnet.is_private or not _same_private_range(net, subnet):
        raise PreconditionError(
            f"the subnets after {base.subnet} leave the private range before cluster {index}",
            "give a lower --subnet, e.g. --subnet 10.81.0.0/24",
        )
    return dataclasses.replace(base, subnet=str(subnet), prefix=prefix)


def _same_private_range(a: ipaddress.IPv4Network, b: ipaddress.IPv4Network) -> bool:
    ranges = [ipaddress.IPv4Network(r) for r in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")]
    return any(a.subnet_of(r) and b.subnet_of(r) for r in ranges)


def members(base: ClusterSpec, base_root: Path, count: int) -> list[Member]:
    """The fleet's first `count` members, member 1 first."""
    if not 1 <= count <= MAX_CLUSTERS:
        raise PreconditionError(f"--clusters {count} is out of range", f"use between 1 and {MAX_CLUSTERS} clusters")
    base_root = state.state_dir(base_root)
    out = [Member(1, base, base_root)]
    for index in range(2, count + 1):
        spec = member_spec(base, index)
        out.append(Member(index, spec, base_root.parent / spec.prefix))
    return out


def recorded(base_root: Path | None = None) -> list[Member]:
    """The members that are up, as member 1's state records them (member 1 first); [] when none is up.

    A member whose state is gone (taken down alone) is left out."""
    first = state.load(base_root)
    if first is None:
        return []
    root = state.state_dir(base_root)
    out = [Member(1, first.spec, root)]
    for index, other in enumerate(first.fleet, start=2):
        st = state.load(Path(other))
        if st is not None:
            out.append(Member(index, st.spec, Path(other)))
    return out


def describe(member: Member) -> str:
    return f"cluster {member.index} ({member.name}): {member.spec.describe()}, state {member.root}"
