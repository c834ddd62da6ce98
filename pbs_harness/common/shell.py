"""Run commands on the controller (this machine), with list arguments and timeouts."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LocalResult:
    """Outcome of one local command; never raises on a non-zero exit."""

    argv: tuple[str, ...]
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0


def run(
    argv: Sequence[str], *, timeout: float = 60, input_text: str | None = None, env: Mapping[str, str] | None = None
) -> LocalResult:
    """Run argv (no shell) and return its result; `env` replaces the environment when given.

    The command runs in a process group of its own, killed whole when the wait ends early (timeout,
    Ctrl-C, SIGTERM): programs that start programs (ansible-inventory running an inventory script)
    leave nothing behind."""
    with subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL if input_text is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=None if env is None else dict(env),
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(input_text, timeout=timeout)
        except BaseException:
            kill_group(proc)
            raise
    return LocalResult(tuple(argv), proc.returncode, stdout, stderr)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def dies_with_this_process(signum: int):
    """A preexec_fn for a child started in a session of its own (start_new_session): the kernel sends it
    `signum` when the process that started it dies, even by SIGKILL, which no handler sees. Without it, a
    `pbs-harness test` killed with SIGKILL (a CI job cancelled, an OOM kill, kill -9) left its pytest
    session running against the cluster, beside the next session."""
    parent = os.getpid()
    libc = ctypes.CDLL(None, use_errno=True)

    def preexec() -> None:
        # An ignored signal stays ignored across exec: a harness started in the background of a script
        # (SIGINT ignored there) would give its child a death signal the child never acts on.
        signal.signal(signum, signal.SIG_DFL)
        libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signum)

    return preexec


def kill_group(proc: subprocess.Popen, grace: float = 0.0) -> None:
    """End `proc` and every process of its group (started with start_new_session): with `grace` > 0,
    SIGTERM first and up to `grace` seconds to exit; then SIGKILL to what is left; reaps `proc`. The
    leader is reaped last, so that its group id cannot name another process meanwhile."""
    if grace > 0:
        _signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and not _exited(proc.pid):
            time.sleep(0.05)
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _exited(pid: int) -> bool:
    """The process has exited (a zombie not yet reaped, or gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except (OSError, IndexError):
        return True


def check(argv: Sequence[str], *, timeout: float = 60, input_text: str | None = None) -> str:
    """Run argv and return stdout; raise CommandFailed on a non-zero exit."""
    res = run(argv, timeout=timeout, input_text=input_text)
    if not res.ok:
        raise CommandFailed(res)
    return res.stdout


class CommandFailed(RuntimeError):
    """A local command the harness needed exited non-zero."""

    def __init__(self, result: LocalResult) -> None:
        cmd = " ".join(result.argv)
        detail = (result.stderr or result.stdout).strip()
        super().__init__(f"command failed (rc={result.rc}): {cmd}\n{detail}")
        self.result = result
