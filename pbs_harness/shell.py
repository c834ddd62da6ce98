"""Run commands on the controller (this machine), with list arguments and timeouts."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


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
    """Run argv (no shell) and return its result; `env` replaces the environment when given."""
    proc = subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input_text,
        check=False,
        env=None if env is None else dict(env),
    )
    return LocalResult(tuple(argv), proc.returncode, proc.stdout, proc.stderr)


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
