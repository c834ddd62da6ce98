"""The local clusters of this machine, so that one cluster never takes another's names or addresses.

A cluster is known by its /etc/hosts block (tagged with its state directory) and by a state.json
under /var/lib/pbs-harness/. Its prefix, subnet and login user come from its state.json; for a
block without one (a legacy block, a state directory gone) they are inferred from the names and
addresses in the block.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path

from pbs_harness.localcluster import hostsfile, state
from pbs_harness.localcluster.spec import ClusterSpec

STATE_PARENT = state.DEFAULT_STATE_DIR.parent


@dataclass(frozen=True)
class KnownCluster:
    """Another cluster as far as this machine records it."""

    state_dir: str  # "" when only a legacy /etc/hosts block names it
    prefix: str | None
    subnet: str | None
    addresses: tuple[str, ...]
    names: tuple[str, ...]
    login_user: str | None

    @property
    def where(self) -> str:
        return f"the local cluster in {self.state_dir}" if self.state_dir else "a local cluster of an older pbs-harness"

    def overlaps(self, spec: ClusterSpec) -> bool:
        net = spec.network
        if self.subnet and ipaddress.IPv4Network(self.subnet).overlaps(net):
            return True
        return any(ipaddress.IPv4Address(a) in net for a in self.addresses)


def _prefix_of(names: tuple[str, ...]) -> str | None:
    prefixes = {m[1] for n in names if (m := re.fullmatch(r"(.+?)\d{2}", n))}
    return prefixes.pop() if len(prefixes) == 1 else None


def known(hosts_file: Path = hostsfile.HOSTS_FILE, state_parent: Path = STATE_PARENT) -> list[KnownCluster]:
    """Every cluster this machine records, by state directory."""
    by_dir: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    legacy: list[KnownCluster] = []
    for block in hostsfile.read_blocks(hosts_file):
        addrs = tuple(ip for ip, _ in block.entries)
        names = tuple(name for _, name in block.entries)
        if block.cluster:
            by_dir[block.cluster] = (addrs, names)
        else:
            legacy.append(KnownCluster("", _prefix_of(names), None, addrs, names, None))
    if state_parent.is_dir():
        for found in sorted(state_parent.glob("*/state.json")):
            by_dir.setdefault(str(found.parent), ((), ()))
    out: list[KnownCluster] = []
    for sdir, (addrs, names) in sorted(by_dir.items()):
        try:
            st = state.load(Path(sdir))
        except (OSError, ValueError, TypeError):
            st = None  # unreadable state: judge by the hosts block alone
        if st is None:
            out.append(KnownCluster(sdir, _prefix_of(names), None, addrs, names, None))
        else:
            spec_names = names or tuple(h.name for h in st.spec.hosts)
            out.append(KnownCluster(sdir, st.prefix, st.subnet, addrs, spec_names, st.login_user))
    return out + legacy


def others(root: Path | None = None, **where: Path) -> list[KnownCluster]:
    """The clusters of this machine other than the one in state directory `root`."""
    me = state.cluster_id(root)
    return [c for c in known(**where) if c.state_dir != me]
