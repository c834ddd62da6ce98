"""Namespace hosts: network, UTS, mount and PID namespaces under tini, sharing this machine's /opt,
/usr, /etc and /home (pbs_harness.localcluster.hostproc boots them).

What the kind owns besides one host's lifecycle: what `up` makes on this machine for such a cluster
(bind-mount targets, the login account, the cluster's block of /etc/hosts, each host's disk), what
`down` takes back, and the inventory variables in which these hosts differ from system hosts
(OpenPBS is this machine's install, names are in its /etc/hosts, homes are shared, so job files
are copied locally with $usecp and no user keys are needed).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pbs_harness.hosts.base import KIND_VAR, HostVars
from pbs_harness.hosts.local import PARTITION_MECHANISM, LocalHostBase
from pbs_harness.localcluster import hostproc, hostsfile, login, preflight, registry, sshkeys, state
from pbs_harness.localcluster.containers import cgroups
from pbs_harness.localcluster.spec import ClusterSpec, HostSpec

# Bind-mount targets that must exist on the controller for the per-host copies.
BIND_TARGETS = {Path("/etc/pbs.conf"): "file", Path("/var/spool/pbs"): "dir"}

INVENTORY_VARS = {
    "openpbs_install_method": "existing",
    "openpbs_common_shared_etc": True,
    "openpbs_common_hosts_file": False,
    "openpbs_common_user_ssh_keys": False,
    "openpbs_mom_usecp": ["*:/home /home"],
}


class NamespaceHost(LocalHostBase):
    NAME = "namespace"
    shares_controller_files = True
    MECHANISMS: ClassVar[Mapping[str, str]] = {
        "crash": "freeze the host's freezer cgroup, SIGKILL every member, thaw",
        "boot": "relaunch tini -> host-init.sh (sshd; PBS by its init script) in the kept namespaces",
        "pause": "cgroup freezer",
        "partition": PARTITION_MECHANISM,
    }

    # -- what the cluster shares with this machine ----------------------------------------------

    @classmethod
    def programs(cls) -> Mapping[str, str]:
        return preflight.REQUIRED_PROGRAMS

    @classmethod
    def shared_dir(cls, server_vars: HostVars) -> Path | None:
        """The cluster's state directory: the hosts share this machine's /var/lib (only
        /var/spool/pbs, /root, /tmp and /run are their own)."""
        return state.state_dir_of(server_vars)

    @classmethod
    def host_ssh_config(cls, server_vars: HostVars) -> Path | None:
        """The harness's own ssh_config (its key authorises root on every host, its known_hosts pins
        every host key), which the hosts read in the shared state directory; None for a cluster with a
        login user, whose hosts refuse root logins."""
        root = state.state_dir_of(server_vars)
        st = state.load(root)
        if st is None or st.spec.login_user:
            return None
        return sshkeys.ssh_config(root)

    @classmethod
    def inventory_vars(cls, st: state.ClusterState) -> dict[str, Any]:
        return {KIND_VAR: cls.NAME, **INVENTORY_VARS}

    # -- the cluster's lifecycle on this machine ------------------------------------------------

    @classmethod
    def prepare_cluster(
        cls, st: state.ClusterState, old: state.ClusterState | None, root: Path | None, progress: Callable[[str], None]
    ) -> None:
        spec = st.spec
        _ensure_bind_targets(st)
        state.save(st, root)
        if spec.login_user:
            _setup_login(spec, root, progress)
        hostsfile.install(state.cluster_id(root), [(h.ip, h.name) for h in spec.hosts])
        for host in spec.hosts:
            _prepare_host_disk(spec, host, root)

    @classmethod
    def forget_cluster(
        cls,
        st: state.ClusterState,
        root: Path | None,
        others: list[registry.KnownCluster],
        progress: Callable[[str], None],
    ) -> None:
        """This machine's /etc/hosts block, and the login account unless another cluster still uses it."""
        spec = st.spec
        hostsfile.remove(state.cluster_id(root), [h.name for h in spec.hosts])
        if spec.login_user:
            still_used = any(o.login_user == spec.login_user for o in others)
            if login.remove_account(spec.login_user, still_used):
                progress(f"login account {spec.login_user} removed")

    # -- one host -------------------------------------------------------------------------------

    def start(self) -> None:
        hostproc.launch(self.spec, root=self.root)

    def prepare(self) -> None:
        """Before the first boot: the host's cgroups."""
        cgroups.prepare(self.name)

    def remove(self) -> None:
        """Stop the host for good (`down`): its processes and cgroups."""
        self.resume()
        self.crash()
        cgroups.remove(self.name)


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


def _setup_login(spec: ClusterSpec, root: Path | None, progress: Callable[[str], None]) -> None:
    assert spec.login_user is not None
    if login.ensure_account(spec.login_user):
        entry = login.account(spec.login_user)
        uid = entry.pw_uid if entry else "?"
        progress(f"login account {spec.login_user} created (UID {uid}, no password, sudo inside the hosts only)")
    login.open_key_path(root)
    login.check_key_path(state.ssh_dir(root) / "authorized_keys", spec.login_user)
