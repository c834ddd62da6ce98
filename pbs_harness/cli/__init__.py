"""`pbs-harness` command line: cluster lifecycle, deploy, verify, test.

One module per concern: argv (the line's conventions), common (progress, checks, argument types),
local (local-cluster verbs; a fleet's planning is localcluster/fleet.py's), deploy (deploy, verify:
the options, then deploy/cluster.py), up (up: one call, local or --cloud), test (test, report). Each
verb's handler judges its line and makes one call of the service that does the work. This module
builds the parser and runs a verb, turning errors into the exit codes of errors.EXIT_CODES; SIGTERM
ends a verb as Ctrl-C does.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pbs_harness.cli import cloud
from pbs_harness.cli.argv import TestHelp, Version, inventory_before_verb, split_test_args
from pbs_harness.cli.cloud import ImageChoices
from pbs_harness.cli.common import DEBUG_ENV, cluster_count, directory, host_count, seconds, subnet, tags
from pbs_harness.cli.deploy import cmd_deploy, cmd_verify
from pbs_harness.cli.local import (
    cmd_cache,
    cmd_cluster_down,
    cmd_cluster_ssh,
    cmd_cluster_status,
    cmd_cluster_up,
    lifecycle,
)
from pbs_harness.cli.test import cmd_report, cmd_test
from pbs_harness.cli.test import names_tests as _names_tests
from pbs_harness.cli.up import cmd_up
from pbs_harness.common import errors
from pbs_harness.common.errors import HarnessError

# What `pbs-harness --help` says first (the module's docstring above is for developers).
DESCRIPTION = (
    "Bring up a local OpenPBS test cluster (or use your own hosts), deploy OpenPBS with its site hooks, and "
    "run the acceptance suites against it. Start with `pbs-harness up`, then `pbs-harness test`; "
    "`pbs-harness VERB --help` shows a verb's options. The README's quick start has the whole path."
)

__all__ = ["DEBUG_ENV", "_names_tests", "build_parser", "cmd_report", "cmd_test", "main"]


def cmd_down(args: argparse.Namespace) -> int:
    if args.run:
        return cloud.cmd_cloud_down(args)
    return cmd_cluster_down(args)


def exit_codes_text() -> str:
    """The README's exit-code table, for the end of every --help."""
    return "exit codes:\n" + "\n".join(f"  {code:>3}  {meaning}" for code, meaning in errors.EXIT_CODES)


class Parser(argparse.ArgumentParser):
    """The parser of the line and of every verb: no abbreviated options (`--conn 2` used to be taken as
    --connect-timeout, and a new option would silently change what an old script means), the exit codes at
    the end of every --help, and an unknown option after a verb refused with that verb's usage (argparse
    otherwise hands it back to the top-level parser, which prints its own usage)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("epilog", exit_codes_text())
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self.is_verb = False

    def parse_known_args(self, args=None, namespace=None):
        parsed, extras = super().parse_known_args(args, namespace)
        if self.is_verb and extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def _verb_parser(sub, name: str, **kwargs) -> argparse.ArgumentParser:
    p = sub.add_parser(name, **kwargs)
    p.is_verb = True
    return p


def _local_command(sub, name: str, text: str, func) -> argparse.ArgumentParser:
    """A command acting on one local cluster, chosen by --state-dir."""
    from pbs_harness.localcluster.state import DEFAULT_STATE_DIR

    p = _verb_parser(sub, name, help=text)
    p.add_argument(
        "--state-dir",
        type=directory,
        help=f"state directory of the cluster, one per cluster (default: $PBS_HARNESS_STATE_DIR, {DEFAULT_STATE_DIR})",
    )
    p.set_defaults(func=func)
    return p


def _report_command(sub) -> None:
    """`report`: the conformance report of a run, or a comparison of builds' reports (docs/releases.md)."""
    p = _verb_parser(
        sub,
        "report",
        help="write reports/conformance.{html,md,json} from the last test run; or compare builds (docs/releases.md)",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--results", help="results JSON of a run (default reports/results.json)")
    which.add_argument(
        "--compare",
        nargs=2,
        metavar=("A.json", "B.json"),
        help="behaviour diff of two builds' conformance.json: compare.md and compare.html "
        "(default --out reports/compare/)",
    )
    which.add_argument(
        "--matrix",
        nargs="+",
        metavar="REPORT.json",
        help="interfaces by builds over conformance.json files: matrix.md and matrix.html "
        "(default --out reports/matrix/)",
    )
    p.add_argument(
        "--since",
        metavar="RUN.json",
        help="say what changed since this run (a results.json or a reports/history/ file) instead of "
        "the previous run kept in reports/history/",
    )
    p.add_argument(
        "--out", help="output folder (default reports/; with --compare or --matrix: a new or empty folder, see above)"
    )
    p.set_defaults(func=cmd_report)


def shape(p: argparse.ArgumentParser, cloud: bool = False) -> None:
    """The options that give a local cluster its shape (up, cluster up); `up` also takes cloud images."""
    from pbs_harness.localcluster.spec import (
        CLI_DEFAULT_FLAVOUR,
        DEFAULT_HOSTS,
        DEFAULT_IMAGE,
        DEFAULT_PREFIX,
        DEFAULT_SUBNET,
        FLAVOURS,
        IMAGES,
    )

    p.add_argument("--hosts", type=host_count, default=DEFAULT_HOSTS, help=f"number of hosts (default {DEFAULT_HOSTS})")
    p.add_argument(
        "--subnet",
        type=subnet,
        default=DEFAULT_SUBNET,
        help=f"private IPv4 /24 (default {DEFAULT_SUBNET}); auto: the first 10.X.0.0/24 that no network or "
        "cluster of this machine uses (with --clusters N: N free /24s in a row)",
    )
    p.add_argument(
        "--name-prefix",
        default=DEFAULT_PREFIX,
        metavar="PREFIX",
        help=f"host names PREFIX01.. (2-8 lower-case letters/digits; default {DEFAULT_PREFIX})",
    )
    p.add_argument(
        "--flavour",
        choices=FLAVOURS,
        default=None,
        help="namespace: hosts share this machine's /opt/pbs, /usr, /etc, /home; system: each host its own "
        "Debian root with systemd, OpenPBS installed per host from packages (--openpbs) "
        f"(default: the flavour of the cluster already in the state directory, else {CLI_DEFAULT_FLAVOUR}, "
        "as ./acceptance)",
    )
    p.add_argument(
        "--image",
        choices=ImageChoices(IMAGES) if cloud else IMAGES,
        default=DEFAULT_IMAGE,
        help=f"system hosts: the distribution they boot (default {DEFAULT_IMAGE})"
        + ("; --cloud aws: debian-12 or an AMI id" if cloud else ""),
    )
    p.add_argument(
        "--openpbs",
        metavar="PATH",
        help="system hosts: OpenPBS to install, as a release zip, a folder of .deb/.rpm files, or a source "
        "archive or tree (built into packages the way upstream does, cached)",
    )
    p.add_argument(
        "--login-user",
        metavar="USER",
        help="reach the hosts only as this unprivileged account with passwordless sudo (root login refused)",
    )
    p.add_argument(
        "--write-inventory",
        metavar="PATH",
        help="write the cluster as a static YAML inventory (inventory/cloud.example layout) into PATH",
    )
    p.add_argument(
        "--clusters",
        type=cluster_count,
        metavar="N",
        help="N clusters side by side: this one and N-1 more (PREFIXb.., PREFIXc.. on the next subnets); "
        "auto: as many as this machine runs well (docs/parallel.md)",
    )


def _tag_names() -> str:
    """Every tag --tags takes, read from the playbooks and roles (the help used to list 4 of the 8)."""
    from pbs_harness.cli.common import known_tags
    from pbs_harness.common import project

    try:
        return ", ".join(sorted(known_tags(project.root())))
    except HarnessError:
        return "the tags of playbooks/ and roles/"


def _test_options(p: argparse.ArgumentParser) -> None:
    """`test`'s own options (cli/argv.py keeps them from pytest's line), but --cloud's."""
    p.add_argument("-h", "--help", action=TestHelp, help="show this help, then pytest's options, and exit")
    p.add_argument(
        "-i",
        "--inventory",
        action="append",
        help="inventory path (default $PBS_HARNESS_INVENTORY, else inventory/local); several: one pytest-xdist "
        "worker per inventory",
    )
    p.add_argument(
        "--clusters",
        type=cluster_count,
        metavar="N",
        help="test the first N local clusters of `up --clusters` at once, one worker each (auto: all that are up)",
    )
    p.add_argument(
        "--state-dir",
        type=directory,
        help="state directory of the first local cluster (with --clusters; default as for up); with --cloud: "
        "where the cloud runs' records are kept",
    )
    p.add_argument(
        "--judge-only",
        action="store_true",
        help="judge the pytest line (options, -m/-k, markers, paths; then pytest's own parse) and exit: "
        "no host contacted (./acceptance runs it before `up`)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="pbs-harness", description=DESCRIPTION)
    parser.add_argument("--version", action=Version, help="print the version and exit")
    parser.add_argument(
        "-i",
        "--inventory",
        dest="inventory_before_verb",
        action="append",
        metavar="INVENTORY",
        help="inventory path for deploy, verify and test (before the verb or after it, as you like; default "
        "$PBS_HARNESS_INVENTORY, else inventory/local)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def target(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "-i", "--inventory", help="inventory path (default $PBS_HARNESS_INVENTORY, else inventory/local)"
        )
        p.add_argument(
            "--connect-timeout",
            type=seconds,
            default=10,
            help="seconds the hosts' SSH ports have to answer, all probed at once (default 10)",
        )

    def deploy_opts(p: argparse.ArgumentParser) -> None:
        target(p)
        p.add_argument("--check", action="store_true", help="ansible --check --diff: show what would change")
        p.add_argument("--tags", type=tags, help=f"only these role tags, comma-separated ({_tag_names()})")
        p.add_argument("--no-verify", action="store_true", help="skip the testinfra host checks after deploy")
        p.add_argument(
            "--idempotence",
            action="store_true",
            help="deploy a second time and fail (exit 1) unless every host reports changed=0 (make acceptance does)",
        )

    p = _local_command(sub, "up", "local (or --cloud) cluster up + deploy OpenPBS on it", cmd_up)
    shape(p, cloud=True)
    deploy_opts(p)
    cloud.add_up_options(p)
    p = _verb_parser(sub, "deploy", help="deploy OpenPBS, hooks and configs with Ansible, then verify")
    deploy_opts(p)
    p.set_defaults(func=cmd_deploy)
    p = _verb_parser(sub, "verify", help="testinfra checks of the deployed hosts")
    target(p)
    p.set_defaults(func=cmd_verify)
    p = _verb_parser(
        sub,
        "test",
        help="run the acceptance suites (extra args go to pytest)",
        add_help=False,
        usage="pbs-harness test [-i INVENTORY ...] [--clusters N] [--state-dir DIR] [--cloud KIND --region R ...] "
        "[pytest options and paths]",
        description="Run the acceptance suites with pytest. The options below are the harness's own, anywhere on "
        "the line; every other argument goes to pytest, in order (its options follow).",
    )
    _test_options(p)
    from pbs_harness.localcluster.spec import DEFAULT_HOSTS, DEFAULT_PREFIX

    cloud.add_test_options(p, host_count, DEFAULT_HOSTS, DEFAULT_PREFIX, seconds)
    p.set_defaults(func=cmd_test, pytest_args=[])
    _report_command(sub)
    cloud.add_down_options(_local_command(sub, "down", "remove the local cluster (or a cloud run: --run)", cmd_down))
    cloud.add_sweep(
        _verb_parser(sub, "sweep", help="remove this owner's cloud runs that are gone or expired (tags only)")
    )
    _local_command(sub, "status", "state of the local cluster's hosts", cmd_cluster_status)
    p = _verb_parser(sub, "cache", help="the system hosts' image layers and OpenPBS packages: sizes, stale ones")
    p.add_argument("--prune", action="store_true", help="remove the stale ones (older recipes', unused)")
    p.add_argument(
        "--export", metavar="FILE", help="write an OpenPBS package set to FILE (tar.gz), for another machine or CI"
    )
    p.add_argument("--packages", metavar="NAME", help="the package set to export (a name `cache` lists)")
    p.add_argument(
        "--import",
        dest="import_file",
        metavar="FILE",
        help="add the package set of an --export FILE to this cache: an `up` of the same source builds nothing",
    )
    p.set_defaults(func=cmd_cache)

    cluster = sub.add_parser(
        "cluster", help="one local cluster, host by host: up, down, status, ssh and faults (crash, partition, pause)"
    )
    csub = cluster.add_subparsers(dest="verb", required=True, metavar="VERB")
    shape(_local_command(csub, "up", "create or repair the local cluster (idempotent)", cmd_cluster_up))
    _local_command(csub, "down", "remove everything the local cluster created", cmd_cluster_down)
    _local_command(csub, "status", "state of each host", cmd_cluster_status)
    p = _local_command(
        csub, "ssh", "SSH into a host as root or the login user (optionally run a command)", cmd_cluster_ssh
    )
    p.add_argument("host")
    p.add_argument(
        "remote_command",
        nargs=argparse.REMAINDER,
        metavar="command",
        help="command to run on HOST (harness options such as --state-dir may come first)",
    )
    for verb, text in (
        ("crash", "every process of HOST dies at once"),
        ("boot", "start HOST again (same name, IP and disk; sshd and PBS start)"),
        ("partition", "drop all traffic to and from HOST (processes live on)"),
        ("heal", "undo partition"),
        ("pause", "freeze every process of HOST"),
        ("resume", "thaw HOST"),
    ):
        _local_command(csub, verb, text, lifecycle(verb)).add_argument("host")
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as Ctrl-C is, so that every `finally` and cleanup runs."""


def _terminate(signum: int, _frame: object) -> None:
    raise Terminated(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    import logging
    import signal
    import threading

    from pbs_harness.localcluster import state

    # paramiko logs a traceback for every SSH connection that fails; the harness reports those
    # failures itself, naming the host. A handler of its own keeps Python from printing them.
    paramiko_log = logging.getLogger("paramiko")
    if not paramiko_log.handlers:
        paramiko_log.addHandler(logging.NullHandler())
    state.named_by_option(False)
    # SIGTERM (a CI job cancelled, `timeout`, `kill`) ends a verb as Ctrl-C does: cleanup, a message, 130.
    # From the start: `test --help` runs pytest while the line is parsed (SIGTERM there exited 143, silently).
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    try:
        return _parse_and_run(argv)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def _interrupted(exc: KeyboardInterrupt, what: str, then: str = "") -> int:
    how = "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C (SIGINT)"
    print(f"pbs-harness: interrupted by {how}: {what} (exit 130){then}", file=sys.stderr)
    return errors.EXIT_INTERRUPTED


def _parse_and_run(argv: Sequence[str] | None) -> int:  # noqa: PLR0911 (one return per way a verb ends)
    try:
        # Building the parser imports most verbs' modules: a signal there (Ctrl-C "one second into"
        # `test --help` on a loaded machine) used to end in a traceback, as one during parsing did.
        parser = build_parser()
        line, pytest_args = split_test_args(list(sys.argv[1:] if argv is None else argv))
        args = parser.parse_args(line)
    except SystemExit as exc:  # argparse has printed the usage and the error (or the help, or the version)
        return errors.EXIT_OK if exc.code in (0, None) else errors.EXIT_USAGE
    except BrokenPipeError:  # the help went to a reader that stopped early (`| head`): nothing left to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return errors.EXIT_OK
    except KeyboardInterrupt as exc:  # e.g. during `test --help`, which asks pytest for its options
        return _interrupted(exc, "stopped while reading the command line; nothing was started")
    if args.command == "test":
        args.pytest_args = pytest_args
    try:
        inventory_before_verb(args)
        return int(args.func(args))
    except HarnessError as exc:
        print(f"pbs-harness: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        return _interrupted(
            exc,
            f"stopped before the {args.command} finished",
            "; running the same command again picks up where it stopped (up, deploy and verify are idempotent)",
        )
    except OSError as exc:
        # The machine refused something no check foresaw (disk full, permissions): say what, not where.
        if os.environ.get(DEBUG_ENV):
            raise
        print(
            f"pbs-harness: error: {exc}\n  fix: see the file named above; {DEBUG_ENV}=1 shows where it happened",
            file=sys.stderr,
        )
        return errors.EXIT_PRECONDITION


if __name__ == "__main__":
    sys.exit(main())
