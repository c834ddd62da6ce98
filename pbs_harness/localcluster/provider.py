"""`pbs-harness cluster ...`: bring a local cluster up and down, and host lifecycle verbs.

Every function takes `root`, the cluster's state directory (default: $PBS_HARNESS_STATE_DIR or
/var/lib/pbs-harness/local); several clusters live side by side in several state directories.

Two flavours of host (pbs_harness.hosts.backend): namespace hosts share this machine's /opt, /usr, /etc
and /home (their names go into this machine's /etc/hosts, a login user into its /etc/passwd);
system hosts have their own root and change nothing of this machine's /etc.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pbs_harness.common import project, shell
from pbs_harness.common.errors import PreconditionError, UnreachableError
from pbs_harness.deploy import openpbs_build
from pbs_harness.hosts.namespace import NamespaceHost
from pbs_harness.hosts.system import SystemHost
from pbs_harness.localcluster import hostsfile, login, network, preflight, registry, sshkeys, state
from pbs_harness.localcluster.containers import images
from pbs_harness.localcluster.spec import ClusterSpec, HostSpec

# Bind-mount targets that must exist on the controller for the per-host copies.
BIND_TARGETS = {Path("/etc/pbs.conf"): "file", Path("/var/spool/pbs"): "dir"}
# Inventory host variables that say a host is a local-cluster host, and of which cluster.
LOCAL_HOST_VAR = "local_cluster_host"
STATE_DIR_VAR = "local_cluster_state_dir"

LocalHost = NamespaceHost | SystemHost

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


def up(
    spec: ClusterSpec, progress: Progress = _quiet, root: Path | None = None, packages: Path | None = None
) -> state.ClusterState:
    """Create (or repair) the cluster; safe to run again on a running cluster. `packages`: system
    hosts' OpenPBS packages, recorded for the inventory (the deploy installs them)."""
    old = state.load(root)
    st = claim(old, spec, project.checkout(), root)
    if packages is not None:
        st.packages_dir = str(packages)
    preflight.run_all(spec, ours=old is not None, root=root)
    state.save(st, root)  # record early so a failed `up` can still be taken `down`
    progress(f"network: bridge {spec.bridge} {spec.bridge_ip}/{spec.prefixlen}")
    network.ensure_bridge(spec)
    sshkeys.ensure_client_key(root)
    if spec.flavour == "system":
        preflight.ensure_inotify_instances(progress)
        needs = openpbs_build.depends(Path(st.packages_dir)) if st.packages_dir else set()
        layer = images.host_layer_for(images.distribution(spec.image), needs, progress)
        wanted = [str(p) for p in layer.lowerdirs()]
        if old is not None and old.image_lowerdirs and old.image_lowerdirs != wanted:
            raise PreconditionError(
                f"the {old.label} runs image {Path(old.image_lowerdirs[0]).parent.name}, and these packages need "
                f"{layer.name} (their dependencies differ): its hosts cannot change image while they exist",
                "take it down first (pbs-harness down), then bring it up again",
            )
        st.image_lowerdirs = wanted
        state.save(st, root)
        for host in spec.hosts:
            sshkeys.ensure_host_key(host, root, spec.login_user)
    else:
        _ensure_bind_targets(st)
        state.save(st, root)
        if spec.login_user:
            _setup_login(spec, root, progress)
        hostsfile.install(state.cluster_id(root), [(h.ip, h.name) for h in spec.hosts])
        for host in spec.hosts:
            _prepare_host_disk(spec, host, root)
    sshkeys.write_client_files(spec, root)
    hosts = [backend(st, h, root) for h in spec.hosts]
    found_running = set()
    for host in hosts:
        network.ensure_host_network(spec, host.spec)
        host.prepare()
        _heal_fault_leftovers(host, progress)
        if host.is_running():
            progress(f"host {host.name} {host.spec.ip}: running")
            found_running.add(host.name)
        else:
            progress(f"host {host.name} {host.spec.ip}: booting")
            host.start()
    for host in hosts:  # booted together, waited for in turn
        _wait_or_reboot(host, host.name in found_running, progress)
    return st


def _heal_fault_leftovers(host: LocalHost, progress: Progress) -> None:
    """Resume a paused host and reconnect a partitioned one: faults a test injects and heals in its
    teardown, left in place when its run was killed (SIGKILL: no teardown). Without this a host
    partitioned then would keep its sshd out of reach and fail the next `up`."""
    if host.is_paused():
        progress(f"host {host.name}: paused (left by an interrupted test run): resuming it")
        host.resume()
    if host.is_partitioned():
        progress(f"host {host.name}: partitioned (left by an interrupted test run): reconnecting it")
        host.reconnect()


def _wait_or_reboot(host: LocalHost, found_running: bool, progress: Progress) -> None:
    """Wait for the host's sshd. A host `up` found running but silent (a boot that went wrong
    earlier) is repaired: crashed and booted once more."""
    try:
        host.wait_ssh(timeout=10 if found_running else 30)
    except UnreachableError:
        if not found_running:
            raise
        progress(f"host {host.name} {host.spec.ip}: running but its sshd does not answer: booting it again")
        host.crash()
        host.boot()


def backend(st: state.ClusterState, host: HostSpec, root: Path | None = None) -> LocalHost:
    """The backend of one host of the cluster recorded in `st` (pbs_harness.hosts.backend)."""
    if st.flavour == "system":
        return SystemHost(st.spec, host, state.state_dir(root), [Path(p) for p in st.image_lowerdirs])
    return NamespaceHost(st.spec, host, state.state_dir(root))


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
        backend(st, host, root).remove()
        network.remove_host_network(host)
    _stop_ssh_masters(root)
    network.remove_bridge(spec)
    if spec.flavour == "namespace":
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
    if spec.login_user and spec.flavour == "namespace":
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
        local = backend(st, host, root)
        running = local.is_running()
        paused = running and local.is_paused()
        partitioned = local.is_partitioned()
        ssh = False
        if running and not paused and not partitioned:
            try:
                local.wait_ssh(timeout=1)
                ssh = True
            except Exception:  # noqa: BLE001 - status reports, never raises
                ssh = False
        out.append(HostStatus(host.name, host.ip, running, paused, partitioned, ssh))
    return out


def host(name: str, root: Path | None = None) -> LocalHost:
    st = require(root)
    return backend(st, st.spec.host(name), root)


def state_dir_of(host_vars: dict[str, Any]) -> Path:
    """The state directory an inventory host records (a host of an older inventory: the default one)."""
    recorded = host_vars.get(STATE_DIR_VAR)
    return state.state_dir(Path(str(recorded)) if recorded else None)


def inventory_host(name: str, host_vars: dict[str, Any]) -> LocalHost:
    """The local-cluster host an inventory names, in the cluster its inventory records."""
    if not host_vars.get(LOCAL_HOST_VAR):
        raise PreconditionError(
            f"{name} is not a local-cluster host (no {LOCAL_HOST_VAR} in its inventory variables)",
            "host-level faults of VMs go over SSH (pbs_harness.hosts.ssh)",
        )
    return host(name, state_dir_of(host_vars))
