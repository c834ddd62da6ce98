"""`--write-inventory PATH`: the running local cluster as a plain static YAML inventory.

The layout is inventory/cloud.example's (hosts.yml + group_vars/<group>/<role>.yml), so the
cluster is driven exactly as VMs are: ansible_host, ansible_user (the login user, with become),
the harness key, and host keys pinned in PATH/.ssh/known_hosts with StrictHostKeyChecking=yes. The
PBS settings are inventory/local's group_vars with the hook sources pointing at this checkout, plus
group_vars/<group>/topology.yml: the parts the local inventory script gives by position (the
multi-vnode host's layout, the localssd host; localcluster/roles.py). Two variables keep telling
the harness the hosts are local-cluster hosts and which cluster they belong to (its state
directory), for the controller-side faults.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import yaml

from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import cluster_kind, roles, sshkeys, state
from pbs_harness.localcluster import inventory as local_inventory

MARK = "# Written by pbs-harness (--write-inventory)"
_INVENTORY_ROOT_RE = re.compile(r"\{\{\s*inventory_dir\s*\}\}/\.\./\.\.")


def check_target(path: Path) -> None:
    """PATH must be new, empty, or an inventory written here before: never overwrite anything else; a new
    PATH must be creatable (its nearest existing parent a writable directory), known before the cluster is up."""
    if not path.exists():
        _check_creatable(path)
        return
    if not path.is_dir():
        raise PreconditionError(f"--write-inventory {path}: exists and is not a directory", "give a new directory path")
    hosts = path / "hosts.yml"
    ours = hosts.exists() and hosts.read_text().startswith(MARK)
    if any(path.iterdir()) and not ours:
        raise PreconditionError(
            f"--write-inventory {path}: the directory holds something other than an inventory pbs-harness wrote",
            "give a new or empty directory (nothing there is overwritten)",
        )


def _check_creatable(path: Path) -> None:
    hint = "give a new directory path under a directory this user can write, e.g. /tmp/my-inventory"
    existing = next(p for p in path.parents if p.exists())
    if not existing.is_dir():
        raise PreconditionError(f"--write-inventory {path}: cannot be created: {existing} is not a directory", hint)
    read_only = bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
    if read_only or not os.access(existing, os.W_OK | os.X_OK):
        why = "is on a read-only file system" if read_only else "is not writable"
        raise PreconditionError(f"--write-inventory {path}: cannot be created: {existing} {why}", hint)


def adapt(text: str, project_root: Path) -> str:
    """inventory/local settings for a written inventory: hook sources from this checkout."""
    return _INVENTORY_ROOT_RE.sub(str(project_root), text)


def _hosts_yml(st: state.ClusterState, root: Path | None, known_hosts: Path) -> str:
    spec = st.spec
    ip = {h.name: h.ip for h in spec.hosts}
    # Per host, so that they outrank group_vars/ (the kind's inventory_vars: hosts/namespace.py, hosts/system.py).
    flavour = cluster_kind.of(st.spec).inventory_vars(st)
    children = {
        group: {"hosts": {name: {"ansible_host": ip[name], **flavour} for name in members}}
        for group, members in local_inventory.groups(spec).items()
    }
    data = {"all": {"vars": local_inventory.connection_vars(spec, root, known_hosts), "children": children}}
    header = (
        f"{MARK} for the local cluster in {state.cluster_id(root)}:\n"
        f"# {cluster_kind.describe(spec)}. Written again by the next `up --write-inventory`; stale after `down`.\n"
        "# all.vars: how the hosts are reached (host keys pinned in .ssh/known_hosts beside this file) and\n"
        "# which local cluster they are (controller-side faults act on it). PBS settings: group_vars/.\n"
        "---\n"
    )
    return header + yaml.safe_dump(data, sort_keys=False, width=1000)


def write(path: Path, root: Path | None, project_root: Path) -> Path:
    """Write the cluster of state directory `root` as an inventory at `path`; returns hosts.yml."""
    path = Path(path).resolve()
    check_target(path)
    st = state.load(root)
    if st is None:
        raise PreconditionError(
            f"no local cluster in {state.state_dir(root)} to write an inventory of", "bring it up first"
        )
    spec = st.spec
    source = project_root / "inventory" / "local" / "group_vars"
    path.mkdir(parents=True, exist_ok=True)
    # A dot-folder: Ansible reads every other file of an inventory directory as an inventory source.
    known_hosts = path / ".ssh" / "known_hosts"
    known_hosts.parent.mkdir(mode=0o700, exist_ok=True)
    shutil.copyfile(sshkeys.known_hosts(root), known_hosts)
    shutil.rmtree(path / "group_vars", ignore_errors=True)
    for src in sorted(source.rglob("*.yml")):
        rel = src.relative_to(source)
        text = adapt(src.read_text(), project_root)
        note = f"# Adapted by pbs-harness from inventory/local/group_vars/{rel} for {cluster_kind.describe(spec)}.\n"
        text = text.replace("---\n", "---\n" + note, 1) if text.startswith("---\n") else note + text
        yaml.safe_load(text)  # adapting must keep it valid YAML
        dest = path / "group_vars" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)
    for group, role_vars in roles.group_vars([h.name for h in spec.hosts]).items():
        header = "---\n# Written by pbs-harness: the part each host plays (pbs_harness/localcluster/roles.py).\n"
        (path / "group_vars" / group / "topology.yml").write_text(header + yaml.safe_dump(role_vars, sort_keys=False))
    hosts = path / "hosts.yml"
    hosts.write_text(_hosts_yml(st, root, known_hosts))
    return hosts
