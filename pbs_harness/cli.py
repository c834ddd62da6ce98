"""`pbs-harness` command line: cluster lifecycle, deploy, verify, test."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

from pbs_harness import errors
from pbs_harness.errors import HarnessError


def _progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _spec(args: argparse.Namespace):
    from pbs_harness.localcluster.spec import ClusterSpec

    return ClusterSpec(subnet=args.subnet, host_count=args.hosts, prefix=args.name_prefix, login_user=args.login_user)


def _use_state_dir(args: argparse.Namespace) -> None:
    """--state-dir selects the cluster, for this process and the tools it starts (ansible-inventory)."""
    if getattr(args, "state_dir", None):
        from pbs_harness.localcluster import state

        os.environ[state.STATE_DIR_ENV] = os.path.abspath(args.state_dir)


def _inventory_to_write(args: argparse.Namespace, spec) -> str | None:
    """Where `up` writes the cluster's inventory: --write-inventory, else (names that
    inventory/local's group_vars do not know) <state dir>/inventory."""
    from pbs_harness.localcluster import state
    from pbs_harness.localcluster.spec import DEFAULT_PREFIX

    if args.write_inventory:
        return args.write_inventory
    if spec.prefix != DEFAULT_PREFIX and getattr(args, "deploys", False) and not getattr(args, "inventory", None):
        return str(state.state_dir() / "inventory")
    return None


def cmd_cluster_up(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pbs_harness import project
    from pbs_harness.localcluster import provider, written_inventory

    _use_state_dir(args)
    spec = _spec(args)
    target = _inventory_to_write(args, spec)
    if target:
        written_inventory.check_target(Path(target).resolve())  # refuse before anything is created
    start = time.monotonic()
    st = provider.up(spec, _progress)
    _progress(f"local cluster up: {st.spec.describe()} in {time.monotonic() - start:.1f}s")
    if target:
        hosts = written_inventory.write(Path(target), None, project.root())
        args.written_inventory = str(hosts.parent)
        _progress(f"inventory written: {hosts.parent} (use it with -i {hosts.parent})")
    return errors.EXIT_OK


def cmd_cluster_down(args: argparse.Namespace) -> int:
    from pbs_harness.localcluster import provider, state

    _use_state_dir(args)
    if not provider.down(_progress):
        _progress(f"no local cluster was up in {state.state_dir()}; nothing to remove")
    return errors.EXIT_OK


def cmd_cluster_status(args: argparse.Namespace) -> int:
    from pbs_harness.localcluster import provider

    _use_state_dir(args)
    rows = provider.status()
    for row in rows:
        print(f"{row.name:10} {row.ip:15} {row.summary}")
    return errors.EXIT_OK if all(r.ssh for r in rows) else errors.EXIT_FAILED


def cmd_cluster_ssh(args: argparse.Namespace) -> int:
    from pbs_harness.localcluster import provider, sshkeys

    _use_state_dir(args)
    host = provider.host(args.host)
    argv = ["ssh", "-F", str(sshkeys.ssh_config()), host.name, *args.command]
    os.execvp("ssh", argv)  # noqa: S606 - replaces this process with the user's ssh session
    return errors.EXIT_FAILED  # not reached


def _inventory(args: argparse.Namespace):
    from pbs_harness import inventory, project

    path = project.inventory_path(args.inventory)
    _progress(f"inventory {path}")
    inv = inventory.load(path)
    inventory.check_openpbs_local(inv)
    inventory.check_reachable(inv, timeout=args.connect_timeout)
    return inv


def cmd_deploy(args: argparse.Namespace) -> int:
    from pbs_harness import deploy

    inv = _inventory(args)
    _progress(f"deploying OpenPBS to {len(inv.hosts)} hosts (server {inv.server.name})")
    extra = ["--check", "--diff"] if args.check else []
    if args.tags:
        extra += ["--tags", args.tags]
    run = deploy.run_playbook("site.yml", inv.path, extra, _progress)
    for recap in run.recap.values():
        print(f"  {recap.host:12} ok={recap.ok} changed={recap.changed} failed={recap.failed}")
    _progress(f"deploy finished in {run.seconds:.1f}s, changed={run.changed} (log: {run.log})")
    if args.check or args.no_verify:
        return errors.EXIT_OK
    return cmd_verify(args, inv)


def cmd_verify(args: argparse.Namespace, inv=None) -> int:
    from pbs_harness import verify

    inv = inv or _inventory(args)
    _progress("verifying hosts (testinfra)")
    rc = verify.run(inv)
    _progress("verify: all checks passed" if rc == 0 else f"verify: checks failed (pytest rc={rc})")
    return errors.EXIT_OK if rc == 0 else errors.EXIT_FAILED


def cmd_up(args: argparse.Namespace) -> int:
    args.deploys = True
    cmd_cluster_up(args)
    # A written inventory is the one that knows this cluster's names: deploy through it.
    args.inventory = args.inventory or getattr(args, "written_inventory", None)
    return cmd_deploy(args)


def _names_tests(arg: str, root) -> bool:
    """True when a pytest argument is a test path or node id (ptl_tests/x.py::test_y)."""
    return not arg.startswith("-") and (root / arg.split("::", maxsplit=1)[0]).exists()


def cmd_test(args: argparse.Namespace) -> int:
    import signal
    import subprocess

    from pbs_harness import project

    root = project.root()
    reports = root / "reports"
    reports.mkdir(exist_ok=True)
    # Given test paths or node ids, run only those; otherwise every suite.
    selected = any(_names_tests(a, root) for a in args.pytest_args)
    argv = [
        sys.executable, "-m", "pytest", *([] if selected else [str(root / "ptl_tests")]),
        "--junitxml", str(reports / "junit.xml"),
        "--html", str(reports / "acceptance.html"), "--self-contained-html",
    ]  # fmt: skip
    if args.inventory:
        argv += ["--inventory", args.inventory]
    argv += args.pytest_args
    _progress("running acceptance suites: " + " ".join(argv[3:]))
    # Own session: a terminal Ctrl-C reaches pytest once, through forward(), not twice.
    child = subprocess.Popen(argv, cwd=root, start_new_session=True)

    def forward(signum: int, _frame: object) -> None:
        # pytest heals the running test's faults on SIGINT/SIGTERM; wait for it to finish.
        _progress(f"signal {signum}: stopping the suites after healing the running test")
        child.send_signal(signal.SIGINT)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, forward)
    rc = child.wait()
    cmd_report(argparse.Namespace(results=None, out=None))
    _progress(f"reports: {reports / 'junit.xml'}, {reports / 'acceptance.html'}")
    _progress(f"evidence of failed tests (if any): {reports / 'evidence'}")
    return rc


def cmd_report(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from pbs_harness import project
    from pbs_harness.conformance import catalogue, report

    root = project.root()
    results_file = Path(args.results) if args.results else root / "reports" / "results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    if not results:
        _progress(f"no results at {results_file}: every interface will read 'not run' or 'not covered'")
    paths = report.write_all(
        catalogue.load(), results, root / "ptl_tests", Path(args.out) if args.out else root / "reports"
    )
    _progress("conformance report: " + ", ".join(str(p) for p in paths))
    return errors.EXIT_OK


def _lifecycle(verb: str):
    def handler(args: argparse.Namespace) -> int:
        from pbs_harness.localcluster import provider

        _use_state_dir(args)
        host = provider.host(args.host)
        getattr(host, verb)()
        _progress(f"{verb} {host.name}: done")
        return errors.EXIT_OK

    return handler


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


def build_parser() -> argparse.ArgumentParser:
    from pbs_harness.localcluster.spec import DEFAULT_HOSTS, DEFAULT_PREFIX, DEFAULT_SUBNET

    parser = argparse.ArgumentParser(prog="pbs-harness", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def shape(p: argparse.ArgumentParser) -> None:
        p.add_argument("--hosts", type=int, default=DEFAULT_HOSTS, help=f"number of hosts (default {DEFAULT_HOSTS})")
        p.add_argument("--subnet", default=DEFAULT_SUBNET, help=f"private IPv4 /24 (default {DEFAULT_SUBNET})")
        p.add_argument(
            "--name-prefix",
            default=DEFAULT_PREFIX,
            metavar="PREFIX",
            help=f"host names PREFIX01.. (2-8 lower-case letters/digits; default {DEFAULT_PREFIX})",
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

    def target(p: argparse.ArgumentParser) -> None:
        p.add_argument("-i", "--inventory", help="inventory path (default inventory/local)")
        p.add_argument(
            "--connect-timeout", type=float, default=10, help="seconds to wait for each host's SSH port (default 10)"
        )

    def deploy_opts(p: argparse.ArgumentParser) -> None:
        target(p)
        p.add_argument("--check", action="store_true", help="ansible --check --diff: show what would change")
        p.add_argument("--tags", help="only these role tags (install, configure, qmgr, hooks)")
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
    p.add_argument("-i", "--inventory", help="inventory path (default inventory/local)")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, help="arguments for pytest")
    p.set_defaults(func=cmd_test)
    p = sub.add_parser("report", help="write reports/conformance.{html,md,json} from the last test run")
    p.add_argument("--results", help="results JSON of a run (default reports/results.json)")
    p.add_argument("--out", help="output folder (default reports/)")
    p.set_defaults(func=cmd_report)
    _local_command(sub, "down", "remove the local cluster", cmd_cluster_down)
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
        _local_command(csub, verb, text, _lifecycle(verb)).add_argument("host")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    # `test` passes whatever it does not know to pytest (e.g. `pbs-harness test -q -k smoke`).
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        if getattr(args, "command", None) != "test":
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        args.pytest_args = [*unknown, *args.pytest_args]
    try:
        return int(args.func(args))
    except HarnessError as exc:
        print(f"pbs-harness: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("pbs-harness: interrupted", file=sys.stderr)
        return errors.EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
