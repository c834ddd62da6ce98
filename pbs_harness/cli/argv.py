"""The command line's conventions: `--version`, `-i` before the verb, the harness's own options anywhere on
`test`'s line (everything else goes to pytest), and `test --help` with pytest's options after the harness's."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from pbs_harness.cli.cloud import TEST_OPTIONS
from pbs_harness.common import errors
from pbs_harness.common.errors import HarnessError


def version_line() -> str:
    """`pbs-harness --version`: the package's version, the Python that runs it and the checkout it uses."""
    from importlib import metadata

    from pbs_harness.common import project

    try:
        version = metadata.version("pbs-harness")
    except metadata.PackageNotFoundError:
        version = "(not installed: `make venv` installs it)"
    try:
        checkout = f"checkout {project.root()}"
    except HarnessError:
        checkout = "no checkout found (playbooks, roles and suites live in the git checkout; see the README)"
    return f"pbs-harness {version} (Python {sys.version.split()[0]}; {checkout})"


class Version(argparse.Action):
    """`--version`: one line, unwrapped, worked out only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_line())
        parser.exit()


class TestHelp(argparse.Action):
    """`test --help`: the harness's own options, then pytest's (everything else on the line goes to pytest)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        import subprocess

        from pbs_harness.common import project

        try:
            root = project.root()
            argv = [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider", str(root / "ptl_tests")]
            pytest_help = _pytest_help(argv, root)
        except (HarnessError, OSError, subprocess.TimeoutExpired) as exc:
            pytest_help = f"(pytest --help could not run: {exc})"
        parser.print_help()
        print("\npytest's options (pbs-harness test passes them on; the suites' own are under 'custom options'):\n")
        print(pytest_help)
        parser.exit()


def _pytest_help(argv: list[str], cwd: Path) -> str:
    """pytest's --help, its process ended also when Ctrl-C or SIGTERM comes (README: exit 130, nothing left
    running). subprocess.run could not end it when the signal came inside Popen(), after the fork and before
    there was a process object to kill (a pytest --help was left running, seen by the unit tests' leak check).
    So while Popen() runs the two signals are only noted, and raised once the process object exists. (Python
    handlers, not a blocked signal mask: the mask is per thread, and a signal to a process with other threads
    reaches the handler in the main thread anyway.)"""
    import signal
    import subprocess

    noted: list[int] = []
    deferred = threading.current_thread() is threading.main_thread()  # signal.signal: main thread only
    if deferred:
        before = {s: signal.signal(s, lambda signum, _: noted.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        if deferred:
            for signum, handler in before.items():
                signal.signal(signum, handler)
            for signum in noted:
                signal.raise_signal(signum)  # the signal that came meanwhile, now with its usual handler

    try:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except BaseException:
        restore()
        raise
    try:
        restore()
        out, err = proc.communicate(timeout=120)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return out or err


# Harness options of `test`, wherever they are on its line; every other argument goes to pytest.
# `test --cloud`'s options (cli/cloud.py TEST_OPTIONS) are among them.
_TEST_OPTIONS = ("-i", "--inventory", "--clusters", "--state-dir", *(o for o, valued in TEST_OPTIONS.items() if valued))
_TEST_FLAGS = ("-h", "--help", "--judge-only", *(o for o, valued in TEST_OPTIONS.items() if not valued))
# pytest options whose value is the next argument: that value is pytest's even if it looks like ours.
_PYTEST_VALUED = frozenset(
    {
        *("-k", "-m", "-p", "-c", "-o", "-W", "-r", "-n", "--deselect", "--ignore", "--ignore-glob", "--junitxml"),
        *("--junit-xml", "--html", "--rootdir", "--basetemp", "--confcutdir", "--results-json", "--maxfail", "--tb"),
        *("--dist", "--timeout", "--durations", "--log-level", "--override-ini", "--capture", "--color"),
        *("--import-mode", "--worker-inventory", "--max-worker-restart"),
    }
)
# Options the top-level parser takes before the verb, with a value.
_GLOBAL_VALUED = ("-i", "--inventory")


def split_test_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """For `test`: (the line with only the harness's options, the arguments for pytest in order). Other
    verbs: (argv, []). `--` ends the harness's options: what follows goes to pytest as it is."""
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in _GLOBAL_VALUED else 1
    if i >= len(argv) or argv[i] != "test":
        return argv, []
    ours, pytest_args = argv[: i + 1], []
    rest = argv[i + 1 :]
    j = 0
    while j < len(rest):
        arg = rest[j]
        name = arg.split("=", 1)[0]
        if arg == "--":
            pytest_args += rest[j + 1 :]
            break
        if arg in _TEST_FLAGS:
            ours.append(arg)
        elif name in _TEST_OPTIONS:
            valued = "=" in arg or j + 1 >= len(rest)
            ours += [arg] if valued else [arg, rest[j + 1]]
            j += 0 if valued else 1
        elif arg.startswith("-i") and len(arg) > 2 and not arg.startswith("--"):
            ours += ["-i", arg[2:]]  # -iPATH
        elif arg in _PYTEST_VALUED and j + 1 < len(rest):
            pytest_args += [arg, rest[j + 1]]
            j += 1
        else:
            pytest_args.append(arg)
        j += 1
    return ours, pytest_args


def inventory_before_verb(args: argparse.Namespace) -> None:
    """`pbs-harness -i INV deploy`: the inventory given before the verb, for the verbs that take one."""
    before = args.inventory_before_verb or []
    if not before:
        return
    if not hasattr(args, "inventory"):
        verb = " ".join(v for v in (args.command, getattr(args, "verb", None)) if isinstance(v, str))
        raise errors.UsageError(
            f"-i/--inventory {before[0]}: `{verb}` takes no inventory",
            "-i names the hosts of deploy, verify and test; the local-cluster verbs take --state-dir",
        )
    if args.command == "test":
        args.inventory = [*before, *(args.inventory or [])]
        return
    given = [*before, *([args.inventory] if args.inventory else [])]
    if len(set(given)) > 1:
        raise errors.UsageError(
            f"{args.command} takes one inventory, and was given {len(given)}: {', '.join(given)}",
            "give one -i (several inventories are for `test`: one worker per cluster)",
        )
    args.inventory = given[0]
