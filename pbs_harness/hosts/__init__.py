"""The registry of host kinds: one table, name -> "module.Class" (as testinfra's backend/__init__.py).

Every host names its kind in one inventory variable, KIND_VAR. The kind's class (a
pbs_harness.hosts.base.HostKind) is imported by its dotted path only when asked for, so this module
imports no kind and no kind imports it back: no import cycle, whatever a kind needs.

Adding a kind of host is one module with one HostKind subclass, and one line in KINDS.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pbs_harness.hosts.base import KIND_VAR, ClusterConnections, HostKind, HostVars

# A host without KIND_VAR: reached over SSH only.
DEFAULT_KIND = "ssh"

KINDS: dict[str, str] = {
    "namespace": "pbs_harness.hosts.namespace.NamespaceHost",
    "system": "pbs_harness.hosts.system.SystemHost",
    "ssh": "pbs_harness.hosts.ssh.SshHost",
    "aws": "pbs_harness.hosts.aws.AwsHost",
}

# Inventories written before KIND_VAR said "local host" and "flavour" in two variables; read them too,
# so a cluster brought up by an older checkout keeps its kind.
_LEGACY_LOCAL_VAR = "local_cluster_host"
_LEGACY_FLAVOUR_VAR = "local_cluster_flavour"


class UnknownKind(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"unknown kind of host {name!r} (known: {', '.join(sorted(KINDS))}); set {KIND_VAR} to one of them"
        )
        self.name = name


def names() -> tuple[str, ...]:
    return tuple(KINDS)


def get_kind_class(name: str) -> type[HostKind]:
    """The class of the kind `name`, imported by its dotted path."""
    try:
        dotted = KINDS[name]
    except KeyError:
        raise UnknownKind(name) from None
    module, _, cls = dotted.rpartition(".")
    return getattr(importlib.import_module(module), cls)


def kind_name(host_vars: HostVars) -> str:
    """The kind a host's inventory variables name."""
    name = host_vars.get(KIND_VAR)
    if name:
        return str(name)
    if host_vars.get(_LEGACY_LOCAL_VAR):
        return str(host_vars.get(_LEGACY_FLAVOUR_VAR) or "namespace")
    return DEFAULT_KIND


def kind_of(host_vars: HostVars) -> type[HostKind]:
    """The class of a host's kind, from its inventory variables."""
    return get_kind_class(kind_name(host_vars))


def kind_of_path(path: Path) -> type[HostKind]:
    """The kind of the hosts the inventory at `path` lists, known before it is listed: the first kind
    that claims it (e.g. the local inventory script), else the default kind."""
    for name in KINDS:
        kind = get_kind_class(name)
        if kind.claims_inventory(path):
            return kind
    return get_kind_class(DEFAULT_KIND)


def undeclared(hosts_vars: Mapping[str, HostVars], faults: tuple[str, ...] | list[str]) -> str | None:
    """Why a test needing these faults cannot run on these hosts (their kinds' FAULTS lack one), or None.
    Capabilities, never kind names, decide (a new kind that declares the fault runs the test)."""
    for name, host_vars in sorted(hosts_vars.items()):
        kind = kind_of(host_vars)
        missing = [f for f in faults if f not in kind.FAULTS]
        if missing:
            of = kind_name(host_vars)
            return f"needs the fault(s) {', '.join(missing)}, which host {name}'s kind ({of}) does not declare"
    return None


def host(name: str, host_vars: Mapping[str, Any], cluster: ClusterConnections | None = None) -> HostKind:
    """One host as its kind models it."""
    return kind_of(host_vars)(name, host_vars, cluster)


__all__ = [
    "KINDS",
    "KIND_VAR",
    "HostKind",
    "UnknownKind",
    "get_kind_class",
    "host",
    "kind_name",
    "kind_of",
    "kind_of_path",
    "names",
    "undeclared",
]
