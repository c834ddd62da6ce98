"""The harness's own SSH goes where Ansible's goes (#23 item 9): ~/.ssh/config (or `-F FILE` in the
inventory's ssh arguments), ProxyJump through a bastion, and the keys of an ssh-agent.

Real: OpenSSH's `ssh -G` (what the route is read from) and `ssh -W` (how a ProxyJump is travelled),
a real ssh-agent holding a key made here, the harness's transport, and SSH servers on loopback
(tests/unit/sshserver.py: paramiko's server side, accepting one key, answering `ran: COMMAND`, and
forwarding TCP for the bastion). Host names of the inventories are names only ssh's configuration
resolves; every connection goes to 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pbs_harness.common.errors import PreconditionError, UnreachableError
from pbs_harness.common.waits import wait_until
from pbs_harness.remote import sshconfig
from pbs_harness.remote.inventory import InventoryHost
from pbs_harness.remote.transport import RemoteHost
from tests.unit.sshserver import SSHServer

pytestmark = pytest.mark.skipif(not shutil.which("ssh"), reason="needs the OpenSSH client (openssh-client)")


@pytest.fixture(autouse=True)
def fresh_routes() -> Iterator[None]:
    """Routes are cached per process; each test writes its own ssh configuration."""
    sshconfig.resolve.cache_clear()
    yield
    sshconfig.resolve.cache_clear()


@pytest.fixture
def client_key(tmp_path: Path) -> Path:
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pbsh-test", "-f", str(key)], check=True)
    return key


def host(name: str, **hostvars: object) -> InventoryHost:
    return InventoryHost(name, {"ansible_host": name, **hostvars}, frozenset({"pbs_moms"}))


def bastion_config(path: Path, bastion: SSHServer, node: SSHServer, key: Path, known: Path) -> Path:
    """An ssh configuration: `bastion` is a jump host, `node-behind` is reached only through it."""
    known.write_text(bastion.known_hosts_line() + node.known_hosts_line())
    path.write_text(
        f"Host bastion\n  HostName 127.0.0.1\n  Port {bastion.port}\n  User jumper\n  IdentityFile {key}\n"
        f"  IdentitiesOnly yes\n  UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n  BatchMode yes\n\n"
        f"Host node-behind\n  HostName 127.0.0.1\n  Port {node.port}\n  User ops\n  IdentityFile {key}\n"
        f"  UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n  ProxyJump bastion\n"
    )
    return path


def test_proxyjump_through_a_bastion_from_an_ssh_config_file(client_key: Path, tmp_path: Path) -> None:
    """The inventory says only `ansible_host: node-behind` and `-F FILE`, as an Ansible user would; the
    harness logs in to the node through the bastion, which opened the forward to it."""
    public = client_key.with_suffix(".pub").read_text()
    with SSHServer(public, forwards=True) as bastion, SSHServer(public) as node:
        config = bastion_config(tmp_path / "ssh_config", bastion, node, client_key, tmp_path / "known_hosts")
        inv_host = host("node-behind", ansible_ssh_common_args=f"-F {config}")
        target = inv_host.ssh_target()

        assert (target.hostname, target.port, target.user) == ("127.0.0.1", node.port, "ops")
        assert target.through == "through bastion (ProxyJump)"
        assert target.strict_host_keys
        assert inv_host.probe_endpoint() == ("127.0.0.1", bastion.port)  # the TCP probe goes to the bastion
        remote = RemoteHost(target, connect_timeout=20)
        try:
            result = remote.run("hostname")
        finally:
            remote.close()

    assert result.stdout == "ran: hostname\n"
    assert node.record.commands == ["hostname"]
    assert bastion.record.forwards == [("127.0.0.1", node.port)]  # the node was reached through the bastion
    assert set(bastion.record.users) == {"jumper"}  # (ssh asks whether a key would do, then signs: twice)
    assert set(node.record.users) == {"ops"}


def test_a_bastion_that_refuses_the_key_is_named(client_key: Path, tmp_path: Path) -> None:
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    with (
        SSHServer(other.with_suffix(".pub").read_text(), forwards=True) as bastion,
        SSHServer(client_key.with_suffix(".pub").read_text()) as node,
    ):
        config = bastion_config(tmp_path / "ssh_config", bastion, node, client_key, tmp_path / "known_hosts")
        remote = RemoteHost(host("node-behind", ansible_ssh_common_args=f"-F {config}").ssh_target(), 10)
        with pytest.raises(UnreachableError) as err:
            remote.run("hostname")
    assert f"cannot reach node-behind (127.0.0.1:{node.port}, through bastion (ProxyJump))" in err.value.message
    assert "the proxy command said: jumper@127.0.0.1: Permission denied (publickey)" in err.value.message
    assert node.record.commands == []


@pytest.fixture
def agent(tmp_path: Path, client_key: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A real ssh-agent holding `client_key` (SSH_AUTH_SOCK points at it); the key file itself is removed,
    so only the agent can offer it."""
    sock = tmp_path / "agent.sock"
    proc = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        wait_until(sock.exists, bool, timeout=10, describe="ssh-agent's socket")
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        subprocess.run(["ssh-add", "-q", str(client_key)], env=env, check=True, capture_output=True)
        client_key.unlink()
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        yield sock
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_agent_offers_its_keys_when_the_inventory_names_none(agent: Path, client_key: Path, tmp_path: Path) -> None:
    public = client_key.with_suffix(".pub").read_text()
    with SSHServer(public) as node:
        known = tmp_path / "known_hosts"
        known.write_text(node.known_hosts_line())
        args = f"-o UserKnownHostsFile={known} -o StrictHostKeyChecking=yes"
        direct = host("127.0.0.1", ansible_port=node.port, ansible_user="ops", ansible_ssh_common_args=args)
        target = direct.ssh_target()
        assert target.allow_agent
        assert target.key_file is None
        remote = RemoteHost(target, connect_timeout=10)
        try:
            assert remote.run("id -un").stdout == "ran: id -un\n"
        finally:
            remote.close()
        # IdentitiesOnly limits ssh to the keys it names, the agent's included: the harness follows.
        only = f"{args} -o IdentitiesOnly=yes"
        limited = host("127.0.0.1", ansible_port=node.port, ansible_user="ops", ansible_ssh_common_args=only)
        assert not limited.ssh_target().allow_agent


def test_the_agent_carries_the_jump_too(agent: Path, client_key: Path, tmp_path: Path) -> None:
    """ProxyJump and agent together, the common bastion setup: no key file anywhere, both hops log in."""
    public = client_key.with_suffix(".pub").read_text()
    with SSHServer(public, forwards=True) as bastion, SSHServer(public) as node:
        known = tmp_path / "known_hosts"
        known.write_text(bastion.known_hosts_line() + node.known_hosts_line())
        config = tmp_path / "ssh_config"
        config.write_text(
            f"Host bastion\n  HostName 127.0.0.1\n  Port {bastion.port}\n  User jumper\n"
            f"  UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n\n"
            f"Host node-behind\n  HostName 127.0.0.1\n  Port {node.port}\n  User ops\n"
            f"  UserKnownHostsFile {known}\n  ProxyJump bastion\n"
        )
        remote = RemoteHost(host("node-behind", ansible_ssh_common_args=f"-F {config}").ssh_target(), 20)
        try:
            assert remote.run("true").stdout == "ran: true\n"
        finally:
            remote.close()
    assert bastion.record.forwards == [("127.0.0.1", node.port)]


def test_an_ssh_option_ssh_does_not_know_is_bad_input() -> None:
    with pytest.raises(PreconditionError) as err:
        host("n1", ansible_ssh_common_args="-o NoSuchOption=1").ssh_target()
    assert "host n1: ssh cannot work out how to reach n1: command-line: line 0: Bad configuration option" in str(
        err.value
    )
    assert "fix ansible_ssh_common_args / ansible_ssh_extra_args in the inventory, or ~/.ssh/config" in str(err.value)


HOME_CONFIG_PROBE = """
import json, sys
from pbs_harness.remote.inventory import InventoryHost
t = InventoryHost("node-behind", {"ansible_host": "node-behind"}, frozenset()).ssh_target()
print(json.dumps([t.hostname, t.port, t.user, t.through, t.strict_host_keys]))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare")
def test_the_users_own_ssh_config_is_read(client_key: Path, tmp_path: Path) -> None:
    """~/.ssh/config itself, with no -F: in a mount namespace of its own, a folder made here is mounted
    on the account's ~/.ssh (this machine's is never touched), holding the bastion configuration."""
    import json
    import pwd

    home_ssh = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".ssh"
    if not home_ssh.is_dir():
        pytest.skip(f"{home_ssh} does not exist to mount over")
    dot_ssh = tmp_path / "dot-ssh"
    dot_ssh.mkdir(mode=0o700)
    public = client_key.with_suffix(".pub").read_text()
    with SSHServer(public, forwards=True) as bastion, SSHServer(public) as node:
        bastion_config(dot_ssh / "config", bastion, node, client_key, dot_ssh / "known_hosts")
        inner = f'mount --bind {dot_ssh} {home_ssh} && exec "$@"'
        probe = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner, "sh", sys.executable, "-c",
             HOME_CONFIG_PROBE],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        assert probe.returncode == 0, probe.stderr
        assert json.loads(probe.stdout) == ["127.0.0.1", node.port, "ops", "through bastion (ProxyJump)", True]


def test_a_bastion_that_does_not_answer_is_named_with_the_way_there(tmp_path: Path) -> None:
    """The TCP probe before a session goes to the first jump host (the node itself is not reachable from
    here); when that does not answer, the message says which way the node is reached."""
    from pbs_harness.remote import inventory as inventory_mod
    from pbs_harness.remote.inventory import Inventory

    config = tmp_path / "ssh_config"
    config.write_text(
        "Host bastion\n  HostName 127.0.0.1\n  Port 9\n\nHost node-behind\n  HostName 127.0.0.1\n  Port 2222\n"
        "  ProxyJump bastion\n"
    )
    node = host("node-behind", ansible_ssh_common_args=f"-F {config}")
    server = InventoryHost("node-behind", node.vars, frozenset({"pbs_server", "pbs_moms"}))
    inv = Inventory(tmp_path, {"node-behind": server}, {"pbs_server": ["node-behind"], "pbs_moms": ["node-behind"]})
    with pytest.raises(UnreachableError) as err:
        inventory_mod.check_reachable(inv, timeout=2)
    assert (
        "did not answer on their SSH port within 2s: node-behind (its way there, 127.0.0.1:9, through bastion "
        "(ProxyJump)): Connection refused"
    ) in err.value.message
