"""Harness SSH material: one client key, per-host host keys, known_hosts and ssh_config.

Host keys are generated here, so known_hosts is written from them and host-key checking stays
on even for the local cluster.
"""

from __future__ import annotations

from pathlib import Path

from pbs_harness.common import shell
from pbs_harness.localcluster import state
from pbs_harness.localcluster.spec import ClusterSpec, HostSpec

SSHD_CONFIG = """\
# sshd of namespaced host {name} (written by pbs-harness): key-only, {who}.
ListenAddress {ip}
Port 22
HostKey {hostdir}/ssh_host_ed25519_key
PidFile /run/sshd.pid
{access}
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AuthorizedKeysFile {authorized_keys}
UsePAM no
UseDNS no
X11Forwarding no
MaxSessions 100
MaxStartups 100:30:200
Subsystem sftp internal-sftp
"""


def client_key(root: Path | None = None) -> Path:
    return state.ssh_dir(root) / "id_ed25519"


def known_hosts(root: Path | None = None) -> Path:
    return state.ssh_dir(root) / "known_hosts"


def ssh_config(root: Path | None = None) -> Path:
    return state.ssh_dir(root) / "config"


def ensure_client_key(root: Path | None = None) -> None:
    d = state.ssh_dir(root)
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = client_key(root)
    if not key.exists():
        shell.check(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pbs-harness", "-f", str(key)])
    auth = d / "authorized_keys"
    pub = key.with_suffix(".pub").read_text()
    if not auth.exists() or auth.read_text() != pub:
        auth.write_text(pub)
    auth.chmod(0o600)


def _access(login_user: str | None) -> tuple[str, str]:
    """Who may log in: root by key only, or only the login user (root refused, as on cloud images)."""
    if login_user is None:
        return "root by key only", "PermitRootLogin prohibit-password"
    return f"only {login_user} (root refused)", f"PermitRootLogin no\nAllowUsers {login_user}\nStrictModes yes"


def ensure_host_key(host: HostSpec, root: Path | None = None, login_user: str | None = None) -> None:
    hdir = state.host_dir(host.name, root)
    hdir.mkdir(parents=True, exist_ok=True, mode=0o755)
    key = hdir / "ssh_host_ed25519_key"
    if not key.exists():
        shell.check(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", host.name, "-f", str(key)])
    who, access = _access(login_user)
    (hdir / "sshd_config").write_text(
        SSHD_CONFIG.format(
            who=who,
            access=access,
            name=host.name,
            ip=host.ip,
            hostdir=hdir,
            authorized_keys=state.ssh_dir(root) / "authorized_keys",
        )
    )


def write_client_files(spec: ClusterSpec, root: Path | None = None) -> None:
    lines = []
    cfg = []
    for host in spec.hosts:
        pub = (state.host_dir(host.name, root) / "ssh_host_ed25519_key.pub").read_text().split()
        lines.append(f"{host.name},{host.ip} {pub[0]} {pub[1]}")
        cfg.append(
            f"Host {host.name}\n  HostName {host.ip}\n  User {spec.ssh_user}\n  IdentityFile {client_key(root)}\n"
            f"  IdentitiesOnly yes\n  UserKnownHostsFile {known_hosts(root)}\n  StrictHostKeyChecking yes\n"
            "  PasswordAuthentication no\n  ConnectTimeout 5\n"
        )
    known_hosts(root).write_text("\n".join(lines) + "\n")
    ssh_config(root).write_text("\n".join(cfg))
