"""A command's connection lost, or its channel refused, on a real SSH server (tests/unit/sshserver.py).

What it proves about pbs_harness/remote/transport.py: a command whose connection dies while it runs is
an UnreachableError at once (not a wait for its whole timeout: a teardown's `qmgr -c 'list hook'` waited
120 s that way in final run 2 of 2026-11-28) and is never sent again; a channel the host refuses on a
live connection is opened again, and the commands other threads run on that connection meanwhile end
normally (the suite's reads run at once on one connection per host: common/fanout.py).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import paramiko
import pytest

from pbs_harness.common.errors import UnreachableError
from pbs_harness.remote import transport as transport_mod
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


class _ChannelEndingBetweenChecks:
    """A channel whose EOF and close both arrive between _exec's check for the end and its check for a
    closed channel (the transport's thread handles them back to back): a normal end, not a lost command.
    Faked because the real interleaving cannot be forced; what it proves is the order of the checks."""

    def __init__(self) -> None:
        self._reads, self._w = os.pipe()
        os.write(self._w, b"x")  # always readable: select() returns at once
        self._eof_reads = 0
        self.closed = True
        self.sent = False
        self.lock = threading.Lock()
        self.transport = None

    def _send_eof(self) -> None:
        return None

    @property
    def eof_received(self) -> bool:
        self._eof_reads += 1
        return self._eof_reads > 1  # not yet at the first check, there by the second

    def fileno(self) -> int:
        return self._reads

    def exec_command(self, cmd: str) -> None:
        self.sent = True

    def recv_ready(self) -> bool:
        return False

    recv_stderr_ready = recv_ready

    def exit_status_ready(self) -> bool:
        return True

    def recv_exit_status(self) -> int:
        return 0

    def close(self) -> None:
        os.close(self._reads)
        os.close(self._w)


def _client_opening(open_session: Callable[[], object]) -> object:
    """A fake SSHClient whose live transport opens a channel with `open_session()`."""

    class Transport:
        def is_active(self) -> bool:
            return True

        def open_session(self, timeout: float) -> object:
            return open_session()

    class Client:
        def get_transport(self) -> Transport:
            return Transport()

    return Client()


def test_eof_and_close_arriving_together_are_a_normal_end() -> None:
    chan = _ChannelEndingBetweenChecks()
    client = _client_opening(lambda: chan)
    assert transport_mod._exec(client, "qstat -Qf -F json", 5, None) == (0, "", "")  # type: ignore[arg-type]
    assert chan.sent


def test_a_channel_refused_with_an_exception_without_text_names_its_type() -> None:
    """CI (28 Nov) printed `cannot run ...: opening a channel:` and nothing after: paramiko raised an
    exception with no text (EOFError() of an ended connection). Faked: the transport; real: _exec."""

    def refuse() -> None:
        raise EOFError

    with pytest.raises(transport_mod._NotSent, match=r"^opening a channel: EOFError$"):
        transport_mod._exec(_client_opening(refuse), "qstat -Qf -F json", 5, None)  # type: ignore[arg-type]


def test_a_read_whose_connection_dies_is_read_again_and_the_loss_is_recorded(client_key: Path, tmp_path: Path) -> None:
    with SSHServer(client_key.with_suffix(".pub").read_text()) as server:
        remote = remote_to(server, client_key, tmp_path)
        seen: list[object] = []
        remote.recorders.append(seen.append)
        try:
            assert remote.run("id -un").ok
            results: list[object] = []
            runner = threading.Thread(target=lambda: results.append(remote.run("/opt/pbs/bin/qstat -Bf hold")))
            runner.start()
            assert server.held.wait(10)
            server.drop_connections()
            server.release.set()  # the read made again is answered
            runner.join(20)
            assert [getattr(r, "stdout", r) for r in results] == ["ran: /opt/pbs/bin/qstat -Bf hold\n"]
            assert server.record.commands.count("/opt/pbs/bin/qstat -Bf hold") == 2
            lost = [r for r in seen if getattr(r, "rc", 0) == -1]
            assert len(lost) == 1
            assert "connection lost while it ran" in lost[0].stderr  # type: ignore[attr-defined]
        finally:
            server.release.set()
            remote.close()


@pytest.mark.parametrize(
    ("line", "reads"),
    [
        ("/opt/pbs/bin/qstat -Bf -F json", True),
        ("/opt/pbs/bin/qmgr -c 'list hook'", True),
        ("/opt/pbs/bin/qmgr -c 'print server'", True),
        ("/opt/pbs/bin/pbsnodes -av -F json", True),
        ("cat /var/spool/pbs/mom_priv/config", True),
        ("/opt/pbs/bin/qmgr -c 'set server scheduling=true'", False),
        ("/opt/pbs/bin/qsub -l select=1 job.sh", False),
        ("/opt/pbs/bin/qdel 12", False),
        ("cat /etc/x > /etc/y", False),
        ("ls /tmp; rm -rf /tmp/x", False),
        ("systemctl restart pbs", False),
    ],
)
def test_only_reads_are_made_again(line: str, reads: bool) -> None:
    assert transport_mod.reads_only(line) is reads


def test_our_eof_goes_out_before_a_close_the_transport_thread_sends_meanwhile() -> None:
    """paramiko 5.1's shutdown_write() sends the EOF after releasing the channel's lock, so the transport
    thread's CLOSE (handled under that lock) could go first, and OpenSSH drops the whole connection for an
    EOF on a freed channel. Faked: the channel's messages (recorded, not sent); real: paramiko's Channel
    lock and EOF bookkeeping, and _send_eof's order against a thread that sends CLOSE under the lock."""
    sent: list[str] = []

    class Transport:
        def _send_user_message(self, message: object) -> None:
            time.sleep(0.2)  # the transport thread, waiting for the lock, gets its turn if it is free
            sent.append("EOF")

    chan = paramiko.Channel(4)
    chan.transport = Transport()  # type: ignore[assignment]
    chan.active = True
    ready = threading.Event()

    def transport_thread_handles_close() -> None:
        ready.wait()
        with chan.lock:
            sent.append("CLOSE")

    closer = threading.Thread(target=transport_thread_handles_close)
    closer.start()
    original = chan._send_eof

    def build_then_let_the_closer_run() -> object:
        message = original()
        ready.set()  # the host's CLOSE has arrived: the transport thread now wants the lock
        time.sleep(0.05)
        return message

    chan._send_eof = build_then_let_the_closer_run  # type: ignore[method-assign]
    transport_mod._send_eof(chan)
    closer.join(5)
    assert sent == ["EOF", "CLOSE"]
