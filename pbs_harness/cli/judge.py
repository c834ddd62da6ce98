"""`python -m pbs_harness.cli.judge up ARGS...`: judge an `up` command line and do nothing else.
(`... judge test ARGS...` judges ./acceptance's PYTEST_ARGS: pbs_harness.cli.pytest_judge.)

./acceptance runs it before apt-get, make venv and any host (issue #34: UP_ARGS used to be judged only by
`pbs-harness up` itself, after the installs). It is the harness's own `up` parser, not a copy, so it judges
what `up` would: unknown options, and the values its parser checks without a host (--subnet,
--name-prefix, --clusters, an empty --state-dir, ...). The parser needs the standard library only
(tests/unit/test_cli_judge.py keeps it so), so this machine's Python runs it before the venv exists.
An option given twice is refused too: argparse would keep the last one silently, and ./acceptance gives
--clusters, --flavour, --image and --openpbs itself, so `UP_ARGS="--clusters 3"` would overrule CLUSTERS.
Exit 0: the line parses; 2: it does not, with the value and the fix on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys

from pbs_harness.common import errors

# Options that take a value once: argparse's plain "store" actions (not append, count or flags).
_ONCE = (argparse._StoreAction,)  # argparse names no public base class for it


def _given_twice(parser: argparse.ArgumentParser, line: list[str]) -> str | None:
    seen: dict[str, str] = {}
    for token in line:
        if token == "--":  # noqa: S105 (the end of options, not a password)
            break
        if not token.startswith("-"):
            continue
        name = token.split("=", 1)[0]
        action = parser._option_string_actions.get(name)  # the parser's own option table (no abbreviations)
        if action is None or not isinstance(action, _ONCE):
            continue
        if action.dest in seen:
            return f"{seen[action.dest]} is given twice ({token} too); the last one would silently win"
        seen[action.dest] = name
    return None


def main(argv: list[str]) -> int:
    from pbs_harness.cli import build_parser

    if argv[:1] == ["test"]:
        from pbs_harness.cli import pytest_judge

        return pytest_judge.main(argv[1:])
    if not argv or argv[0] != "up":
        print("judge: error: usage: python -m pbs_harness.cli.judge up|test ARGS...", file=sys.stderr)
        return errors.EXIT_USAGE
    parser = build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    told = io.StringIO()
    try:
        with contextlib.redirect_stderr(told), contextlib.redirect_stdout(told):
            parser.parse_args(argv)
    except SystemExit as exc:
        if exc.code in (0, None):
            return errors.EXIT_OK
        why = next((ln for ln in reversed(told.getvalue().splitlines()) if "error:" in ln), told.getvalue().strip())
        print(
            f"{why.split('error: ', 1)[-1]}\n  fix: see `pbs-harness up --help` (README, quick start)", file=sys.stderr
        )
        return errors.EXIT_USAGE
    twice = _given_twice(verbs.choices["up"], argv[1:])
    if twice:
        print(
            f"{twice}\n  fix: give it once; ./acceptance sets --clusters, --flavour, --image and --openpbs "
            "from CLUSTERS, FLAVOUR, IMAGE and OPENPBS: set those instead of putting them in UP_ARGS",
            file=sys.stderr,
        )
        return errors.EXIT_USAGE
    return errors.EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
