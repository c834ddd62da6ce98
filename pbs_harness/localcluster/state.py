"""On-disk state of the local cluster: what was created, so `down` removes exactly that.

Layout under the state directory (default /var/lib/pbs-harness/local, env PBS_HARNESS_STATE_DIR):
  state.json              spec, the controller paths we created (placeholders for bind mounts), and the
                          checkout that brought the cluster up (its project root)
  ssh/                    harness key pair, known_hosts, ssh_config, authorized_keys
  hosts/<name>/           per-host disk: pbs.conf, spool/ (PBS_HOME), sshd config and host key, console.log,
                          sudoers.d/ (with a login user: mounted over /etc/sudoers.d inside the host)
  inventory/              the inventory `up` writes when the host names differ from inventory/local's
                          (always for the other members of a fleet, `up --clusters N`)

One state directory holds one cluster; several clusters on one machine have several directories.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import network
from pbs_harness.localcluster.spec import ClusterSpec

DEFAULT_STATE_DIR = Path("/var/lib/pbs-harness/local")
# Inventory host variables that say a host is a local-cluster host, and of which cluster (its state directory).
LOCAL_HOST_VAR = "local_cluster_host"
STATE_DIR_VAR = "local_cluster_state_dir"
STATE_DIR_ENV = "PBS_HARNESS_STATE_DIR"


# What the state directory is, for messages that name the environment variable (#23: say what it is).
STATE_DIR_MEANS = (
    f"each local cluster keeps its record in a state directory of its own, named by --state-dir DIR or by the "
    f"environment variable {STATE_DIR_ENV}=DIR (default {DEFAULT_STATE_DIR})"
)
# Set by the CLI when --state-dir named the directory (it also exports it, for the tools it starts).
_named_by_option = False


def named_by_option(value: bool) -> None:
    global _named_by_option  # noqa: PLW0603 - one CLI invocation's fact, set once per command
    _named_by_option = value


def describe_dir(root: Path | None = None) -> str:
    """The state directory for a message, with where its name came from."""
    where = state_dir(root)
    if root is not None:
        return str(where)
    if _named_by_option:
        return f"{where} (--state-dir)"
    if STATE_DIR_ENV in os.environ:
        return (
            f"{where} (from the environment variable {STATE_DIR_ENV}, which names the local cluster's state directory)"
        )
    return f"{where} (the default state directory)"


def state_dir(root: Path | None = None) -> Path:
    """The given state directory, else $PBS_HARNESS_STATE_DIR, else the default; always absolute."""
    return Path(os.path.abspath(root or os.environ.get(STATE_DIR_ENV, str(DEFAULT_STATE_DIR))))


def cluster_id(root: Path | None = None) -> str:
    """What names a cluster machine-wide (its /etc/hosts block, the inventory's record): its state dir."""
    return str(state_dir(root))


@dataclass
class ClusterState:
    """Persistent record of one local cluster."""

    subnet: str
    host_count: int
    prefix: str
    login_user: str | None = None
    # Controller paths that did not exist and were created as bind-mount targets.
    created_paths: list[str] = field(default_factory=list)
    # Project root of the checkout that brought the cluster up: the acceptance suites of another
    # checkout leave it alone unless named explicitly. None in state written before it was recorded.
    owner: str | None = None
    # `up --clusters N` (localcluster/fleet.py): member 1 lists the other members' state directories,
    # each of them names member 1's.
    fleet: list[str] = field(default_factory=list)
    member_of: str | None = None
    # System hosts: the image they boot, its overlayfs lower directories (top first) as `up` found
    # them, and the OpenPBS packages the inventory gives the deploy (a folder of .deb files).
    flavour: str = "namespace"
    image: str = "debian-12"
    image_lowerdirs: list[str] = field(default_factory=list)
    packages_dir: str | None = None

    @property
    def spec(self) -> ClusterSpec:
        return ClusterSpec(
            subnet=self.subnet,
            host_count=self.host_count,
            prefix=self.prefix,
            login_user=self.login_user,
            flavour=self.flavour,
            image=self.image,
        )

    @property
    def label(self) -> str:
        """E.g. `local cluster pbsh01..pbsh06 (10.71.0.0/24)`."""
        hosts = self.spec.hosts
        return f"local cluster {hosts[0].name}..{hosts[-1].name} ({self.subnet})"

    @classmethod
    def from_spec(cls, spec: ClusterSpec, owner: str | None = None) -> ClusterState:
        return cls(
            subnet=spec.subnet,
            host_count=spec.host_count,
            prefix=spec.prefix,
            login_user=spec.login_user,
            owner=owner,
            flavour=spec.flavour,
            image=spec.image,
        )


def load(root: Path | None = None) -> ClusterState | None:
    path = state_dir(root) / "state.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    known = {f.name for f in fields(ClusterState)}
    return ClusterState(**{k: v for k, v in data.items() if k in known})


def load_checked(root: Path | None = None) -> ClusterState | None:
    """The cluster's record (of state directory `root`, default the configured one), or None when none
    is up; an unreadable record is an error naming the file."""
    try:
        return load(root)
    except (OSError, ValueError, TypeError) as exc:
        raise PreconditionError(
            f"the local cluster's state file {state_dir(root) / 'state.json'} is unreadable: {exc}",
            f"if no local cluster is up, move that file away; or use another state directory ({STATE_DIR_MEANS})",
        ) from exc


def save(state: ClusterState, root: Path | None = None) -> None:
    base = state_dir(root)
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = base / "state.json.tmp"
    tmp.write_text(json.dumps(asdict(state), indent=2) + "\n")
    tmp.replace(base / "state.json")


def host_dir(name: str, root: Path | None = None) -> Path:
    return state_dir(root) / "hosts" / name


def ssh_dir(root: Path | None = None) -> Path:
    return state_dir(root) / "ssh"


def state_dir_of(host_vars: Mapping[str, Any]) -> Path:
    """The state directory an inventory host records (a host of an older inventory: the default one)."""
    recorded = host_vars.get(STATE_DIR_VAR)
    return state_dir(Path(str(recorded)) if recorded else None)


def require(root: Path | None = None) -> ClusterState:
    """The cluster's state, refusing when its network is gone (its addresses would route off-box)."""
    st = load(root)
    if st is None:
        raise PreconditionError(
            f"no local cluster is up (no state in {describe_dir(root)})",
            f"bring one up (pbs-harness cluster up), or name the one that is up: {STATE_DIR_MEANS}",
        )
    if st.spec.bridge not in network.link_names():
        raise PreconditionError(
            f"the local cluster's bridge {st.spec.bridge} is gone (machine restarted?)",
            "repair it: pbs-harness cluster up",
        )
    return st
