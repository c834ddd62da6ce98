"""The cluster under test: inventory hosts with live SSH connections and PBS paths."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pbs_harness.remote.inventory import Inventory
from pbs_harness.remote.transport import RemoteHost


@dataclass
class Cluster:
    """Hosts by name, the server host, the moms, and where PBS lives on them."""

    inventory: Inventory
    hosts: dict[str, RemoteHost] = field(default_factory=dict)

    @classmethod
    def from_inventory(cls, inv: Inventory) -> Cluster:
        return cls(inv, {name: RemoteHost(h.ssh_target()) for name, h in inv.hosts.items()})

    @property
    def server(self) -> RemoteHost:
        return self.hosts[self.inventory.server.name]

    @property
    def moms(self) -> list[RemoteHost]:
        return [self.hosts[h.name] for h in self.inventory.moms]

    @property
    def client(self) -> RemoteHost:
        return self.hosts[self.inventory.clients[0].name]

    @property
    def prefix(self) -> Path:
        return self.inventory.openpbs_prefix

    @property
    def pbs_home(self) -> Path:
        return Path(str(self.inventory.var("openpbs_server_home", "/var/spool/pbs")))

    def bin(self, name: str) -> str:
        return str(self.prefix / "bin" / name)

    def users(self) -> list[str]:
        return [u["name"] for u in self.inventory.var("openpbs_common_users", [])]

    def close(self) -> None:
        for host in self.hosts.values():
            host.close()

    def __iter__(self) -> Iterator[RemoteHost]:
        return iter(self.hosts.values())
