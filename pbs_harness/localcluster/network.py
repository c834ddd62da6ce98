"""Bridge, network namespaces and veth links of the local cluster, and partitions.

Every function is idempotent: it checks what exists before creating, so `up` repairs a
half-built cluster and `down` can run twice.
"""

from __future__ import annotations

import ipaddress
import json

from pbs_harness.common import shell
from pbs_harness.localcluster.spec import ClusterSpec, HostSpec

PARTITION_CHAIN = "PBSH_PARTITION"


def _links() -> dict[str, dict]:
    out = shell.check(["ip", "-j", "link", "show"])
    return {link["ifname"]: link for link in json.loads(out or "[]")}


def link_names() -> set[str]:
    return set(_links())


def netns_list() -> set[str]:
    out = shell.run(["ip", "-j", "netns", "list"]).stdout.strip()
    return {ns["name"] for ns in json.loads(out)} if out else set()


def machine_networks() -> list[tuple[ipaddress.IPv4Network, str, str]]:
    """Every IPv4 network this machine has an address in or a route to: (network, what, device)."""
    found: list[tuple[ipaddress.IPv4Network, str, str]] = []
    for entry in json.loads(shell.check(["ip", "-j", "-4", "addr", "show"]) or "[]"):
        for addr in entry.get("addr_info", []):
            iface = ipaddress.IPv4Interface(f"{addr['local']}/{addr['prefixlen']}")
            found.append((iface.network, f"address {iface} on {entry['ifname']}", entry["ifname"]))
    for route in json.loads(shell.check(["ip", "-j", "-4", "route", "show"]) or "[]"):
        dst = route.get("dst", "")
        if dst in ("", "default"):
            continue
        rnet = ipaddress.IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False)
        dev = route.get("dev", "?")
        found.append((rnet, f"route {dst} via {dev}", dev))
    return found


def conflicts_in(spec: ClusterSpec, networks: list[tuple[ipaddress.IPv4Network, str, str]]) -> list[str]:
    """Which of `networks` (machine_networks) overlap the cluster's subnet and are not its own bridge's."""
    return [what for net, what, dev in networks if dev != spec.bridge and net.overlaps(spec.network)]


def subnet_conflicts(spec: ClusterSpec) -> list[str]:
    """Addresses or routes on this machine that overlap the subnet and are not ours."""
    return conflicts_in(spec, machine_networks())


def ensure_bridge(spec: ClusterSpec) -> None:
    links = _links()
    if spec.bridge not in links:
        shell.check(["ip", "link", "add", spec.bridge, "type", "bridge"])
    addr = f"{spec.bridge_ip}/{spec.prefixlen}"
    have = shell.check(["ip", "-j", "-4", "addr", "show", "dev", spec.bridge])
    if addr.split("/", maxsplit=1)[0] not in have:
        shell.check(["ip", "addr", "add", addr, "dev", spec.bridge])
    shell.check(["ip", "link", "set", spec.bridge, "up"])


def _ns(host: HostSpec, *argv: str) -> list[str]:
    return ["ip", "netns", "exec", host.netns, *argv]


def ensure_host_network(spec: ClusterSpec, host: HostSpec) -> None:
    """Namespace + veth pair (outer end on the bridge, inner end eth0 with the host's IP)."""
    if host.netns not in netns_list():
        shell.check(["ip", "netns", "add", host.netns])
    links = _links()
    inner_ok = shell.run(_ns(host, "ip", "link", "show", "eth0")).ok
    if host.veth_outer in links and not inner_ok:
        # Half-built link (outer end only): recreate the pair.
        shell.check(["ip", "link", "del", host.veth_outer])
        links.pop(host.veth_outer)
    if host.veth_outer not in links:
        shell.check(["ip", "link", "add", host.veth_outer, "type", "veth", "peer", "name", "eth0", "netns", host.netns])
    shell.check(["ip", "link", "set", host.veth_outer, "master", spec.bridge, "up"])
    have = shell.check(_ns(host, "ip", "-j", "-4", "addr", "show", "dev", "eth0"))
    if host.ip not in have:
        shell.check(_ns(host, "ip", "addr", "add", f"{host.ip}/{spec.prefixlen}", "dev", "eth0"))
    shell.check(_ns(host, "ip", "link", "set", "eth0", "up"))
    shell.check(_ns(host, "ip", "link", "set", "lo", "up"))


def remove_host_network(host: HostSpec) -> None:
    if host.veth_outer in _links():
        shell.run(["ip", "link", "del", host.veth_outer])
    if host.netns in netns_list():
        shell.check(["ip", "netns", "del", host.netns])


def remove_bridge(spec: ClusterSpec) -> None:
    if spec.bridge in _links():
        shell.check(["ip", "link", "del", spec.bridge])


def partition(host: HostSpec) -> None:
    """Drop all traffic to and from the host's eth0 (loopback stays up; processes live on)."""
    ipt = _ns(host, "iptables", "-w", "5")
    if not shell.run([*ipt, "-n", "-L", PARTITION_CHAIN]).ok:
        shell.check([*ipt, "-N", PARTITION_CHAIN])
    shell.check([*ipt, "-F", PARTITION_CHAIN])
    shell.check([*ipt, "-A", PARTITION_CHAIN, "-i", "lo", "-j", "ACCEPT"])
    shell.check([*ipt, "-A", PARTITION_CHAIN, "-o", "lo", "-j", "ACCEPT"])
    shell.check([*ipt, "-A", PARTITION_CHAIN, "-j", "DROP"])
    for chain in ("INPUT", "OUTPUT"):
        if not shell.run([*ipt, "-C", chain, "-j", PARTITION_CHAIN]).ok:
            shell.check([*ipt, "-I", chain, "1", "-j", PARTITION_CHAIN])


def heal(host: HostSpec) -> None:
    ipt = _ns(host, "iptables", "-w", "5")
    for chain in ("INPUT", "OUTPUT"):
        while shell.run([*ipt, "-C", chain, "-j", PARTITION_CHAIN]).ok:
            shell.check([*ipt, "-D", chain, "-j", PARTITION_CHAIN])
    if shell.run([*ipt, "-n", "-L", PARTITION_CHAIN]).ok:
        shell.check([*ipt, "-F", PARTITION_CHAIN])
        shell.check([*ipt, "-X", PARTITION_CHAIN])


def is_partitioned(host: HostSpec) -> bool:
    if host.netns not in netns_list():
        return False
    return shell.run(_ns(host, "iptables", "-w", "5", "-C", "INPUT", "-j", PARTITION_CHAIN)).ok
