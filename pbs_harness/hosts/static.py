"""Static hosts: machines someone else runs (cloud VMs, lab machines), as a plain inventory lists them.

The provider of every inventory no other provider recognises (pbs_harness.hosts.providers). The harness
neither brings these hosts up nor heals them from outside (faults on them are healed over SSH by the
nemesis), so its advice is to check the hosts and the inventory, never `pbs-harness up`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


class StaticHosts:
    brings_up = False
    shares_openpbs = False

    def owns_path(self, path: Path) -> bool:
        return True  # tried last: whatever inventory no other provider recognises

    def owns_hosts(self, server_vars: Mapping[str, Any]) -> bool:
        return True

    def check_listable(self, path: Path) -> None:
        pass  # a plain inventory lists its hosts whether or not they are running

    def check_network(self, server_vars: Mapping[str, Any]) -> None:
        pass  # their addresses are the inventory's: the probe itself says whether they answer

    def unreachable_hint(self, inventory_path: Path) -> str:
        return (
            f"check that these hosts are running and that ansible_host/ansible_port in {inventory_path} are right "
            "(firewall or security group open for SSH from this machine)"
        )

    def heal(self, hosts: Mapping[str, Mapping[str, Any]]) -> None:
        pass  # no fault acts on them from outside: the nemesis heals its SSH-side faults itself

    def brought_up(self) -> None:
        return None  # the harness did not bring them up: nobody's record to respect

    def cluster_name(self, server_vars: Mapping[str, Any]) -> None:
        return None

    def shared_dir(self, server_vars: Mapping[str, Any]) -> None:
        return None  # their file systems are their own

    def host_ssh_config(self, server_vars: Mapping[str, Any]) -> None:
        return None  # root SSH among them is theirs to allow (PTL's own precondition)


STATIC = StaticHosts()
