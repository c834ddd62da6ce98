"""A small SSH server on loopback for the SSH-route tests (tests/unit/test_ssh_routes.py).

It is a real SSH server (paramiko's server side), not a fake of a host: it accepts one public key,
answers each command with `ran: COMMAND` on stdout and exit status 0 (one with a word `hold` only
after the test sets `release`; `refuse_sessions` and `drop_connections` play a busy or a crashed
host), and, when it may forward, opens the TCP connections a client asks for (direct-tcpip: what
`ssh -W` and ProxyJump use) and relays them. It records the commands it ran and the forwards it
opened, the evidence the tests read.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field

import paramiko


@dataclass
class Record:
    commands: list[str] = field(default_factory=list)
    forwards: list[tuple[str, int]] = field(default_factory=list)
    users: list[str] = field(default_factory=list)


class _Handler(paramiko.ServerInterface):
    def __init__(self, server: SSHServer) -> None:
        self.server = server

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        if key.get_base64() == self.server.client_key_base64:
            self.server.record.users.append(username)
            return paramiko.AUTH_SUCCESSFUL
        return paramiko.AUTH_FAILED

    def check_channel_request(self, kind: str, chanid: int) -> int:
        if kind == "session" and self.server.refuse_sessions > 0:
            self.server.refuse_sessions -= 1
            return paramiko.OPEN_FAILED_RESOURCE_SHORTAGE  # as sshd past its MaxSessions
        return paramiko.OPEN_SUCCEEDED if kind == "session" else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        text = command.decode()
        self.server.record.commands.append(text)

        def answer() -> None:
            with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
                channel.settimeout(10)
                while channel.recv(65536):  # the client's stdin, to its end (the harness always closes it)
                    pass
                if "hold" in text.split():  # answered only once the test releases it (or never)
                    self.server.held.set()
                    self.server.release.wait(60)
                channel.sendall(f"ran: {text}\n".encode())
                channel.send_exit_status(0)
                channel.shutdown_write()
                channel.close()

        threading.Thread(target=answer, daemon=True).start()
        return True

    def check_channel_direct_tcpip_request(self, chanid: int, origin: tuple, destination: tuple) -> int:
        if not self.server.forwards:
            return paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED
        self.server.record.forwards.append((destination[0], int(destination[1])))
        self.server.pending[chanid] = (destination[0], int(destination[1]))
        return paramiko.OPEN_SUCCEEDED


def _relay(channel: paramiko.Channel, destination: tuple[str, int]) -> None:
    """Pipe a forwarded channel to its destination and back until either side closes."""
    try:
        sock = socket.create_connection(destination, timeout=10)
    except OSError:
        channel.close()
        return

    def pump(read, write) -> None:  # read/write: a socket's or the channel's
        with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
            while data := read(65536):
                write(data)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        # The client may have closed the whole connection already: nothing left to tell it.
        with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
            channel.close()

    threading.Thread(target=pump, args=(channel.recv, sock.sendall), daemon=True).start()
    threading.Thread(target=pump, args=(sock.recv, channel.sendall), daemon=True).start()


class SSHServer:
    """`with SSHServer(client_public_key_line, forwards=True) as server:` listens on 127.0.0.1:server.port."""

    def __init__(self, client_public_key: str, *, forwards: bool = False) -> None:
        self.client_key_base64 = client_public_key.split()[1]
        self.forwards = forwards
        self.host_key = paramiko.ECDSAKey.generate()
        self.record = Record()
        self.pending: dict[int, tuple[str, int]] = {}
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._transports: list[paramiko.Transport] = []
        self.refuse_sessions = 0  # refuse this many channel opens, then accept again
        self.held = threading.Event()  # a `hold...` command arrived
        self.release = threading.Event()  # answer the `hold...` commands
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def known_hosts_line(self, name: str | None = None) -> str:
        """This server's key as known_hosts writes it for `[127.0.0.1]:PORT` (or `name`)."""
        return f"{name or f'[127.0.0.1]:{self.port}'} {self.host_key.get_name()} {self.host_key.get_base64()}\n"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            transport = paramiko.Transport(conn)
            transport.add_server_key(self.host_key)
            self._transports.append(transport)
            try:
                transport.start_server(server=_Handler(self))
            except (paramiko.SSHException, EOFError, OSError):
                continue
            threading.Thread(target=self._channels, args=(transport,), daemon=True).start()

    def _channels(self, transport: paramiko.Transport) -> None:
        while transport.is_active() and not self._stop.is_set():
            channel = transport.accept(0.2)
            if channel is not None and channel.get_id() in self.pending:
                _relay(channel, self.pending.pop(channel.get_id()))

    def drop_connections(self) -> None:
        """Every client connection closed from this side, as a host that crashed."""
        for transport in self._transports:
            transport.close()

    def __enter__(self) -> SSHServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._listener.close()
        for transport in self._transports:
            transport.close()
        self._thread.join(5)
