"""`pbs-harness` command line: cluster lifecycle, deploy, verify, test.

One module per concern: common (progress, checks, argument types), local (local-cluster verbs),
fleet_up (`--clusters N`), deploy (deploy, verify, up), test (test, report). This module builds the
parser and runs a verb, turning errors into the exit codes of errors.EXIT_CODES.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pbs_harness import errors
from pbs_harness.cli.common import DEBUG_ENV, cluster_count, host_count, seconds, subnet, tags
from pbs_harness.cli.deploy import cmd_deploy, cmd_up, cmd_verify
from pbs_harness.cli.local import (
    cmd_cluster_down,
    cmd_cluster_ssh,
    cmd_cluster_status,
    cmd_cluster_up,
    lifecycle,
)
from pbs_harness.cli.test import cmd_report, cmd_test
from pbs_harness.cli.test import names_tests as _names_tests
from pbs_harness.errors import HarnessError

__all__ = ["DEBUG_ENV", "_names_tests", "build_parser", "cmd_report", "cmd_test", "main"]


def cmd_down(args: argparse.Namespace) -> int:
    return cmd_cluster_down(args)


def _local_command(sub, name: str, text: str, func) -> argparse.ArgumentParser:
    """A command acting on one local cluster, chosen by --state-dir."""
    from pbs_harness.localcluster.state import DEFAULT_STATE_DIR

    p = sub.add_parser(name, help=text)
    p.add_argument(
        "--state-dir",
        help=f"state directory of the cluster, one per cluster (default: $PBS_HARNESS_STATE_DIR, {DEFAULT_STATE_DIR})",
    )
    p.set_defaults(func=func)
    return p


def _report_command(sub) -> None:
    """`report`: the conformance report of a run, or a comparison of builds' reports (docs/releases.md)."""
    p = sub.add_parser(
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
        "--out", help="output folder (default reports/; with --compare or --matrix: a new or empty folder, see above)"
    )
    p.set_defaults(func=cmd_report)


def shape(p: argparse.ArgumentParser) -> None:
    """The options that give a local cluster its shape (up, cluster up)."""
    from pbs_harness.localcluster.spec import (
        DEFAULT_FLAVOUR,
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
        default=DEFAULT_FLAVOUR,
        help="namespace: hosts share this machine's /opt/pbs, /usr, /etc, /home; system: each host its own "
        "Debian root with systemd, OpenPBS installed per host from packages (--openpbs) "
        f"(default {DEFAULT_FLAVOUR})",
    )
    p.add_argument(
        "--image",
        choices=IMAGES,
        default=DEFAULT_IMAGE,
        help=f"system hosts: the distribution they boot (default {DEFAULT_IMAGE})",
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pbs-harness", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def target(p: argparse.ArgumentParser) -> None:
        p.add_argument("-i", "--inventory", help="inventory path (default inventory/local)")
        p.add_argument(
            "--connect-timeout",
            type=seconds,
            default=10,
            help="seconds the hosts' SSH ports have to answer, all probed at once (default 10)",
        )

    def deploy_opts(p: argparse.ArgumentParser) -> None:
        target(p)
        p.add_argument("--check", action="store_true", help="ansible --check --diff: show what would change")
        p.add_argument("--tags", type=tags, help="only these role tags (install, configure, qmgr, hooks)")
        p.add_argument("--no-verify", action="store_true", help="skip the testinfra host checks after deploy")

    p = _local_command(sub, "up", "local cluster up + deploy OpenPBS on it", cmd_up)
    shape(p)
    deploy_opts(p)
    p = sub.add_parser("deploy", help="deploy OpenPBS, hooks and configs with Ansible, then verify")
    deploy_opts(p)
    p.set_defaults(func=cmd_deploy)
    p = sub.add_parser("verify", help="testinfra checks of the deployed hosts")
    target(p)
    p.set_defaults(func=cmd_verify)
    p = sub.add_parser("test", help="run the acceptance suites (extra args go to pytest)")
    p.add_argument(
        "-i",
        "--inventory",
        action="append",
        help="inventory path (default inventory/local); several: one pytest-xdist worker per inventory",
    )
    p.add_argument(
        "--clusters",
        type=cluster_count,
        metavar="N",
        help="test the first N local clusters of `up --clusters` at once, one worker each (auto: all that are up)",
    )
    p.add_argument(
        "--state-dir", help="state directory of the first local cluster (with --clusters; default as for up)"
    )
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, help="arguments for pytest")
    p.set_defaults(func=cmd_test)
    _report_command(sub)
    _local_command(sub, "down", "remove the local cluster", cmd_down)
    _local_command(sub, "status", "state of the local cluster's hosts", cmd_cluster_status)

    cluster = sub.add_parser("cluster", help="local cluster of namespaced hosts")
    csub = cluster.add_subparsers(dest="verb", required=True, metavar="VERB")
    shape(_local_command(csub, "up", "create or repair the local cluster (idempotent)", cmd_cluster_up))
    _local_command(csub, "down", "remove everything the local cluster created", cmd_cluster_down)
    _local_command(csub, "status", "state of each host", cmd_cluster_status)
    p = _local_command(
        csub, "ssh", "SSH into a host as root or the login user (optionally run a command)", cmd_cluster_ssh
    )
    p.add_argument("host")
    p.add_argument("command", nargs=argparse.REMAINDER)
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


def main(argv: Sequence[str] | None = None) -> int:
    import logging

    # paramiko logs a traceback for every SSH connection that fails; the harness reports those
    # failures itself, naming the host. A handler of its own keeps Python from printing them.
    paramiko_log = logging.getLogger("paramiko")
    if not paramiko_log.handlers:
        paramiko_log.addHandler(logging.NullHandler())
    parser = build_parser()
    try:
        # `test` passes whatever it does not know to pytest (e.g. `pbs-harness test -q -k smoke`).
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            if getattr(args, "command", None) != "test":
                parser.error(f"unrecognized arguments: {' '.join(unknown)}")
            args.pytest_args = [*unknown, *args.pytest_args]
    except SystemExit as exc:  # argparse has printed the usage and the error (or the help)
        return errors.EXIT_OK if exc.code in (0, None) else errors.EXIT_USAGE
    try:
        return int(args.func(args))
    except HarnessError as exc:
        print(f"pbs-harness: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("pbs-harness: interrupted", file=sys.stderr)
        return errors.EXIT_INTERRUPTED
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
