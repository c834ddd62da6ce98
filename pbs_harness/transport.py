"""Remote execution: one persistent paramiko connection per host, typed results.

A command is a string (run by bash on the host) or an argv list (quoted here). `run` never
raises on a non-zero exit; `check` does. Connections are reused and re-opened once after a
broken transport (host crashed and booted). Every command can be recorded in a transcript.

Commands run as root. When the login account is not root and the target says `become` (the
inventory's ansible_become, as on cloud images), each command is wrapped in `sudo -n`.
"""

from __future__ import annotations

import select
import shlex
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import paramiko

from pbs_harness.errors import PreconditionError, UnreachableError

Command = str | Sequence[str]


@dataclass(frozen=True)
class CommandResult:
    """Outcome of one remote command."""

    host: str
    command: str
    rc: int
    stdout: str
    stderr: str
    user: str = "root"
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.rc == 0


class CommandError(AssertionError):
    """A remote command that had to succeed did not."""

    def __init__(self, result: CommandResult) -> None:
        super().__init__(
            f"{result.user}@{result.host}: `{result.command}` exited {result.rc}\n"
            f"stdout: {result.stdout.strip()}\nstderr: {result.stderr.strip()}"
        )
        self.result = result


def to_shell(cmd: Command) -> str:
    return cmd if isinstance(cmd, str) else shlex.join(cmd)


def as_user(cmd: str, user: str) -> str:
    """Wrap a command to run as an unprivileged user with a login environment."""
    return f"runuser -l {shlex.quote(user)} -c {shlex.quote(cmd)}"


# What sudo -n prints when the login account may not run the command without a password.
_SUDO_REFUSED = ("sudo: a password is required", "is not in the sudoers file", "may not run sudo on")


@dataclass(frozen=True)
class SSHTarget:
    """How to reach a host: address, login user, key, known_hosts file, and privilege escalation."""

    name: str
    address: str
    user: str = "root"
    port: int = 22
    key_file: str | None = None
    known_hosts: str | None = None
    strict_host_keys: bool = True
    become: bool = False
    become_user: str = "root"

    @property
    def escalates(self) -> bool:
        """True when commands must go through sudo to run as become_user."""
        return self.become and self.user != self.become_user

    @property
    def effective_user(self) -> str:
        return self.become_user if self.escalates else self.user


def wire_command(target: SSHTarget, text: str, user: str | None = None) -> str:
    """The command line sent to the host: `text` as the effective user (root), or as `user` with a
    login environment; through `sudo -n` when the login account escalates.

    `sudo -n` fails at once instead of waiting for a password; bash keeps the meaning the command
    has as root's login-shell command (sshd runs it with root's shell)."""
    cmd = as_user(text, user) if user else text
    if not target.escalates:
        return cmd
    who = "" if target.become_user == "root" else f"-u {shlex.quote(target.become_user)} "
    if user:
        return f"sudo -n {who}-- {cmd}"
    return f"sudo -n {who}-- bash -c {shlex.quote(cmd)}"


Recorder = Callable[[CommandResult], None]


class RemoteHost:
    """A host reached over one cached SSH connection."""

    def __init__(self, target: SSHTarget, connect_timeout: float = 10) -> None:
        self.target = target
        self.name = target.name
        self.connect_timeout = connect_timeout
        self._client: paramiko.SSHClient | None = None
        self._lock = threading.Lock()
        self.recorders: list[Recorder] = []

    def _connect(self) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        if self.target.known_hosts and Path(self.target.known_hosts).exists():
            client.load_host_keys(self.target.known_hosts)
        else:
            client.load_system_host_keys()
        policy = paramiko.RejectPolicy() if self.target.strict_host_keys else paramiko.WarningPolicy()
        client.set_missing_host_key_policy(policy)
        try:
            client.connect(
                self.target.address,
                port=self.target.port,
                username=self.target.user,
                key_filename=self.target.key_file,
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
                allow_agent=False,
                look_for_keys=self.target.key_file is None,
            )
        except (OSError, paramiko.SSHException) as exc:
            raise UnreachableError(
                f"cannot reach {self.name} ({self.target.address}:{self.target.port}): {exc}",
                "check the host is up and its inventory connection variables",
            ) from exc
        transport = client.get_transport()
        if transport is not None:
            transport.set_keepalive(15)
        return client

    def _client_ok(self) -> paramiko.SSHClient:
        with self._lock:
            tr = self._client.get_transport() if self._client else None
            if self._client is None or tr is None or not tr.is_active():
                self.close()
                self._client = self._connect()
            return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def run(
        self, cmd: Command, *, user: str | None = None, timeout: float = 120, stdin: str | None = None
    ) -> CommandResult:
        """Run cmd on the host (as root, or as `user`); reconnect once if the transport broke."""
        text = to_shell(cmd)
        result = self._run(
            text, wire_command(self.target, text, user), user or self.target.effective_user, timeout, stdin
        )
        if self.target.escalates and result.rc == 1 and any(s in result.stderr for s in _SUDO_REFUSED):
            raise PreconditionError(
                f"{self.target.user}@{self.name}: sudo refused to run `{text}` without a password: "
                f"{result.stderr.strip()[:200]}",
                f"give {self.target.user} passwordless sudo on the host (NOPASSWD), as cloud images do, "
                "or log in as root (ansible_user: root)",
            )
        return result

    def run_as_login(self, cmd: Command, *, timeout: float = 120) -> CommandResult:
        """Run cmd as the login account itself, never through sudo (e.g. to read the session's
        SSH_CONNECTION, which sudo's env_reset would clear)."""
        text = to_shell(cmd)
        return self._run(text, text, self.target.user, timeout, None)

    def _run(self, text: str, wire: str, who: str, timeout: float, stdin: str | None) -> CommandResult:
        start = time.monotonic()
        for attempt in (1, 2):
            client = self._client_ok()
            try:
                rc, out, err = _exec(client, wire, timeout, stdin)
                break
            except (paramiko.SSHException, EOFError, ConnectionError) as exc:
                self.close()
                if attempt == 2:
                    raise UnreachableError(f"{self.name}: connection lost running `{text}`: {exc}") from exc
        result = CommandResult(self.name, text, rc, out, err, who, time.monotonic() - start)
        for record in self.recorders:
            record(result)
        return result

    def check(self, cmd: Command, **kwargs: object) -> CommandResult:
        """Run cmd and raise CommandError unless it exits 0."""
        __tracebackhide__ = True
        result = self.run(cmd, **kwargs)  # type: ignore[arg-type]
        if not result.ok:
            raise CommandError(result)
        return result


def _exec(client: paramiko.SSHClient, cmd: str, timeout: float, stdin: str | None) -> tuple[int, str, str]:
    """Run cmd on a new channel; read stdout and stderr until EOF *and* the exit status arrived.

    sshd may send the exit status before the last output (the child exited while its pipe still
    held data), so the exit status alone does not mean the output is complete: EOF does.
    """
    transport = client.get_transport()
    if transport is None:
        raise paramiko.SSHException("no transport")
    chan = transport.open_session(timeout=10)
    try:
        chan.exec_command(cmd)
        if stdin is not None:
            chan.sendall(stdin.encode())
        chan.shutdown_write()
        out, err = bytearray(), bytearray()
        deadline = time.monotonic() + timeout
        while True:
            while chan.recv_ready():
                out += chan.recv(65536)
            while chan.recv_stderr_ready():
                err += chan.recv_stderr(65536)
            if chan.eof_received and chan.exit_status_ready() and not (chan.recv_ready() or chan.recv_stderr_ready()):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"`{cmd}` did not finish within {timeout}s")
            select.select([chan], [], [], 0.005)  # wakes on data, stderr or EOF (not on exit status)
        rc = chan.recv_exit_status()
    finally:
        chan.close()
    return rc, out.decode(errors="replace"), err.decode(errors="replace")
