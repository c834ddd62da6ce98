"""A command's connection lost, or its channel refused, on a real SSH server (tests/unit/sshserver.py).

What it proves about pbs_harness/remote/transport.py: a command whose connection dies while it runs is
an UnreachableError at once (not a wait for its whole timeout: a teardown's `qmgr -c 'list hook'` waited
120 s that way in final run 2 of 2026-11-28) and is never sent again; a channel the host refuses on a
live connection is opened again, and the commands other threads run on that connection meanwhile end
normally (the suite's reads run at once on one connection per host: common/fanout.py).
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from pbs_harness.common.errors import UnreachableError
from pbs_harness.remote.inventory import InventoryHost
from pbs_harness.remote.transport import RemoteHost
from tests.unit.sshserver import SSHServer


@pytest.fixture
def client_key(tmp_path: Path) -> Path:
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pbsh-test", "-f", str(key)], check=True)
    return key


def remote_to(server: SSHServer, key: Path, tmp_path: Path) -> RemoteHost:
    known = tmp_path / "known_hosts"
    known.write_text(server.known_hosts_line())
    args = f"-o UserKnownHostsFile={known} -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes"
    host = InventoryHost(
        "127.0.0.1",
        {"ansible_host": "127.0.0.1", "ansible_port": server.port, "ansible_user": "root",
         "ansible_ssh_private_key_file": str(key), "ansible_ssh_common_args": args},
        frozenset({"pbs_moms"}),
    )  # fmt: skip
    return RemoteHost(host.ssh_target(), connect_timeout=10)


def test_a_command_whose_connection_dies_fails_at_once_and_is_not_sent_again(client_key: Path, tmp_path: Path) -> None:
    with SSHServer(client_key.with_suffix(".pub").read_text()) as server:
        remote = remote_to(server, client_key, tmp_path)
        try:
            assert remote.run("id -un").stdout == "ran: id -un\n"  # connected
            failure: list[BaseException] = []

            def run_held() -> None:
                try:
                    remote.run("hold qmgr -c 'list hook'", timeout=30)
                except BaseException as exc:  # noqa: BLE001 - kept for the assertions below
                    failure.append(exc)

            runner = threading.Thread(target=run_held)
            runner.start()
            assert server.held.wait(10)
            started = time.monotonic()
            server.drop_connections()
            runner.join(20)
            assert not runner.is_alive()
            took = time.monotonic() - started
            assert took < 5, f"the lost command waited {took:.1f}s (its timeout is 30 s)"
            assert len(failure) == 1, failure
            assert isinstance(failure[0], UnreachableError), failure
            assert "lost while `hold qmgr -c 'list hook'` ran" in str(failure[0])
            assert server.record.commands.count("hold qmgr -c 'list hook'") == 1, server.record.commands
            # The next command gets a new connection.
            assert remote.run("hostname").stdout == "ran: hostname\n"
        finally:
            server.release.set()
            remote.close()


def test_a_refused_channel_is_opened_again_and_spares_the_others_commands(client_key: Path, tmp_path: Path) -> None:
    with SSHServer(client_key.with_suffix(".pub").read_text()) as server:
        remote = remote_to(server, client_key, tmp_path)
        try:
            assert remote.run("id -un").ok
            results: list[object] = []
            runner = threading.Thread(target=lambda: results.append(remote.run("hold list hook", timeout=20)))
            runner.start()
            assert server.held.wait(10)
            server.refuse_sessions = 1  # the next channel open is refused, as by sshd past its MaxSessions
            assert remote.run("pbsnodes -av").stdout == "ran: pbsnodes -av\n"
            assert server.refuse_sessions == 0, "the refusal was met"
            server.release.set()
            runner.join(20)
            assert [getattr(r, "stdout", r) for r in results] == ["ran: hold list hook\n"]
            assert server.record.commands.count("pbsnodes -av") == 1
        finally:
            server.release.set()
            remote.close()
