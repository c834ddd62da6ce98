"""`python -m pbs_harness.cli.shell_words NAME VALUE`: a setting of ./acceptance (PYTEST_ARGS, UP_ARGS) split into
words as a shell splits them, each printed with a NUL after it for bash's `mapfile -d ''`.

./acceptance used to split these settings at spaces, so `PYTEST_ARGS="-m 'ramp_down and not destructive'"` reached
pytest as five words with the quotes as characters (issue #34). Python's shlex (POSIX rules: quotes group, a
backslash escapes) splits the text as the user wrote it, and the words come back as data: the user's text is never
given to `eval`. Standard library only, so this machine's Python runs it before the venv exists.
Exit 0: the words on stdout; 2: a quote left open (or a backslash at the end), with the value and the fix on stderr.
"""

from __future__ import annotations

import shlex
import sys

from pbs_harness.common import errors

_EXAMPLE = {
    "PYTEST_ARGS": "PYTEST_ARGS=\"-m 'ramp_down and not destructive'\"",
    "UP_ARGS": "UP_ARGS=\"--state-dir '/var/lib/pbs-harness/my clusters'\"",
}


class Unbalanced(ValueError):
    """The value cannot be split: what is wrong (the value named) and the fix."""

    def __init__(self, what: str, fix: str) -> None:
        super().__init__(what)
        self.what, self.fix = what, fix


def split(name: str, value: str) -> list[str]:
    """The words of `value` as a POSIX shell reads them (no expansion of $, * or ~: they stay characters)."""
    try:
        return shlex.split(value)
    except ValueError as exc:  # shlex says "No closing quotation" or "No escaped character"
        if "quotation" in str(exc):
            raise Unbalanced(
                f"{name}={value} cannot be split into words: a quote is not closed",
                f"close each quote, e.g. {_EXAMPLE.get(name, name + '=...')}; a quote meant as a character "
                "goes inside the other kind of quotes or after a backslash (\\' or \\\")",
            ) from None
        raise Unbalanced(
            f"{name}={value} cannot be split into words: it ends in a backslash that escapes nothing",
            "drop the last backslash, or write \\\\ for a backslash as a character",
        ) from None


def main(argv: list[str]) -> int:
    if len(argv) != 2:  # NAME and VALUE
        print("shell_words: error: usage: python -m pbs_harness.cli.shell_words NAME VALUE", file=sys.stderr)
        return errors.EXIT_USAGE
    name, value = argv
    try:
        words = split(name, value)
    except Unbalanced as bad:
        print(f"{bad.what}\n  fix: {bad.fix}", file=sys.stderr)
        return errors.EXIT_USAGE
    sys.stdout.write("".join(f"{word}\0" for word in words))
    return errors.EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
