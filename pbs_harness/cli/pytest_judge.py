"""The judge of a pytest line as `pbs-harness test` would run it (./acceptance's PYTEST_ARGS, or the pytest
arguments of `pbs-harness test` itself), standard library only: ./acceptance runs it (`python -m
pbs_harness.cli.judge test ARGS...`) with this machine's Python before apt-get, make venv or any host (issue
#34: a typo there used to cost a whole cluster bring-up, and `-m ramp_dwn` ended in exit 5, nothing tested,
after it). `pbs-harness test --judge-only` runs it too, then pytest's own parse of the line (cli/test.py),
once the venv is made and before `pbs-harness up`; plain `pbs-harness test` (also --cloud) runs it after
pytest's parse and before any host is probed or any cloud API called.

Refused, each with the value and the fix:
- an option that pytest, with the plugins `pbs-harness test` loads, does not know, and an option that takes a
  value without one (pbs_harness.cli.pytest_options keeps pytest's options; a unit test keeps it equal to
  the real parser). A line that loads a plugin of its own (-p NAME) may use that plugin's options: they and
  what follows them are left to pytest's parse;
- a -m expression naming a marker the suites do not register (it would select no test), and a -m or -k
  expression that does not parse (pbs_harness.cli.pytest_expression);
- a path or node id (path::name) whose file or folder is not in the checkout (with --pyargs they are
  module names, and not judged);
- what `pbs-harness test` gives pytest itself: one xdist worker per cluster (-n, --dist,
  --max-worker-restart, --worker-inventory), the reports (--junitxml, --html) and the plugins of those
  options (-p no:xdist, no:html, no:junitxml); a second value would overrule the harness's. Also the
  harness's own options (-i, --clusters, --state-dir, --cloud ...): ./acceptance sets the clusters.
Not judged here: the values pytest checks itself (--tb, --maxfail's number, ...): pytest's parse does.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

from pbs_harness.cli import pytest_expression, pytest_options
from pbs_harness.cli.argv import split_test_args

_NEGATIVE_NUMBER = re.compile(r"-\d+\Z|-\d*\.\d+\Z")  # argparse takes these as values, not options
_WORKERS = (
    "one pytest-xdist worker per cluster (-n, --dist load, --max-worker-restart 0, --worker-inventory)",
    "CLUSTERS (./acceptance), or one -i per cluster or --clusters N (pbs-harness test), says how many clusters "
    "are tested at once, one worker each",
)
_REPORTS = (
    "reports/junit.xml and reports/acceptance.html (--junitxml, --html), which its report reads back",
    "the reports are written to reports/ (README, what you get)",
)
# The options `pbs-harness test` gives pytest itself (cli/test.py run_suites): (what they set, the fix).
HARNESS_GIVES = {
    **dict.fromkeys(("-n", "--numprocesses", "--maxprocesses", "--dist", "--max-worker-restart"), _WORKERS),
    "--worker-inventory": _WORKERS,
    **dict.fromkeys(("--junitxml", "--junit-xml", "--html"), _REPORTS),
    # -p no:PLUGIN: the plugin of those options
    "no:xdist": _WORKERS,
    **dict.fromkeys(("no:html", "no:junitxml"), _REPORTS),
}
_QUOTES_HINT = (
    " (quote an -m or -k expression with spaces: pbs-harness test -m 'ramp_down and not destructive', or "
    "PYTEST_ARGS=\"-m 'ramp_down and not destructive'\", which is split into words as a shell splits them)"
)


class Refused(ValueError):
    """What is wrong with the line (its value named) and the fix."""

    def __init__(self, what: str, fix: str) -> None:
        super().__init__(what)
        self.what, self.fix = what, fix


def _takes_a_value(arg: str) -> bool:
    return not arg.startswith("-") or arg == "-" or bool(_NEGATIVE_NUMBER.match(arg))


def _close(word: str, choices: object) -> str:
    near = difflib.get_close_matches(word, list(choices), n=1)  # type: ignore[call-overload]
    return f" (did you mean {near[0]}?)" if near else ""


def _values(option: str, line: list[str], at: int, count: int | str) -> list[str]:
    """The values of `option` (at line[at]) from the arguments after it, as argparse takes them."""
    if count == "?":
        return line[at + 1 : at + 2] if at + 1 < len(line) and _takes_a_value(line[at + 1]) else []
    given = line[at + 1 : at + 1 + int(count)]
    if len(given) < int(count) or not all(_takes_a_value(v) for v in given):
        what = "a value" if count == 1 else f"{count} values"
        after = f", and is followed by {given[0]}" if given and not _takes_a_value(given[0]) else ""
        raise Refused(f"{option} takes {what} and has none{after}", f"give {option} VALUE (or {option}=VALUE)")
    return given


def _p_values(line: list[str]) -> list[str]:
    """The -p values of the line (-p NAME, -pNAME, -p=NAME), for whether it loads a plugin of its own."""
    out = []
    for at, arg in enumerate(line):
        if arg == "-p" and at + 1 < len(line):
            out.append(line[at + 1])
        elif arg.startswith("-p") and not arg.startswith("--"):
            out.append(arg[2:].removeprefix("="))
    return out


class _PluginOption(Exception):
    """An option the table does not know, on a line that loads a plugin of its own: perhaps that plugin's."""


def _unknown(name: str, more: str, loads_a_plugin: bool) -> Refused:
    if loads_a_plugin:
        raise _PluginOption(name)
    return Refused(f"{name} is not an option of pytest{more}", "see `pbs-harness test --help` for pytest's options")


Pairs = list[tuple[str, str]]  # (option, value): a flag's value is ""


def _long_option(arg: str, line: list[str], at: int, loads_a_plugin: bool) -> tuple[Pairs, int]:
    """--name, --name VALUE, --name=VALUE: its pairs, and how many arguments after it were its values."""
    name, eq, value = arg.partition("=")
    count = pytest_options.OPTIONS.get(name)
    if count is None:
        raise _unknown(name, _close(name, pytest_options.OPTIONS), loads_a_plugin)
    if eq:
        if count == 0:
            raise Refused(f"{name} takes no value (given {arg})", f"give {name} alone")
        return [(name, value)], 0
    values = _values(name, line, at, count)
    return [(name, v) for v in values] or [(name, "")], len(values)


def _short_options(arg: str, line: list[str], at: int, loads_a_plugin: bool) -> tuple[Pairs, int]:
    """-x, -xvs, -n4, -k EXPR, -m=EXPR: its pairs, and how many arguments after it were its values."""
    pairs: Pairs = []
    for index in range(1, len(arg)):
        name = "-" + arg[index]
        count = pytest_options.OPTIONS.get(name)
        if count is None:
            raise _unknown(name, f" (in {arg})" if len(arg) > 2 else "", loads_a_plugin)
        if count == 0:
            pairs.append((name, ""))
            continue
        rest = arg[index + 1 :]
        if rest:
            return [*pairs, (name, rest.removeprefix("="))], 0
        values = _values(name, line, at, count)
        return [*pairs, *((name, v) for v in values)], len(values)
    return pairs, 0


def _options(line: list[str]) -> tuple[Pairs, list[str]]:
    """(each option with its value, in order; the positional arguments) of the line; Refused on an option
    pytest does not know or a value missing."""
    loads_a_plugin = any(v and not v.startswith("no:") for v in _p_values(line))
    options: Pairs = []
    positional: list[str] = []
    at = 0
    while at < len(line):
        arg = line[at]
        if arg == "--":
            positional += line[at + 1 :]
            break
        if _takes_a_value(arg):
            positional.append(arg)
            at += 1
            continue
        read = _long_option if arg.startswith("--") else _short_options
        try:
            pairs, used = read(arg, line, at, loads_a_plugin)
        except _PluginOption:
            return options, []  # a plugin's option: pytest's parse judges it and what follows
        options += pairs
        at += 1 + used
    return options, positional


def _judge_expression(option: str, text: str, markers: frozenset[str], project: frozenset[str]) -> None:
    try:
        names = pytest_expression.names(text, with_kwargs=option == "-m")
    except pytest_expression.ExpressionError as exc:
        raise Refused(
            f"{option} {text!r} does not parse: {exc}",
            f"write it with and, or, not, parentheses and names, e.g. {option} "
            + ("'ramp_down and not destructive'" if option == "-m" else "'release and not reservation'"),
        ) from None
    for name in names if option == "-m" else ():
        if name not in markers:
            raise Refused(
                f"-m {text!r}: {name} is not a marker the suites register{_close(name, markers)}, so it would "
                "select no test (exit 5, after the whole run)",
                f"use the suites' markers: {', '.join(sorted(project))} (`pbs-harness test --markers` lists all)",
            )


def _judge(line: list[str], root: Path) -> None:
    ours, _ = split_test_args(["test", *line])
    if ours[1:]:
        raise Refused(
            f"{ours[1]} is pbs-harness test's own option, not pytest's, and ./acceptance gives it the clusters itself",
            "leave it out of PYTEST_ARGS: CLUSTERS says how many local clusters are tested; to test others, run "
            ".venv/bin/pbs-harness test -i INVENTORY yourself",
        )
    options, positional = _options(line)
    markers = pytest_options.markers(root)
    for option, value in options:
        gives = HARNESS_GIVES.get(value if option == "-p" else option)
        if gives:
            shown = f"-p {value}" if option == "-p" else option
            raise Refused(
                f"{shown}: pbs-harness test gives pytest {gives[0]} itself, and this line would overrule it",
                f"leave {shown} out; {gives[1]}",
            )
        if option in ("-m", "-k"):
            _judge_expression(option, value, markers, pytest_options.project_markers(root))
    if "--pyargs" in line:
        return
    for arg in positional:
        path = arg[1:] if arg.startswith("@") else arg.split("::", 1)[0]  # @FILE: pytest reads arguments from it
        if not (root / path).exists():
            raise Refused(
                f"{arg}: {root / path} does not exist",
                "name a test file or folder of the checkout, e.g. ptl_tests/ramp_down or "
                "ptl_tests/test_smoke.py::NAME (paths are taken from the checkout's top)",
            )


def judge(line: list[str], root: Path) -> Refused | None:
    """Why `pbs-harness test` (as ./acceptance runs it) would refuse or misread this pytest line, or None."""
    try:
        _judge(line, root)
    except Refused as refused:
        if any(q in arg for arg in line for q in "'\"") or {"and", "or", "not"} & set(line):
            refused.fix += _QUOTES_HINT
        return refused
    return None


def main(line: list[str]) -> int:
    """Exit 0: the line is taken; 2: it is not, with the value and the fix on stderr."""
    from pbs_harness.common import errors, project

    refused = judge(line, project.root())
    if refused is None:
        return errors.EXIT_OK
    print(f"{refused.what}\n  fix: {refused.fix}", file=sys.stderr)
    return errors.EXIT_USAGE
