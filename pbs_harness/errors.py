"""Harness errors: each carries a message for the user and a fix hint.

Exit codes of the CLI come from here so that they mean the same thing everywhere.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1  # the operation ran and failed (deploy failed, tests failed)
EXIT_USAGE = 2  # bad command line
EXIT_PRECONDITION = 3  # the machine or input is not fit: not root, bad inventory, OpenPBS missing
EXIT_UNREACHABLE = 4  # a host did not answer in time
EXIT_INTERRUPTED = 130


class HarnessError(Exception):
    """An error the user can act on: what is wrong and how to fix it."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  fix: {self.hint}" if self.hint else self.message


class PreconditionError(HarnessError):
    """The machine, the input or the installation is not what the step needs."""

    exit_code = EXIT_PRECONDITION


class UnreachableError(HarnessError):
    """A host did not answer within a bounded time."""

    exit_code = EXIT_UNREACHABLE
