"""The cluster's declared state: what the inventory deploys on the server, over OpenPBS's defaults.

This, not whatever the server holds when a session starts, is the suites' baseline
(pbs_harness.suite.drift compares the live server with it and repairs the difference):

- server attributes: the pristine server's attributes (as `pbs_server -t create` made them), which
  role openpbs_server records on its first run (`openpbs_server_baseline_file`, by default
  PBS_HOME/server_priv/pbs_harness_baseline.json), with the inventory's `openpbs_server_attributes`
  over them (null = unset); an attribute in neither is unset;
- queues: `openpbs_server_queues` (the role's default: workq, an enabled and started execution queue);
- vnodes: online, no priority or comment, and the inventory's custom resources
  (`openpbs_server_node_attributes`, `openpbs_mom_vnode_layouts`) and no others;
- site hooks: `openpbs_hooks_list` (attributes, body and config from the hook sources) and the
  hooks PBS installs itself (`openpbs_hooks_keep`); no other.

Mom configs are not declared here: the role renders them from a template; pbs_harness.pbs.moms
saves a host's config before the harness first changes it, and the baseline puts that copy back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pbs_harness.common import project

# roles/openpbs_server/defaults/main.yml: openpbs_server_baseline_file, openpbs_server_queues.
PRISTINE_RECORD_VAR = "openpbs_server_baseline_file"
PRISTINE_RECORD = "server_priv/pbs_harness_baseline.json"  # under PBS_HOME
DEFAULT_QUEUES: dict[str, dict[str, Any]] = {"workq": {"queue_type": "Execution", "enabled": True, "started": True}}
# roles/openpbs_hooks/defaults/main.yml: openpbs_hooks_keep, openpbs_hooks_src_dir.
DEFAULT_KEPT_HOOKS = ("pbs_cgroups",)
HOOK_ATTRIBUTES = {"events": "event", "order": "order", "alarm": "alarm", "enabled": "enabled"}

_TEMPLATED = re.compile(r"\{\{.*?\}\}")


class NotDeclared(Exception):
    """The declared state cannot be read (no record of the pristine server): the message says why and what to do."""


@dataclass(frozen=True)
class DeclaredHook:
    """A site hook as the inventory deploys it: attributes as `qmgr list hook` names them, and the
    text of its body and config (None: not known here, e.g. a source directory that is not on this machine)."""

    attrs: dict[str, Any]
    body: str | None = None
    config: str | None = None


@dataclass(frozen=True)
class Declared:
    server: dict[str, Any]
    queues: dict[str, dict[str, Any]]
    # vnode -> {resource: value} of custom resources the inventory gives it (resources_available.NAME)
    node_resources: dict[str, dict[str, Any]]
    hooks: dict[str, DeclaredHook]
    kept_hooks: frozenset[str] = field(default_factory=frozenset)
    pristine_record: str = ""  # where the pristine server's attributes were read (for messages)
    # Server attributes whose inventory value is a Jinja template (`ansible-inventory --list` does not
    # render them): not compared, their live value is left alone.
    templated: frozenset[str] = field(default_factory=frozenset)


def server_attributes(pristine: Mapping[str, Any], inventory: Mapping[str, Any]) -> dict[str, Any]:
    """The pristine server's attributes with the inventory's over them (None unsets)."""
    out = dict(pristine)
    for name, value in inventory.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def node_resources(
    server_vars: Mapping[str, Any], host_vars: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """{vnode: {resource: value}} the inventory gives vnodes: the server's openpbs_server_node_attributes
    (resources_available.NAME) and each mom's openpbs_mom_vnode_layouts (natural vnode, HOST[n] vnodes)."""
    out: dict[str, dict[str, Any]] = {}
    for node, attrs in (server_vars.get("openpbs_server_node_attributes") or {}).items():
        for name, value in (attrs or {}).items():
            if name.startswith("resources_available.") and value is not None:
                out.setdefault(node, {})[name.removeprefix("resources_available.")] = value
    for host, hvars in host_vars.items():
        layout = (hvars.get("openpbs_mom_vnode_layouts") or {}).get(host) or {}
        for node, attrs in [(host, layout.get("natural") or {}), *(layout.get("vnodes") or {}).items()]:
            for name, value in (attrs or {}).items():
                if value is not None:
                    out.setdefault(node, {})[name.removeprefix("resources_available.")] = value
    return out


def hook_sources(server_vars: Mapping[str, Any]) -> Path | None:
    """The controller directory of the hook sources (openpbs_hooks_src_dir), or None when it is not here."""
    given = str(server_vars.get("openpbs_hooks_src_dir") or "{{ playbook_dir }}/../hooks")
    values = {"inventory_dir": str(server_vars.get("inventory_dir", "")), "playbook_dir": "playbooks"}
    rendered = _TEMPLATED.sub(lambda m: values.get(m.group(0).strip("{} "), m.group(0)), given)
    if _TEMPLATED.search(rendered):
        return None
    path = Path(rendered)
    path = path if path.is_absolute() else project.root() / path
    return path.resolve() if path.is_dir() else None


def hooks(server_vars: Mapping[str, Any]) -> dict[str, DeclaredHook]:
    """openpbs_hooks_list as the role deploys it: present hooks with their attributes, body and config."""
    src = hook_sources(server_vars)
    out: dict[str, DeclaredHook] = {}
    for item in server_vars.get("openpbs_hooks_list") or []:
        if item.get("state", "present") != "present":
            continue
        attrs = {qmgr: item[key] for key, qmgr in HOOK_ATTRIBUTES.items() if item.get(key) is not None}
        attrs |= dict(item.get("attributes") or {})

        def text(name: str | None) -> str | None:
            return (src / name).read_text() if src is not None and name and (src / name).is_file() else None

        out[item["name"]] = DeclaredHook(attrs, text(item.get("file")), text(item.get("config")))
    return out


def pristine_record_path(server_vars: Mapping[str, Any], pbs_home: Path) -> str:
    given = server_vars.get(PRISTINE_RECORD_VAR)
    if given and not _TEMPLATED.search(str(given)):
        return str(given)
    return str(pbs_home / PRISTINE_RECORD)


def of_inventory(
    server_vars: Mapping[str, Any], host_vars: Mapping[str, Mapping[str, Any]], pristine: Mapping[str, Any], record: str
) -> Declared:
    given = server_vars.get("openpbs_server_attributes") or {}
    templated = frozenset(name for name, value in given.items() if _TEMPLATED.search(str(value)))
    return Declared(
        server=server_attributes(pristine, {k: v for k, v in given.items() if k not in templated}),
        templated=templated,
        queues={
            name: dict(attrs or {})
            for name, attrs in (server_vars.get("openpbs_server_queues") or DEFAULT_QUEUES).items()
            if attrs is not None
        },
        node_resources=node_resources(server_vars, host_vars),
        hooks=hooks(server_vars),
        kept_hooks=frozenset(server_vars.get("openpbs_hooks_keep") or DEFAULT_KEPT_HOOKS),
        pristine_record=record,
    )


def load(pbs) -> Declared:
    """The declared state of the cluster `pbs` talks to: its inventory, and the pristine server's
    attributes read from the server host. Raises NotDeclared when that record is missing or unreadable."""
    inv = pbs.cluster.inventory
    server_vars = inv.server.vars
    record = pristine_record_path(server_vars, pbs.cluster.pbs_home)
    res = pbs.cluster.server.run(["cat", record])
    if not res.ok:
        raise NotDeclared(
            f"no record of the pristine server's attributes at {record} on {inv.server.name} "
            f"({res.stderr.strip() or 'not readable'}): role openpbs_server writes it on its first run; "
            "deploy the cluster with `pbs-harness deploy` (or `pbs-harness up`) first"
        )
    try:
        pristine = json.loads(res.stdout)
    except ValueError as exc:
        raise NotDeclared(f"{record} on {inv.server.name} is not JSON ({exc}): deploy the cluster again") from exc
    return of_inventory(server_vars, {h.name: h.vars for h in inv.moms}, pristine, record)
