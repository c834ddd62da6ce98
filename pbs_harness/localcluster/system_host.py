"""A system host: its own Debian root filesystem, systemd as PID 1, under systemd-nspawn.

The root is the cached host image layer (pbs_harness.localcluster.containers.images) seen through overlayfs, with an
upper directory per host in its state directory (hosts/<name>/rootfs/), so every host writes only
its own copy. Before each boot the harness writes what a cloud provider's first-boot agent would:
the host name, a machine id, the host's SSH key (generated here, so known_hosts is exact and
host-key checking stays on), sshd's key-only settings, and the account the harness logs in as
(root's authorized key, or a login user with sudo). Nothing of this machine's /etc, /home, /opt
or /usr is visible to the host, and nothing is written there.

The container joins the host's network namespace, made beforehand (network.py), so addresses,
partitions and the controller's view are those of namespace hosts; processes live in the freezer
group pbs-harness/<name> (pbs_harness.localcluster.containers.nspawn), which gives crash and pause.
"""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

from pbs_harness.common import shell
from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import sshkeys, state
from pbs_harness.localcluster.containers import cgroups, images, nspawn
from pbs_harness.localcluster.spec import ClusterSpec, HostSpec

SSHD_DROPIN = """\
# Written by pbs-harness at the host's first boot, as a cloud image's agent would: key-only SSH.
HostKey /etc/ssh/ssh_host_ed25519_key
{access}
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
MaxSessions 100
MaxStartups 100:30:200
"""
LOGIN_SUDOERS = "{user} ALL=(ALL) NOPASSWD:ALL\n"


def rootfs_dir(host: HostSpec, root: Path | None = None) -> Path:
    return state.host_dir(host.name, root) / "rootfs"


def merged(host: HostSpec, root: Path | None = None) -> Path:
    return rootfs_dir(host, root) / "merged"


def console_log(host: HostSpec, root: Path | None = None) -> Path:
    return state.host_dir(host.name, root) / "console.log"


def mount_root(host: HostSpec, lowerdirs: list[Path], root: Path | None = None) -> Path:
    """The host's root filesystem, mounted (again, after a machine restart) at rootfs/merged."""
    base = rootfs_dir(host, root)
    target = base / "merged"
    if images.is_mounted(target):
        return target
    missing = [str(d) for d in lowerdirs if not d.is_dir()]
    if missing or not lowerdirs:
        raise PreconditionError(
            f"the image of host {host.name} is no longer in the cache ({', '.join(missing) or 'no layers recorded'})",
            "take the cluster down and bring it up again (pbs-harness down; pbs-harness up --flavour system ...)",
        )
    for d in ("upper", "work", "merged"):
        (base / d).mkdir(parents=True, exist_ok=True)
    images.mount_overlay(lowerdirs, base / "upper", base / "work", target)
    return target


def _write(path: Path, text: str, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    path.chmod(mode)


def provision(spec: ClusterSpec, host: HostSpec, root: Path | None = None) -> None:
    """What makes the image this host (idempotent; written into the host's own upper layer)."""
    rfs = merged(host, root)
    _write(rfs / "etc/hostname", host.name + "\n", 0o644)
    if not (rfs / "etc/machine-id").read_text().strip():
        _write(rfs / "etc/machine-id", secrets.token_hex(16) + "\n", 0o444)
    # At the first boot only (the host's own layer has no /etc/hosts yet), as Debian's installer and
    # cloud-init's default leave it: the host's own name on 127.0.1.1. The openpbs_common role
    # replaces that with the cluster's addresses, as it must on real VMs, and later boots keep it.
    if not (rootfs_dir(host, root) / "upper/etc/hosts").exists():
        _write(rfs / "etc/hosts", f"127.0.0.1\tlocalhost\n127.0.1.1\t{host.name}\n", 0o644)
    hdir = state.host_dir(host.name, root)
    sshkeys.ensure_host_key(host, root, spec.login_user)  # the key pair known_hosts is written from
    for suffix, mode in (("", 0o600), (".pub", 0o644)):
        shutil.copyfile(hdir / f"ssh_host_ed25519_key{suffix}", rfs / f"etc/ssh/ssh_host_ed25519_key{suffix}")
        (rfs / f"etc/ssh/ssh_host_ed25519_key{suffix}").chmod(mode)
    access = (
        "PermitRootLogin prohibit-password"
        if spec.login_user is None
        else f"PermitRootLogin no\nAllowUsers {spec.login_user}"
    )
    _write(rfs / "etc/ssh/sshd_config.d/pbs-harness.conf", SSHD_DROPIN.format(access=access), 0o644)
    pub = sshkeys.client_key(root).with_suffix(".pub").read_text()
    if spec.login_user is None:
        _authorize(rfs, Path("/root"), pub, 0, 0)
    else:
        _login_account(rfs, spec.login_user, pub)


def _authorize(rfs: Path, home: Path, pub: str, uid: int, gid: int) -> None:
    ssh = rfs / home.relative_to("/") / ".ssh"
    ssh.mkdir(parents=True, exist_ok=True)
    os.chown(ssh, uid, gid)
    ssh.chmod(0o700)
    _write(ssh / "authorized_keys", pub, 0o600)
    os.chown(ssh / "authorized_keys", uid, gid)


def _login_account(rfs: Path, user: str, pub: str) -> None:
    """The login user of a cloud image: an account of the host's own, sudo without a password."""
    if shell.run(["chroot", str(rfs), "id", "-u", user]).rc != 0:
        shell.check(["chroot", str(rfs), "useradd", "--create-home", "--user-group", "--shell", "/bin/bash", user])
        shell.check(["chroot", str(rfs), "usermod", "--password", "*", user])
    uid = int(shell.check(["chroot", str(rfs), "id", "-u", user]).strip())
    gid = int(shell.check(["chroot", str(rfs), "id", "-g", user]).strip())
    _authorize(rfs, Path("/home") / user, pub, uid, gid)
    _write(rfs / f"etc/sudoers.d/90-{user}", LOGIN_SUDOERS.format(user=user), 0o440)


def is_running(host: HostSpec) -> bool:
    return cgroups.is_running(host.name)


def boot(spec: ClusterSpec, host: HostSpec, lowerdirs: list[Path], root: Path | None = None) -> None:
    """Boot the host (systemd as PID 1) unless it runs; the caller waits for its sshd."""
    if is_running(host):
        return
    rfs = mount_root(host, lowerdirs, root)
    provision(spec, host, root)
    cgroups.remove(host.name, keep_top=True)  # what a crash left of the last boot's groups
    nspawn.start(host.name, nspawn.boot_argv(rfs, host.name, host.netns), console_log(host, root))


def remove(host: HostSpec, root: Path | None = None) -> None:
    """Stop the host and remove its disk (the upper layer); the cached image stays."""
    cgroups.kill_all(host.name, label=f"host {host.name}")
    cgroups.remove(host.name)
    images.umount(merged(host, root))
    shutil.rmtree(rootfs_dir(host, root), ignore_errors=True)
