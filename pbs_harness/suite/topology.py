"""The cluster under test by role, not by name: which host plays which part in a scenario.

Roles come from the inventory, the single source of truth:
  server host        the one host of group pbs_server (also a mom when it is in pbs_moms)
  execution hosts    group pbs_moms, in inventory order
  multi-vnode host   a mom with a vnode layout (openpbs_mom_vnode_layouts, deployed by openpbs_mom)
  resource hosts     moms given resources_available.X (openpbs_server_node_attributes)
  test users         openpbs_common_users; operator and manager are the ones the server attributes
                     `operators`/`managers` name, owner and other the first two of the rest
Sizes (ncpus, mem) come from the server's own view of the vnodes (`pbsnodes -av -F json`), so a
test asks for "two plain hosts with 2 cpus" and gets whatever hosts of the cluster fit.

A need the cluster cannot meet skips the test with the need and the inventory variable that
would meet it; an inventory that disagrees with the deployed server is an error (deploy again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from pbs_harness.common.errors import PreconditionError
from pbs_harness.pbs.parsers import size_kb
from pbs_harness.remote.inventory import Inventory

LAYOUTS_VAR = "openpbs_mom_vnode_layouts"
NODE_ATTRS_VAR = "openpbs_server_node_attributes"
USERS_VAR = "openpbs_common_users"


@dataclass(frozen=True)
class ExecHost:
    """One execution host: its natural vnode (named like the host) and any further vnodes."""

    name: str
    vnodes: tuple[str, ...] = ()  # vnodes besides the natural one, sorted
    ncpus: int = 0  # resources_available.ncpus of the natural vnode
    mem_kb: int | None = None  # resources_available.mem of the natural vnode, when set
    resources: Mapping[str, Any] = field(default_factory=dict)  # resources_available of the natural vnode
    custom: Mapping[str, Any] = field(default_factory=dict)  # resources the inventory gives it (node attributes)

    @property
    def all_vnodes(self) -> tuple[str, ...]:
        """Natural vnode first, then the others."""
        return (self.name, *self.vnodes)

    @property
    def is_multi_vnode(self) -> bool:
        return bool(self.vnodes)


@dataclass(frozen=True)
class Users:
    """The unprivileged test accounts by part: job owner, someone else, PBS operator, PBS manager."""

    owner: str
    other: str
    operator: str | None
    manager: str | None

    def account(self, role: str) -> str | None:
        """The account playing `role` (owner, other, operator, manager); None for "root" (a command
        given no user runs as root). Skips when the inventory names no PBS operator or manager."""
        if role == "root":
            return None
        if role not in ("owner", "other", "operator", "manager"):
            raise ValueError(f"unknown user role {role!r}")
        name: str | None = getattr(self, role)
        if name is None:
            pytest.skip(
                f"needs a PBS {role} among the test accounts: list one in {USERS_VAR} and name it in "
                f"openpbs_server_attributes.{role}s (as inventory/local/group_vars/pbs_server/openpbs_server.yml does)"
            )
        return name


@dataclass(frozen=True)
class Topology:
    server: ExecHost
    moms: tuple[ExecHost, ...]  # every execution host, inventory order (the server host too)
    users: Users
    vnode_resources: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # vnode -> resources_available

    # --- roles --------------------------------------------------------------------------------

    @property
    def plain(self) -> tuple[ExecHost, ...]:
        """Single-vnode execution hosts other than the server host; hosts offering a custom resource
        (set through the inventory) last, so generic picks leave them for the tests that need them."""
        hosts = [m for m in self.moms if m.name != self.server.name and not m.is_multi_vnode]
        return tuple(sorted(hosts, key=lambda h: bool(h.custom)))

    @property
    def multi(self) -> tuple[ExecHost, ...]:
        return tuple(m for m in self.moms if m.is_multi_vnode)

    def host(self, name: str) -> ExecHost:
        for mom in self.moms:
            if mom.name == name:
                return mom
        raise KeyError(name)

    # --- needs: a test asks, the cluster answers or the test skips ---------------------------

    def plain_hosts(self, n: int, *, ncpus: int | None = None, exclude: Iterable[str] = ()) -> list[str]:
        """`n` single-vnode execution hosts besides the server host (with exactly `ncpus` cpus when given)."""
        excluded = set(exclude)
        fit = [h.name for h in self.plain if h.name not in excluded and (ncpus is None or h.ncpus == ncpus)]
        if len(fit) < n:
            cpus = f" with ncpus={ncpus}" if ncpus is not None else ""
            pytest.skip(
                f"needs {n} single-vnode execution hosts{cpus} besides the server host, the cluster has "
                f"{len(fit)} ({', '.join(fit) or 'none'}): add hosts to group pbs_moms"
                + (f" (or give hosts resources_available.ncpus: {ncpus} through {NODE_ATTRS_VAR})" if ncpus else "")
            )
        return fit[:n]

    def multi_vnode_host(self, min_vnodes: int = 1) -> ExecHost:
        """A host with at least `min_vnodes` vnodes besides its natural one."""
        for host in self.multi:
            if len(host.vnodes) >= min_vnodes:
                return host
        pytest.skip(
            f"needs an execution host with at least {min_vnodes} vnodes besides its natural one, the cluster "
            f"has {', '.join(f'{h.name} ({len(h.vnodes)})' for h in self.multi) or 'none'}: define one with "
            f"{LAYOUTS_VAR} (see inventory/local/group_vars/pbs_moms/openpbs_mom.yml)"
        )

    def hosts_with(self, resource: str, *, at_least: int = 1) -> list[str]:
        """Execution hosts whose natural vnode offers `resource` (resources_available, set by the inventory)."""
        found = [m.name for m in self.moms if resource in m.custom]
        if len(found) < at_least:
            pytest.skip(
                f"needs {at_least} host(s) offering the custom resource {resource}, the cluster has "
                f"{len(found)}: set {NODE_ATTRS_VAR}: {{HOST: {{resources_available.{resource}: 1}}}} "
                "(and define the resource in openpbs_server_custom_resources)"
            )
        return found

    def vnodes_with(self, resource: str) -> list[str]:
        """Every vnode (natural or not) whose resources_available offers `resource` (server's view)."""
        return sorted(v for v, res in self.vnode_resources.items() if res.get(resource) not in (None, "", 0, "0"))

    def describe(self) -> str:
        """One line for logs and reports: the parts each host plays."""
        parts = [f"server {self.server.name}"]
        parts.append("plain " + (", ".join(h.name for h in self.plain) or "none"))
        parts.append("multi-vnode " + (", ".join(f"{h.name} (+{len(h.vnodes)})" for h in self.multi) or "none"))
        custom = {r for h in self.moms for r in h.custom}
        for resource in sorted(custom):
            parts.append(f"{resource} on {', '.join(self.hosts_with(resource))}")
        return "; ".join(parts)


# --- building it ------------------------------------------------------------------------------


def _host_vars(inv: Inventory, host: str, name: str, default: Any) -> Any:
    """A variable as the host sees it (group_vars of its groups), else as the server host sees it."""
    if host in inv.hosts and name in inv.hosts[host].vars:
        return inv.hosts[host].vars[name]
    return inv.var(name, default)


def _users(inv: Inventory) -> Users:
    names = [u["name"] for u in inv.var(USERS_VAR, []) if isinstance(u, Mapping) and "name" in u]
    attrs = inv.var("openpbs_server_attributes", {}) or {}

    def named_in(attr: str) -> str | None:
        for entry in attrs.get(attr) or []:
            user = str(entry).split("@", 1)[0]
            if user in names:
                return user
        return None

    operator, manager = named_in("operators"), named_in("managers")
    plain = [n for n in names if n not in (operator, manager)]
    if len(plain) < 2:
        raise PreconditionError(
            f"inventory {inv.path}: {USERS_VAR} needs two unprivileged test accounts (job owner and someone "
            f"else) besides the PBS operator/manager, it has {plain or 'none'}",
            f"list at least two accounts under {USERS_VAR} (see inventory/local/group_vars/all/openpbs_common.yml)",
        )
    return Users(owner=plain[0], other=plain[1], operator=operator, manager=manager)


def _natural(node: Mapping[str, Any] | None) -> tuple[int, int | None, dict[str, Any]]:
    avail = dict((node or {}).get("resources_available", {}))
    mem = avail.get("mem")
    return int(avail.get("ncpus", 0) or 0), (size_kb(mem) if mem else None), avail


def build(inv: Inventory, nodes: Mapping[str, Mapping[str, Any]]) -> Topology:
    """The topology from the inventory's roles and the server's vnodes (`pbsnodes -av -F json` "nodes")."""
    node_attrs = inv.var(NODE_ATTRS_VAR, {}) or {}
    moms = []
    by_host: dict[str, list[str]] = {}
    for vnode, attrs in nodes.items():
        by_host.setdefault(str(attrs.get("resources_available", {}).get("host", vnode)), []).append(vnode)
    problems = []
    for mom in inv.moms:
        layout = (_host_vars(inv, mom.name, LAYOUTS_VAR, {}) or {}).get(mom.name) or {}
        wanted = sorted((layout.get("vnodes") or {}).keys())
        have = sorted(v for v in by_host.get(mom.name, []) if v != mom.name)
        if mom.name not in nodes:
            problems.append(f"{mom.name} is in pbs_moms but not a node of the server")
        elif wanted != have:
            problems.append(f"{mom.name}: inventory layout vnodes {wanted or 'none'}, server has {have or 'none'}")
        custom = {
            key.removeprefix("resources_available."): value
            for key, value in (node_attrs.get(mom.name) or {}).items()
            if key.startswith("resources_available.") and key != "resources_available.ncpus"
        }
        ncpus, mem_kb, avail = _natural(nodes.get(mom.name))
        moms.append(ExecHost(mom.name, tuple(have), ncpus, mem_kb, avail, custom))
    if problems:
        raise PreconditionError(
            "the inventory and the deployed cluster disagree: " + "; ".join(problems),
            "deploy the inventory again (pbs-harness deploy -i INVENTORY), then rerun",
        )
    server_name = inv.server.name
    server = next((m for m in moms if m.name == server_name), None)
    if server is None:
        ncpus, mem_kb, avail = _natural(nodes.get(server_name))
        server = ExecHost(server_name, (), ncpus, mem_kb, avail)
    return Topology(
        server=server,
        moms=tuple(moms),
        users=_users(inv),
        vnode_resources={v: dict(a.get("resources_available", {})) for v, a in nodes.items()},
    )
