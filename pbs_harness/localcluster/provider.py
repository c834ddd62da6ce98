"""`pbs-harness cluster ...`: bring a local cluster up and down, and host lifecycle verbs.

Every function takes `root`, the cluster's state directory (default: $PBS_HARNESS_STATE_DIR or
/var/lib/pbs-harness/local); several clusters live side by side in several state directories.

Two kinds of local host (pbs_harness.hosts.namespace, pbs_harness.hosts.system; the cluster's spec names
its kind, the registry of host kinds gives its class): what differs between them (what `up` makes on
this machine, what `down` takes back, how a host boots) is asked of the kind, never branched on here.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pbs_harness.common import project, shell
from pbs_harness.common.errors import PreconditionError, UnreachableError
from pbs_harness.localcluster import cluster_kind, hostsfile, network, preflight, registry, sshkeys, state
from pbs_harness.localcluster.spec import ClusterSpec, HostSpec

if TYPE_CHECKING:
    from pbs_harness.hosts.local import LocalHostBase as LocalHost

# Inventory host variables that say a host is a local-cluster host, and of which cluster.
LOCAL_HOST_VAR, STATE_DIR_VAR = state.LOCAL_HOST_VAR, state.STATE_DIR_VAR
require = state.require

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def current(root: Path | None = None) -> state.ClusterState | None:
    return state.load(root)


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
            f"a local cluster of another shape is up in {state.state_dir(root)} ({cluster_kind.describe(old.spec)})",
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
    cluster_kind.of(spec).prepare_cluster(st, old, root, progress)
    sshkeys.write_client_files(spec, root)
    hosts = [backend(st, h, root) for h in spec.hosts]
    found_running = set()
    for host in hosts:
        network.ensure_host_network(spec, host.spec)
        host.prepare()
        # Before the boot and the wait for sshd: a host a killed run left partitioned keeps sshd out of reach.
        host.undo_faults(progress)
        if host.is_running():
            progress(f"host {host.name} {host.spec.ip}: running")
            found_running.add(host.name)
        else:
            progress(f"host {host.name} {host.spec.ip}: booting")
            host.start()
    for host in hosts:  # booted together, waited for in turn
        _wait_or_reboot(host, host.name in found_running, progress)
    return st


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
    """One host of the cluster recorded in `st`, as its kind (from the registry: the spec names it) models it."""
    return cluster_kind.of(st.spec).in_cluster(st, host, root)


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
    cluster_kind.of(spec).forget_cluster(st, root, others, progress)
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
