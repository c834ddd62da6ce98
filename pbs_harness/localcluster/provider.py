"""`pbs-harness cluster ...`: bring the local cluster up and down, and host lifecycle verbs."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pbs_harness import project, shell
from pbs_harness.errors import PreconditionError
from pbs_harness.localcluster import hostproc, hostsfile, network, preflight, sshkeys, state
from pbs_harness.localcluster.spec import ClusterSpec, HostSpec

# Bind-mount targets that must exist on the controller for the per-host copies.
BIND_TARGETS = {Path("/etc/pbs.conf"): "file", Path("/var/spool/pbs"): "dir"}

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


def _prepare_host_disk(host: HostSpec) -> None:
    hdir = state.host_dir(host.name)
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
    sshkeys.ensure_host_key(host)


def current() -> state.ClusterState | None:
    return state.load()


def require() -> state.ClusterState:
    """The cluster's state, refusing when its network is gone (its addresses would route off-box)."""
    st = state.load()
    if st is None:
        raise PreconditionError("no local cluster is up", "bring one up: pbs-harness cluster up")
    if st.spec.bridge not in network.link_names():
        raise PreconditionError(
            f"the local cluster's bridge {st.spec.bridge} is gone (machine restarted?)",
            "repair it: pbs-harness cluster up",
        )
    return st


def claim(old: state.ClusterState | None, spec: ClusterSpec, here: str) -> state.ClusterState:
    """The state `up` goes on with: a new one owned by checkout `here`, or the running cluster's
    when `here` may repair it (it is this checkout's, or its state predates the owner record).
    Refuses another checkout's cluster: repairing or redeploying it would change what that
    checkout is testing."""
    if old is None:
        return state.ClusterState.from_spec(spec, owner=here)
    if old.owner not in (None, here):
        raise PreconditionError(
            f"the {old.label} was brought up by another checkout ({old.owner}), not this one ({here})",
            "use it from that checkout, or take it down first (pbs-harness down) and bring it up from here",
        )
    if old.spec != spec:
        raise PreconditionError(
            f"a local cluster with a different shape is up ({old.host_count} hosts, {old.subnet})",
            "take it down first (pbs-harness down) or repeat its shape",
        )
    old.owner = here
    return old


def foreign_owner() -> str | None:
    """Who brought up the local cluster, when it is up and not this checkout's (.ci/run leaves such
    a cluster alone); None when no cluster is up or it is ours."""
    st = state.load()
    if st is None or st.owner == project.checkout():
        return None
    return st.owner or "a checkout that did not record itself"


def up(spec: ClusterSpec, progress: Progress = _quiet) -> state.ClusterState:
    """Create (or repair) the cluster; safe to run again on a running cluster."""
    old = state.load()
    st = claim(old, spec, project.checkout())
    preflight.run_all(spec, ours=old is not None)
    state.save(st)  # record early so a failed `up` can still be taken `down`
    progress(f"network: bridge {spec.bridge} {spec.bridge_ip}/{spec.prefixlen}")
    network.ensure_bridge(spec)
    _ensure_bind_targets(st)
    state.save(st)
    sshkeys.ensure_client_key()
    hostsfile.install((h.ip, h.name) for h in spec.hosts)
    for host in spec.hosts:
        _prepare_host_disk(host)
    sshkeys.write_client_files(spec)
    for host in spec.hosts:
        network.ensure_host_network(spec, host)
        hostproc.ensure_cgroup(host)
        if hostproc.is_paused(host):
            hostproc.resume(host)
        if hostproc.is_running(host):
            progress(f"host {host.name} {host.ip}: running")
            hostproc.wait_ssh(host)
        else:
            progress(f"host {host.name} {host.ip}: booting")
            hostproc.boot(host)
    return st


def down(progress: Progress = _quiet) -> bool:
    """Remove everything `up` created; returns False when there was nothing to remove."""
    st = state.load()
    if st is None:
        removed = hostsfile.remove()
        return removed
    spec = st.spec
    for host in spec.hosts:
        progress(f"host {host.name}: stopping")
        hostproc.resume(host)
        hostproc.crash(host)
        hostproc.remove_cgroup(host)
        network.remove_host_network(host)
    _stop_ssh_masters()
    network.remove_bridge(spec)
    hostsfile.remove()
    for created in reversed(st.created_paths):
        path = Path(created)
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
        elif path.is_file() and path.stat().st_size == 0:
            path.unlink()
    root = state.state_dir()
    shutil.rmtree(root)
    if root.parent.name == "pbs-harness" and not any(root.parent.iterdir()):
        root.parent.rmdir()
    progress("local cluster removed")
    return True


def _stop_ssh_masters() -> None:
    """Close the multiplexed SSH masters (ControlPersist) that ansible/testinfra left running."""
    for sock in state.ssh_dir().glob("cm-*"):
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


def status() -> list[HostStatus]:
    st = require()
    out = []
    for host in st.spec.hosts:
        running = hostproc.is_running(host)
        paused = running and hostproc.is_paused(host)
        partitioned = network.is_partitioned(host)
        ssh = False
        if running and not paused and not partitioned:
            try:
                hostproc.wait_ssh(host, timeout=1)
                ssh = True
            except Exception:  # noqa: BLE001 - status reports, never raises
                ssh = False
        out.append(HostStatus(host.name, host.ip, running, paused, partitioned, ssh))
    return out


def host(name: str) -> HostSpec:
    return require().spec.host(name)
