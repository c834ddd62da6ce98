"""System hosts: their own Debian root and systemd as PID 1 under systemd-nspawn
(pbs_harness.localcluster.system_host boots them), in network namespaces made beforehand.

What the kind owns besides one host's lifecycle: what `up` makes for such a cluster (the host image
layer its OpenPBS packages need, each host's SSH key) and the inventory variables in which these
hosts differ from namespace hosts: they are separate systems, as VMs are, so OpenPBS comes from the
packages `up --openpbs` named, the roles write name resolution, give the test accounts SSH keys for
PBS's scp staging, and $usecp is left out (no shared filesystem). Nothing of this machine's /etc is
changed, so `down` has nothing of the kind's to take back.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pbs_harness.common.errors import PreconditionError
from pbs_harness.deploy import openpbs_build
from pbs_harness.deploy.openpbs_source import PROVENANCE_FILE
from pbs_harness.hosts.base import KIND_VAR, HostVars
from pbs_harness.hosts.local import PARTITION_MECHANISM, LocalHostBase
from pbs_harness.localcluster import preflight, sshkeys, state, system_host
from pbs_harness.localcluster.containers import images
from pbs_harness.localcluster.spec import ClusterSpec


class SystemHost(LocalHostBase):
    NAME = "system"
    installs_openpbs_packages = True
    MECHANISMS: ClassVar[Mapping[str, str]] = {
        "crash": "freeze the container's freezer cgroup, SIGKILL every member (systemd, nspawn included), thaw",
        "boot": "systemd-nspawn --boot on the kept root: systemd starts sshd and pbs.service",
        "pause": "cgroup freezer of the container",
        "partition": PARTITION_MECHANISM,
    }

    def __init__(self, name: str, host_vars: HostVars, cluster: Any = None, **where: Any) -> None:
        super().__init__(name, host_vars, cluster, **where)
        # The image's overlayfs layers, top first, as `up` recorded them.
        self.lowerdirs = [Path(p) for p in self.state.image_lowerdirs]

    def own_root(self) -> Path:
        return system_host.merged(self.spec, self.root)

    @classmethod
    def programs(cls) -> Mapping[str, str]:
        return preflight.SYSTEM_PROGRAMS

    @classmethod
    def describe_hosts(cls, spec: ClusterSpec) -> str:
        return f" {spec.image} system"

    @classmethod
    def inventory_vars(cls, st: state.ClusterState) -> dict[str, Any]:
        folder = Path(st.packages_dir or "")
        record = folder / PROVENANCE_FILE
        if not st.packages_dir or not record.is_file():
            raise PreconditionError(
                f"the system hosts' OpenPBS packages are not where the cluster recorded them ({record})",
                "bring the cluster up again with --openpbs PATH (pbs-harness up --flavour system --openpbs ...)",
            )
        provenance = json.loads(record.read_text())
        files = {kind: provenance["package_kinds"][kind] for kind in ("server", "execution", "client")}
        return {
            KIND_VAR: cls.NAME,
            "openpbs_install_method": "packages",
            "openpbs_install_packages_dir": str(folder),
            "openpbs_install_version": provenance["version"],
            "openpbs_install_package_files": {"apt": files},
            "openpbs_install_provenance_file": str(record),
            "openpbs_common_hosts_file": True,
            "openpbs_common_user_ssh_keys": True,
            "openpbs_mom_usecp": [],
        }

    @classmethod
    def prepare_cluster(
        cls, st: state.ClusterState, old: state.ClusterState | None, root: Path | None, progress: Callable[[str], None]
    ) -> None:
        """The host image layer the recorded packages need (a running cluster keeps its own), and each
        host's SSH key."""
        spec = st.spec
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

    @classmethod
    def staging_dir(cls, server_vars: HostVars) -> Path | None:
        """The cluster's state directory: each host has a root of its own, which this machine writes into."""
        return state.state_dir_of(server_vars)

    @classmethod
    def host_ssh_config(cls, server_vars: HostVars) -> Path | None:
        """The harness's own ssh_config, as for namespace hosts; these hosts see it once the state's ssh
        directory is put into them (put_tree). None for a cluster with a login user (root refused)."""
        root = state.state_dir_of(server_vars)
        st = state.load(root)
        if st is None or st.spec.login_user:
            return None
        return sshkeys.ssh_config(root)

    def _in_root(self, path: Path) -> Path:
        if not path.is_absolute() or ".." in path.parts:
            raise ValueError(f"not an absolute path without '..': {path}")
        return self.own_root() / path.relative_to("/")

    def put_tree(self, src: Path) -> None:
        dest = self._in_root(src)
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, dest, symlinks=True, ignore=_sockets_and_pipes)

    def remove_tree(self, path: Path) -> None:
        shutil.rmtree(self._in_root(path), ignore_errors=True)

    def start(self) -> None:
        system_host.boot(self.cluster_spec, self.spec, self.lowerdirs, self.root)

    def prepare(self) -> None:
        """Before the first boot: the host's root filesystem."""
        system_host.mount_root(self.spec, self.lowerdirs, self.root)

    def remove(self) -> None:
        system_host.remove(self.spec, self.root)


def _sockets_and_pipes(folder: str, names: list[str]) -> set[str]:
    """What put_tree leaves out: sockets and pipes (e.g. SSH ControlMaster sockets in the ssh directory)
    cannot be copied, and mean nothing in another host."""
    out = set()
    for name in names:
        st = os.lstat(os.path.join(folder, name))
        if stat.S_ISSOCK(st.st_mode) or stat.S_ISFIFO(st.st_mode):
            out.add(name)
    return out
