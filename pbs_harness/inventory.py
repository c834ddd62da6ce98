"""The cluster as the Ansible inventory describes it (`ansible-inventory --list`).

The inventory is the single source of truth: host addresses, SSH settings, roles (server,
moms, clients) and PBS variables all come from it, for deploy, verify and the test suites.
"""

from __future__ import annotations

import json
import shlex
import shutil
import socket
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pbs_harness import shell
from pbs_harness.errors import PreconditionError, UnreachableError
from pbs_harness.transport import SSHTarget

INSTALL_METHODS = ("existing", "packages")
SERVER_GROUP = "pbs_server"
MOM_GROUP = "pbs_moms"
CLIENT_GROUP = "pbs_clients"


@dataclass(frozen=True)
class InventoryHost:
    name: str
    vars: dict[str, Any]
    groups: frozenset[str]

    @property
    def address(self) -> str:
        return str(self.vars.get("ansible_host", self.name))

    @property
    def port(self) -> int:
        return int(self.vars.get("ansible_port", 22))

    def ssh_target(self) -> SSHTarget:
        opts = _ssh_options(
            f"{self.vars.get('ansible_ssh_common_args', '')} {self.vars.get('ansible_ssh_extra_args', '')}"
        )
        strict = opts.get("stricthostkeychecking", "yes").lower() not in ("no", "off")
        key = self.vars.get("ansible_ssh_private_key_file") or self.vars.get("ansible_private_key_file")
        return SSHTarget(
            name=self.name,
            address=self.address,
            user=str(self.vars.get("ansible_user", "root")),
            port=self.port,
            key_file=str(Path(key).expanduser()) if key else None,
            known_hosts=opts.get("userknownhostsfile"),
            strict_host_keys=strict,
        )


@dataclass(frozen=True)
class Inventory:
    path: Path
    hosts: dict[str, InventoryHost]
    groups: dict[str, list[str]] = field(default_factory=dict)

    @property
    def server(self) -> InventoryHost:
        return self.hosts[self.groups[SERVER_GROUP][0]]

    @property
    def moms(self) -> list[InventoryHost]:
        return [self.hosts[n] for n in self.groups.get(MOM_GROUP, [])]

    @property
    def clients(self) -> list[InventoryHost]:
        return [self.hosts[n] for n in self.groups.get(CLIENT_GROUP, [])] or [self.server]

    def var(self, name: str, default: Any = None) -> Any:
        return self.server.vars.get(name, default)

    @property
    def is_local_cluster(self) -> bool:
        return bool(self.server.vars.get("local_cluster_host"))


def _ssh_options(args: str) -> dict[str, str]:
    """`-o Key=Value` pairs of an ssh argument string, keys lower-cased."""
    opts: dict[str, str] = {}
    words = shlex.split(args)
    for i, word in enumerate(words):
        item = None
        if word == "-o" and i + 1 < len(words):
            item = words[i + 1]
        elif word.startswith("-o") and len(word) > 2:
            item = word[2:]
        if item and "=" in item:
            key, value = item.split("=", 1)
            opts[key.strip().lower()] = value.strip()
    return opts


def _ansible_inventory() -> str:
    exe = Path(sys.executable).parent / "ansible-inventory"
    return str(exe) if exe.exists() else (shutil.which("ansible-inventory") or "ansible-inventory")


def parse(data: dict[str, Any], path: Path) -> Inventory:
    """Build the model from `ansible-inventory --list` JSON and validate its shape."""
    hostvars: dict[str, dict[str, Any]] = data.get("_meta", {}).get("hostvars", {})
    groups: dict[str, list[str]] = {}

    def walk(group: str, seen: set[str]) -> list[str]:
        if group in seen:
            return []
        seen.add(group)
        entry = data.get(group, {})
        members = list(entry.get("hosts", []))
        for child in entry.get("children", []):
            members += [h for h in walk(child, seen) if h not in members]
        return members

    for group in data:
        if group != "_meta":
            groups[group] = walk(group, set())
    names = set(hostvars) | {h for members in groups.values() for h in members}
    hosts = {
        name: InventoryHost(
            name,
            hostvars.get(name, {}),
            frozenset(g for g, members in groups.items() if name in members and g != "all"),
        )
        for name in sorted(names)
    }
    inv = Inventory(path, hosts, groups)
    validate(inv)
    return inv


def validate(inv: Inventory) -> None:
    servers = inv.groups.get(SERVER_GROUP, [])
    if len(servers) != 1:
        found = ", ".join(servers) or "none"
        raise PreconditionError(
            f"inventory {inv.path}: group {SERVER_GROUP} must hold exactly one host (found: {found})",
            f"put the PBS server host, and only it, under `{SERVER_GROUP}:` (see inventory/cloud.example/)",
        )
    if not inv.groups.get(MOM_GROUP):
        raise PreconditionError(
            f"inventory {inv.path}: group {MOM_GROUP} has no hosts",
            f"list every execution host (the server host too, if it runs jobs) under `{MOM_GROUP}:`",
        )
    method = inv.var("openpbs_install_method", "existing")
    if method not in INSTALL_METHODS:
        raise PreconditionError(
            f"inventory {inv.path}: unknown openpbs_install_method {method!r}",
            "set openpbs_install_method to 'existing' (OpenPBS already installed under the prefix) "
            "or 'packages' (official .deb/.rpm from the release zip openpbs_install_packages_archive, "
            "or loose files from openpbs_install_packages_url or openpbs_install_packages_dir)",
        )


def _refuse_local_cluster_down(path: Path) -> None:
    """The local inventory without a running cluster: stop before anything connects anywhere."""
    script = path / "cluster.py" if path.is_dir() else path
    if script.name == "cluster.py" and script.exists():
        from pbs_harness.localcluster import state

        if state.load() is None:
            raise PreconditionError(
                f"the local cluster is not up (no state in {state.state_dir()})",
                "bring it up first: pbs-harness up (or pbs-harness cluster up, then deploy)",
            )


def load(path: Path) -> Inventory:
    _refuse_local_cluster_down(path)
    res = shell.run([_ansible_inventory(), "-i", str(path), "--list"], timeout=120)
    if not res.ok:
        raise PreconditionError(
            f"ansible-inventory cannot read {path}: {res.stderr.strip()[-600:]}",
            "fix the inventory syntax (try `ansible-inventory -i PATH --graph`)",
        )
    return parse(json.loads(res.stdout), path)


def check_reachable(inv: Inventory, timeout: float = 10) -> None:
    """Every host's SSH port answers within `timeout` seconds, or an error naming the hosts."""

    if inv.is_local_cluster:
        # Local addresses are only reachable over our bridge; without it they would route off-box.
        from pbs_harness.localcluster import network, state

        st = state.load()
        if st is None or st.spec.bridge not in network.link_names():
            raise PreconditionError(
                "the local cluster is not up (its bridge is missing)", "bring it up first: pbs-harness up"
            )

    def probe(host: InventoryHost) -> str | None:
        try:
            with socket.create_connection((host.address, host.port), timeout=timeout):
                return None
        except OSError as exc:
            return f"{host.name} ({host.address}:{host.port}): {exc}"

    with ThreadPoolExecutor(max_workers=min(32, len(inv.hosts) or 1)) as pool:
        failures = [f for f in pool.map(probe, inv.hosts.values()) if f]
    if failures:
        raise UnreachableError(
            f"unreachable within {timeout:.0f}s: " + "; ".join(failures),
            "start the hosts (local cluster: pbs-harness cluster up) or fix ansible_host/ansible_port",
        )


def check_openpbs_local(inv: Inventory) -> None:
    """On the local cluster /opt is shared with this machine: OpenPBS must be installed here."""
    if not inv.is_local_cluster or inv.var("openpbs_install_method", "existing") != "existing":
        return
    prefix = Path(str(inv.var("openpbs_install_prefix", inv.var("openpbs_prefix", "/opt/pbs"))))
    if not (prefix / "bin" / "qstat").exists() or not Path("/etc/init.d/pbs").exists():
        raise PreconditionError(
            f"OpenPBS is not installed under {prefix} on this machine (the local cluster shares it)",
            "install OpenPBS on this machine first and keep openpbs_install_method=existing: the server package "
            "of the official release zip (apt-get install ./openpbs-server_<version>-1_amd64.deb, or dnf install "
            "./openpbs-server-<version>-0.x86_64.rpm), or the INSTALL steps of the OpenPBS source + pbs_postinstall",
        )
