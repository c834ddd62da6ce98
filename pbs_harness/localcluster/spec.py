"""What a local cluster looks like: host names, addresses, interface names.

Everything here is pure computation (no system calls) so it is unit-tested directly.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from pbs_harness.common.errors import PreconditionError

# Letters b..z name members 2..26; the bound is what a 2-core machine could ever use, and more. Here, not in
# fleet.py (which needs yaml): `up`'s parser checks --clusters with it, standard library only (cli/judge.py).
MAX_CLUSTERS = 12

DEFAULT_SUBNET = "10.71.0.0/24"
DEFAULT_HOSTS = 6
MAX_HOSTS = 32
DEFAULT_PREFIX = "pbsh"
# Kinds of local host (pbs_harness.hosts.namespace, pbs_harness.hosts.system): namespaces sharing this
# machine's system, or systems of their own under systemd-nspawn, booted from IMAGES.
FLAVOURS = ("namespace", "system")
DEFAULT_FLAVOUR = "namespace"  # of a state record written before flavours existed
# What `up` and `cluster up` make when --flavour is not given: the same as ./acceptance (issue #34; they
# used to differ, and namespace hosts change this machine's /etc/hosts and /etc/passwd).
CLI_DEFAULT_FLAVOUR = "system"
IMAGES = ("debian-12", "debian-11")
DEFAULT_IMAGE = "debian-12"
# The bridge takes .1 (the controller's address on the cluster network); hosts start at .11.
FIRST_HOST_OFFSET = 11
_PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{1,7}$")
# A portable account name (useradd's default NAME_REGEX, shorter).
_USER_RE = re.compile(r"^[a-z_][a-z0-9_-]{0,30}$")
# Linux interface names are at most 15 characters (IFNAMSIZ - 1).
IFNAME_MAX = 15


@dataclass(frozen=True)
class HostSpec:
    """One namespaced host."""

    name: str
    ip: str
    index: int

    @property
    def netns(self) -> str:
        return f"pbsh-{self.name}"

    @property
    def veth_outer(self) -> str:
        # At most 3 + 8 (prefix) + 2 = 13 characters: within IFNAME_MAX, never truncated, so
        # hosts of clusters with different prefixes never share a link name.
        return f"vh-{self.name}"


@dataclass(frozen=True)
class ClusterSpec:
    """The whole local cluster; the first host is the server host (also a mom).

    `login_user`: None means SSH as root (key only); a name means SSH only as that unprivileged
    account, with passwordless sudo inside the hosts (as cloud images are).
    `flavour`: namespace hosts, or system hosts booted from `image` (ignored for namespace hosts).
    """

    subnet: str = DEFAULT_SUBNET
    host_count: int = DEFAULT_HOSTS
    prefix: str = DEFAULT_PREFIX
    login_user: str | None = None
    flavour: str = DEFAULT_FLAVOUR
    image: str = DEFAULT_IMAGE

    def __post_init__(self) -> None:
        validate(self)

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.subnet, strict=True)

    @property
    def bridge(self) -> str:
        # At most 8 + 4 = 12 characters (see veth_outer); unique per prefix.
        return f"{self.prefix}-br0"

    @property
    def ssh_user(self) -> str:
        return self.login_user or "root"

    @property
    def bridge_ip(self) -> str:
        return str(self.network.network_address + 1)

    @property
    def prefixlen(self) -> int:
        return self.network.prefixlen

    @property
    def hosts(self) -> list[HostSpec]:
        base = self.network.network_address + FIRST_HOST_OFFSET
        return [
            HostSpec(name=f"{self.prefix}{i:02d}", ip=str(base + i - 1), index=i) for i in range(1, self.host_count + 1)
        ]

    @property
    def server(self) -> HostSpec:
        return self.hosts[0]

    def host(self, name: str) -> HostSpec:
        for host in self.hosts:
            if host.name == name:
                return host
        known = ", ".join(h.name for h in self.hosts)
        raise PreconditionError(f"no host named {name!r} in the local cluster", f"use one of: {known}")


def validate(spec: ClusterSpec) -> None:
    """Reject a spec that cannot be built, with a message naming the bad value."""
    try:
        net = ipaddress.IPv4Network(spec.subnet, strict=True)
    except ValueError as exc:
        raise PreconditionError(
            f"subnet {spec.subnet!r} is not an IPv4 network: {exc}",
            f"give a private network such as {DEFAULT_SUBNET} (host bits zero)",
        ) from exc
    if not net.is_private:
        raise PreconditionError(
            f"subnet {spec.subnet} is not a private range",
            "the local cluster only uses private addresses (10/8, 172.16/12, 192.168/16)",
        )
    if not 1 <= spec.host_count <= MAX_HOSTS:
        raise PreconditionError(f"--hosts {spec.host_count} is out of range", f"use between 1 and {MAX_HOSTS} hosts")
    if net.num_addresses < FIRST_HOST_OFFSET + spec.host_count + 1:
        raise PreconditionError(
            f"subnet {spec.subnet} is too small for {spec.host_count} hosts",
            "use a /24 or a larger network",
        )
    if not _PREFIX_RE.match(spec.prefix):
        raise PreconditionError(
            f"host name prefix {spec.prefix!r} is not valid",
            "use 2-8 lower-case letters and digits, starting with a letter",
        )
    if spec.flavour not in FLAVOURS:
        raise PreconditionError(
            f"host flavour {spec.flavour!r} is not known", f"use --flavour {' or --flavour '.join(FLAVOURS)}"
        )
    if spec.image not in IMAGES:
        raise PreconditionError(f"image {spec.image!r} is not known", f"use --image {' or --image '.join(IMAGES)}")
    if spec.login_user is not None and (spec.login_user == "root" or not _USER_RE.match(spec.login_user)):
        raise PreconditionError(
            f"login user {spec.login_user!r} is not valid",
            "give an unprivileged account name (lower-case letters, digits, '_', '-'; not root), e.g. --login-user ops",
        )
