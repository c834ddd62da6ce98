"""`pbs-harness cluster ...`: bring a local cluster up and down, and host lifecycle verbs.

Every function takes `root`, the cluster's state directory (default: $PBS_HARNESS_STATE_DIR or
/var/lib/pbs-harness/local); several clusters live side by side in several state directories.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pbs_harness import project, shell
from pbs_harness.errors import PreconditionError
from pbs_harness.localcluster import hostproc, hostsfile, login, network, preflight, registry, sshkeys, state
from pbs_harness.localcluster.spec import ClusterSpec, HostSpec

# Bind-mount targets that must exist on the controller for the per-host copies.
BIND_TARGETS = {Path("/etc/pbs.conf"): "file", Path("/var/spool/pbs"): "dir"}
# Inventory host variables that say a host is a local-cluster host, and of which cluster.
LOCAL_HOST_VAR = "local_cluster_host"
STATE_DIR_VAR = "local_cluster_state_dir"

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def _ensure_bind_targets(st: state.ClusterState) -> None:
    for path, kind in BIND_TARGETS.items():
        if path.exists():
            continue
        if kind == "dir":
            path.mkdir(parents=True, mode=0o755)
        else:
            path.touch(mode=0o644)
        st.created_paths.append(str(path))


def _prepare_host_disk(spec: ClusterSpec, host: HostSpec, root: Path | None) -> None:
    hdir = state.host_dir(host.name, root)
    (hdir / "spool").mkdir(parents=True, exist_ok=True, mode=0o755)
    root_home = hdir / "root"
    if not root_home.exists():
        root_home.mkdir(mode=0o700)
        for dotfile in (".bashrc", ".profile"):
            skel = Path("/etc/skel") / dotfile
            if skel.exists():
                shutil.copy(skel, root_home / dotfile)
    conf = hdir / "pbs.conf"
    if not conf.exists():
        conf.touch(mode=0o644)
    if spec.login_user:
        login.write_sudoers(host.name, spec.login_user, root)
    sshkeys.ensure_host_key(host, root, spec.login_user)


def current(root: Path | None = None) -> state.ClusterState | None:
    return state.load(root)


def require(root: Path | None = None) -> state.ClusterState:
    """The cluster's state, refusing when its network is gone (its addresses would route off-box)."""
    st = state.load(root)
    if st is None:
        raise PreconditionError(
            f"no local cluster is up (no state in {state.describe_dir(root)})",
            f"bring one up (pbs-harness cluster up), or name the one that is up: {state.STATE_DIR_MEANS}",
        )
    if st.spec.bridge not in network.link_names():
        raise PreconditionError(
            f"the local cluster's bridge {st.spec.bridge} is gone (machine restarted?)",
            "repair it: pbs-harness cluster up",
        )
    return st


def _setup_login(spec: ClusterSpec, root: Path | None, progress: Progress) -> None:
    assert spec.login_user is not None
    if login.ensure_account(spec.login_user):
        entry = login.account(spec.login_user)
        uid = entry.pw_uid if entry else "?"
        progress(f"login account {spec.login_user} created (UID {uid}, no password, sudo inside the hosts only)")
    login.open_key_path(root)
    login.check_key_path(state.ssh_dir(root) / "authorized_keys", spec.login_user)


def claim(old: state.ClusterState | None, spec: ClusterSpec, here: str, root: Path | None = None) -> state.ClusterState:
    """The state `up` goes on with: a new one owned by checkout `here`, or the running cluster's
    when `here` may repair it (it is this checkout's, or its state predates the owner record, and
    the shape is the same). Refuses another checkout's cluster: repairing or redeploying it would
    change what that checkout is testing."""
    if old is None:
        return state.ClusterState.from_spec(spec, owner=here)
    if old.owner not in (None, here):
        raise PreconditionError(
            f"the {old.label} was brought up by another checkout ({old.owner}), not this one ({here})",
            "use it from that checkout, or take it down first (pbs-harness down) and bring it up from here",
        )
    if old.spec != spec:
        raise PreconditionError(
            f"a local cluster of another shape is up in {state.state_dir(root)} ({old.spec.describe()})",
            "take it down first (pbs-harness down) or repeat its shape, or use another state directory (--state-dir)",
        )
    old.owner = here
    return old


def foreign_owner(root: Path | None = None) -> str | None:
    """Who brought up the local cluster, when it is up and not this checkout's (.ci/run leaves such
    a cluster alone); None when no cluster is up or it is ours."""
    st = state.load(root)
    if st is None or st.owner == project.checkout():
        return None
    return st.owner or "a checkout that did not record itself"


def up(spec: ClusterSpec, progress: Progress = _quiet, root: Path | None = None) -> state.ClusterState:
    """Create (or repair) the cluster; safe to run again on a running cluster."""
    old = state.load(root)
    st = claim(old, spec, project.checkout(), root)
    preflight.run_all(spec, ours=old is not None, root=root)
    state.save(st, root)  # record early so a failed `up` can still be taken `down`
    progress(f"network: bridge {spec.bridge} {spec.bridge_ip}/{spec.prefixlen}")
    network.ensure_bridge(spec)
    _ensure_bind_targets(st)
    state.save(st, root)
    sshkeys.ensure_client_key(root)
    if spec.login_user:
        _setup_login(spec, root, progress)
    hostsfile.install(state.cluster_id(root), [(h.ip, h.name) for h in spec.hosts])
    for host in spec.hosts:
        _prepare_host_disk(spec, host, root)
    sshkeys.write_client_files(spec, root)
    for host in spec.hosts:
        network.ensure_host_network(spec, host)
        hostproc.ensure_cgroup(host)
        if hostproc.is_paused(host):
            hostproc.resume(host)
        if hostproc.is_running(host):
            progress(f"host {host.name} {host.ip}: running")
            hostproc.wait_ssh(host, root=root)
        else:
            progress(f"host {host.name} {host.ip}: booting")
            hostproc.boot(host, root=root)
    return st


def _hand_over_placeholders(st: state.ClusterState, others: list[registry.KnownCluster]) -> list[str]:
    """Bind-mount placeholders this cluster created but another cluster still mounts: the other
    cluster's state takes them over (its `down` removes them). Returns the paths kept."""
    heir = next((o for o in others if o.state_dir and state.load(Path(o.state_dir)) is not None), None)
    if heir is None or not st.created_paths:
        return []
    heir_root = Path(heir.state_dir)
    heir_state = state.load(heir_root)
    assert heir_state is not None
    heir_state.created_paths += [p for p in st.created_paths if p not in heir_state.created_paths]
    state.save(heir_state, heir_root)
    return list(st.created_paths)


def down(progress: Progress = _quiet, root: Path | None = None) -> bool:
    """Remove everything `up` created; returns False when there was nothing to remove."""
    cid = state.cluster_id(root)
    st = state.load(root)
    if st is None:
        return hostsfile.remove(cid)
    spec = st.spec
    for host in spec.hosts:
        progress(f"host {host.name}: stopping")
        hostproc.resume(host)
        hostproc.crash(host)
        hostproc.remove_cgroup(host)
        network.remove_host_network(host)
    _stop_ssh_masters(root)
    network.remove_bridge(spec)
    hostsfile.remove(cid, [h.name for h in spec.hosts])
    others = registry.others(root)
    kept = _hand_over_placeholders(st, others)
    for created in reversed(st.created_paths):
        path = Path(created)
        if created in kept:
            continue
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
        elif path.is_file() and path.stat().st_size == 0:
            path.unlink()
    if spec.login_user:
        still_used = any(o.login_user == spec.login_user for o in others)
        if login.remove_account(spec.login_user, still_used):
            progress(f"login account {spec.login_user} removed")
    sdir = state.state_dir(root)
    shutil.rmtree(sdir)
    if sdir.parent.name == "pbs-harness" and not any(sdir.parent.iterdir()):
        sdir.parent.rmdir()
    progress(f"local cluster in {sdir} removed")
    return True


def _stop_ssh_masters(root: Path | None = None) -> None:
    """Close the multiplexed SSH masters (ControlPersist) that ansible/testinfra left running."""
    for sock in state.ssh_dir(root).glob("cm-*"):
        shell.run(["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "pbs-harness-master"], timeout=10)


@dataclass(frozen=True)
class HostStatus:
    name: str
    ip: str
    running: bool
    paused: bool
    partitioned: bool
    ssh: bool

    @property
    def summary(self) -> str:
        if not self.running:
            return "crashed/stopped"
        flags = [f for f, on in (("paused", self.paused), ("partitioned", self.partitioned)) if on]
        flags.append("ssh ok" if self.ssh else "ssh down")
        return "running, " + ", ".join(flags)


def status(root: Path | None = None) -> list[HostStatus]:
    st = require(root)
    out = []
    for host in st.spec.hosts:
        running = hostproc.is_running(host)
        paused = running and hostproc.is_paused(host)
        partitioned = network.is_partitioned(host)
        ssh = False
        if running and not paused and not partitioned:
            try:
                hostproc.wait_ssh(host, timeout=1, root=root)
                ssh = True
            except Exception:  # noqa: BLE001 - status reports, never raises
                ssh = False
        out.append(HostStatus(host.name, host.ip, running, paused, partitioned, ssh))
    return out


@dataclass(frozen=True)
class LocalHost:
    """One host of one local cluster: its shape and its cluster's state directory, with the lifecycle verbs."""

    spec: HostSpec
    root: Path

    @property
    def name(self) -> str:
        return self.spec.name

    def crash(self) -> None:
        hostproc.crash(self.spec)

    def boot(self) -> None:
        hostproc.boot(self.spec, root=self.root)

    def pause(self) -> None:
        hostproc.pause(self.spec)

    def resume(self) -> None:
        hostproc.resume(self.spec)

    def partition(self) -> None:
        network.partition(self.spec)

    def heal(self) -> None:
        network.heal(self.spec)


def host(name: str, root: Path | None = None) -> LocalHost:
    return LocalHost(require(root).spec.host(name), state.state_dir(root))


def state_dir_of(host_vars: dict[str, Any]) -> Path:
    """The state directory an inventory host records (a host of an older inventory: the default one)."""
    recorded = host_vars.get(STATE_DIR_VAR)
    return state.state_dir(Path(str(recorded)) if recorded else None)


def inventory_host(name: str, host_vars: dict[str, Any]) -> LocalHost:
    """The local-cluster host an inventory names, in the cluster its inventory records."""
    if not host_vars.get(LOCAL_HOST_VAR):
        raise PreconditionError(
            f"{name} is not a local-cluster host (no {LOCAL_HOST_VAR} in its inventory variables)",
            "host-level faults of VMs go over SSH (pbs_harness.faults.ssh)",
        )
    return host(name, state_dir_of(host_vars))
