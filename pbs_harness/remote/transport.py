"""Remote execution: one persistent paramiko connection per host, typed results.

A command is a string (run by bash on the host) or an argv list (quoted here). `run` never
raises on a non-zero exit; `check` does. Connections are reused and re-opened after a broken
transport (host crashed and booted): a command that never reached the host is sent once more; one
whose connection died while it ran is made again once when it only reads (qstat, pbsnodes, qmgr
list...; the lost attempt is in the transcript), else an UnreachableError at once, never sent again
(it may have acted). Every command can be recorded in a transcript.

Commands run as root. When the login account is not root and the target says `become` (the
inventory's ansible_become, as on cloud images), each command is wrapped in `sudo -n`.
"""

from __future__ import annotations

import os
import re
import select
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import paramiko

from pbs_harness.common.errors import PreconditionError, UnreachableError

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
    """How to reach a host: address, login user, key, known_hosts file, and privilege escalation; for an
    inventory host, as OpenSSH would with its settings and ~/.ssh/config (pbs_harness.remote.sshconfig)."""

    name: str
    address: str  # what ssh is given (ansible_host): Host blocks of ~/.ssh/config match it
    user: str = "root"
    port: int = 22
    key_file: str | None = None
    known_hosts: str | None = None
    strict_host_keys: bool = True
    become: bool = False
    become_user: str = "root"
    hostname: str = ""  # where ssh connects (HostName); empty: the address
    identity_files: tuple[str, ...] = ()  # keys to offer besides key_file (IdentityFile), existing files
    known_hosts_files: tuple[str, ...] = ()  # every known_hosts file ssh reads; empty: known_hosts
    allow_agent: bool = False  # the ssh-agent (SSH_AUTH_SOCK) may offer its keys
    proxy_command: str | None = None  # the way there: ProxyCommand, or `ssh -W` for a ProxyJump
    through: str = "directly"  # that way, for messages
    ssh_args: tuple[str, ...] = ()  # the inventory's ssh arguments, for programs that run ssh itself

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


class ProxyProcess(paramiko.ProxyCommand):
    """paramiko's ProxyCommand (the connection through a command such as `ssh -W`), ending at the command's
    end of output (paramiko's own read waits out its timeout, spinning) and keeping what it said on stderr."""

    def recv(self, size: int) -> bytes:
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError("no data from the proxy command")
            ready, _, _ = select.select([self.process.stdout], [], [], left)
            if ready:
                return os.read(self.process.stdout.fileno(), size)  # b"": the command ended, the connection too

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def said(self) -> str:
        """What the command printed on stderr (call after close)."""
        try:
            return self.process.stderr.read().decode(errors="replace").strip()
        except (OSError, ValueError):
            return ""


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
        target = self.target
        client = paramiko.SSHClient()
        known = target.known_hosts_files or ((target.known_hosts,) if target.known_hosts else ())
        known = tuple(k for k in known if Path(k).exists())
        for path in known:
            client.load_host_keys(path)
        if not known:
            client.load_system_host_keys()
        policy = paramiko.RejectPolicy() if target.strict_host_keys else paramiko.WarningPolicy()
        client.set_missing_host_key_policy(policy)
        keys = list(dict.fromkeys([*([target.key_file] if target.key_file else []), *target.identity_files]))
        # The way there: a ProxyCommand process (OpenSSH's `ssh -W` for a ProxyJump) carries the connection.
        sock = ProxyProcess(target.proxy_command) if target.proxy_command else None
        try:
            client.connect(
                target.hostname or target.address,
                port=target.port,
                username=target.user,
                key_filename=keys or None,
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
                allow_agent=target.allow_agent,
                look_for_keys=not keys,
                sock=sock,
            )
        except (OSError, EOFError, paramiko.SSHException) as exc:
            said = ""
            if sock is not None:
                sock.close()
                said = sock.said().replace("\r", "").replace("\n", " ")
                said = f"; the proxy command said: {said[-500:]}" if said else ""
            where = f"{target.hostname or target.address}:{target.port}"
            raise UnreachableError(
                f"cannot reach {self.name} ({where}{'' if target.through == 'directly' else ', ' + target.through})"
                f": {_said(exc)}{said}",
                "check the host is up and its inventory connection variables (and ~/.ssh/config: "
                f"`ssh -G {target.address}` shows what OpenSSH makes of them)",
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
            except _NotSent as exc:  # the host never got the command: sending it again is safe
                self._drop_if_dead(client)
                if attempt == 2:
                    raise UnreachableError(f"{self.name}: cannot run `{text}`: {exc}") from exc
            except _LostWhileRunning as exc:
                self._drop_if_dead(client)
                if attempt == 1 and reads_only(text):
                    # A read changes nothing on the host, so it is made again on a new connection; the
                    # lost attempt stays in the transcript. Anything else is never sent twice: it may
                    # have acted (a qsub twice is two jobs).
                    lost = CommandResult(
                        self.name,
                        text,
                        -1,
                        "",
                        f"connection lost while it ran ({exc}); read again on a new connection",
                        who,
                        time.monotonic() - start,
                    )
                    for record in self.recorders:
                        record(lost)
                    continue
                raise UnreachableError(
                    f"{self.name}: the connection was lost while `{text}` ran (it may have acted): {exc}",
                    "check that the host is up (a fault the test injected may have taken it down)",
                ) from exc
        result = CommandResult(self.name, text, rc, out, err, who, time.monotonic() - start)
        for record in self.recorders:
            record(result)
        return result

    def _drop_if_dead(self, client: paramiko.SSHClient) -> None:
        """Close `client` only when its connection is dead. Other threads' commands share it (suite reads
        run at once: common/fanout.py); a refused or slow channel open on a live connection must not cut
        them off — that left their channels closed under them, and each waited out its whole timeout."""
        with self._lock:
            transport = client.get_transport()
            if self._client is client and (transport is None or not transport.is_active()):
                self.close()

    def check(self, cmd: Command, **kwargs: object) -> CommandResult:
        """Run cmd and raise CommandError unless it exits 0."""
        __tracebackhide__ = True
        result = self.run(cmd, **kwargs)  # type: ignore[arg-type]
        if not result.ok:
            raise CommandError(result)
        return result


# Commands that only read (the harness's state reads: qstat/pbsnodes/pbs_rstat -F json, qmgr list/print,
# files): safe to make again when the connection died under them. Anything with a shell operator is not.
_READERS = frozenset({"qstat", "pbsnodes", "pbs_rstat", "tracejob", "cat", "ls", "stat", "test", "head", "tail"})
_QMGR_READ = re.compile(r"^-c\s+'?(list|print)\s")


def reads_only(text: str) -> bool:
    """Whether a command line only reads: a known reader, or qmgr listing/printing, with no shell operator."""
    if re.search(r"[;&|<>`$(){}\n]", text):
        return False
    program, _, args = text.strip().partition(" ")
    name = program.rsplit("/", 1)[-1]
    return name in _READERS or (name == "qmgr" and bool(_QMGR_READ.match(args.strip())))


def _said(exc: BaseException) -> str:
    """An exception as a message: its text, or its type when it has none (paramiko's EOFError() of a
    connection that ended has no text; an exception object is always truthy, its text may be empty)."""
    return str(exc) or type(exc).__name__


class _NotSent(Exception):
    """The command never reached the host (no connection, or its channel could not be opened)."""


class _LostWhileRunning(Exception):
    """The connection closed after the command was sent and before its end was seen."""


def _send_eof(chan: paramiko.Channel) -> None:
    """Channel.shutdown_write(), with the EOF sent while the channel's lock is held.

    paramiko 5.1 builds the EOF under the lock and sends it after releasing it; the transport's thread,
    waiting on that lock to handle the host's CLOSE (a command that ended at once), can send our CLOSE
    in between, and then our EOF names a channel sshd has freed: OpenSSH drops the WHOLE connection
    ("channel_by_id: 4: bad id: channel free", "Disconnecting user root ...: ieof packet referred to
    nonexistent channel 4" in pbshc01's journal, 28 Nov 19:16:52, final run 1), cutting every other
    thread's command on it. Holding the lock orders EOF before any CLOSE. (A rekey in that instant
    makes the send wait for it, at most paramiko's 30 s clear_to_send_timeout.)"""
    with chan.lock:
        message = chan._send_eof()
        if message is not None and chan.transport is not None:
            chan.transport._send_user_message(message)


def _exec(client: paramiko.SSHClient, cmd: str, timeout: float, stdin: str | None) -> tuple[int, str, str]:
    """Run cmd on a new channel; read stdout and stderr until EOF *and* the exit status arrived.

    sshd may send the exit status before the last output (the child exited while its pipe still
    held data), so the exit status alone does not mean the output is complete: EOF does. A channel
    closed without EOF (its connection died) is a lost command at once, not a wait for the timeout.
    """
    transport = client.get_transport()
    if transport is None or not transport.is_active():
        raise _NotSent("no connection")
    try:
        chan = transport.open_session(timeout=10)
    except (paramiko.SSHException, EOFError, ConnectionError) as exc:
        raise _NotSent(f"opening a channel: {_said(exc)}") from exc
    try:
        try:
            chan.exec_command(cmd)
            if stdin is not None:
                chan.sendall(stdin.encode())
            _send_eof(chan)
        except (paramiko.SSHException, EOFError, ConnectionError, OSError) as exc:
            raise _LostWhileRunning(f"sending it: {_said(exc)}") from exc
        out, err = bytearray(), bytearray()
        deadline = time.monotonic() + timeout
        while True:
            while chan.recv_ready():
                out += chan.recv(65536)
            while chan.recv_stderr_ready():
                err += chan.recv_stderr(65536)
            if chan.eof_received and chan.exit_status_ready() and not (chan.recv_ready() or chan.recv_stderr_ready()):
                break
            if chan.closed or not transport.is_active():
                # EOF and close may both have arrived since the check above (the transport's thread
                # handles them back to back): that is the command's normal end, read to it above.
                if chan.eof_received:
                    continue
                why = "the connection ended" if not transport.is_active() else "the host closed the channel"
                raise _LostWhileRunning(f"{why} before the command's end (no EOF)")
            if time.monotonic() > deadline:
                raise TimeoutError(f"`{cmd}` did not finish within {timeout}s")
            select.select([chan], [], [], 0.005)  # wakes on data, stderr or EOF (not on exit status)
        rc = chan.recv_exit_status()
    finally:
        chan.close()
    return rc, out.decode(errors="replace"), err.decode(errors="replace")
