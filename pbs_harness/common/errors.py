"""Harness errors: each carries a message for the user and a fix hint.

Every verb of the CLI exits with one of the codes below, so that they mean the same thing
everywhere (the README's table is this one; tests/unit/test_exit_codes.py keeps them equal).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_PRECONDITION = 3
EXIT_UNREACHABLE = 4
EXIT_NOTHING_TESTED = 5
EXIT_INTERRUPTED = 130

# What each code means, one line each: the README's table, in this order.
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "done; for `test`: at least one acceptance test ran and none failed"),
    (EXIT_FAILED, "the operation ran and failed: deploy failed, verify checks failed, tests failed"),
    (EXIT_USAGE, "bad command line: unknown verb or option, bad value (pytest's usage errors too)"),
    (
        EXIT_PRECONDITION,
        "input or machine not fit: bad inventory, hook config or results file, not root, OpenPBS missing, "
        "missing programs, subnet in use",
    ),
    (EXIT_UNREACHABLE, "a host did not answer (TCP or SSH login) in time"),
    (
        EXIT_NOTHING_TESTED,
        "`test` ran no acceptance test: none collected or selected, or every one skipped (for hosts that do not "
        "answer: 4; for OpenPBS missing: 3)",
    ),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C, SIGTERM); the running test's faults are healed first"),
)


class HarnessError(Exception):
    """An error the user can act on: what is wrong and how to fix it."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  fix: {self.hint}" if self.hint else self.message


class UsageError(HarnessError):
    """A command-line value the CLI cannot use (caught after argparse, e.g. a subnet too small)."""

    exit_code = EXIT_USAGE


class PreconditionError(HarnessError):
    """The machine, the input or the installation is not what the step needs."""

    exit_code = EXIT_PRECONDITION


class UnreachableError(HarnessError):
    """A host did not answer within a bounded time."""

    exit_code = EXIT_UNREACHABLE


class NothingTestedError(HarnessError):
    """`pbs-harness test` finished without running any acceptance test."""

    exit_code = EXIT_NOTHING_TESTED
