"""`pbs-harness` command line: cluster lifecycle, deploy, verify, test."""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from pbs_harness import errors
from pbs_harness.errors import HarnessError, PreconditionError, UsageError

DEBUG_ENV = "PBS_HARNESS_DEBUG"  # set to 1: show the traceback of an operating-system error


def _progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _spec(args: argparse.Namespace):
    from pbs_harness.localcluster.spec import ClusterSpec

    try:
        return ClusterSpec(
            subnet=str(args.subnet), host_count=args.hosts, prefix=args.name_prefix, login_user=args.login_user
        )
    except PreconditionError as exc:  # values the argument types cannot judge alone (subnet size for --hosts)
        raise UsageError(exc.message, exc.hint) from exc


def _require_root() -> None:
    """The local cluster's verbs create namespaces, a bridge and mounts: root only, said before anything."""
    if os.geteuid() != 0:
        raise PreconditionError(
            "the local cluster needs root (it creates network namespaces, a bridge and mounts)",
            "run it as root, e.g. `sudo pbs-harness cluster up`",
        )


def _check_state_dir() -> None:
    """The state directory can hold the cluster's record, and any record there is readable."""
    from pbs_harness import inventory
    from pbs_harness.localcluster import state

    where = state.state_dir()
    named = f"{where} (PBS_HARNESS_STATE_DIR)" if "PBS_HARNESS_STATE_DIR" in os.environ else str(where)
    hint = f"point PBS_HARNESS_STATE_DIR at a directory root can write, or unset it (default {state.DEFAULT_STATE_DIR})"
    if where.exists() and not where.is_dir():
        raise PreconditionError(f"the state directory {named} is not a directory", hint)
    existing = next(p for p in (where, *where.parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise PreconditionError(f"the state directory {named} cannot be created or written ({existing})", hint)
    inventory.local_state()


def _use_state_dir(args: argparse.Namespace) -> None:
    """--state-dir selects the cluster, for this process and the tools it starts (ansible-inventory)."""
    if getattr(args, "state_dir", None):
        from pbs_harness.localcluster import state

        os.environ[state.STATE_DIR_ENV] = os.path.abspath(args.state_dir)


def _inventory_to_write(args: argparse.Namespace) -> str | None:
    """Where `up` writes the cluster's inventory: --write-inventory, else, for a cluster outside the
    default state directory (which inventory/local does not read), <state dir>/inventory."""
    from pbs_harness.localcluster import state

    if args.write_inventory:
        return args.write_inventory
    outside = state.state_dir() != state.state_dir(state.DEFAULT_STATE_DIR)
    if outside and getattr(args, "deploys", False) and not getattr(args, "inventory", None):
        return str(state.state_dir() / "inventory")
    return None


def cmd_cluster_up(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pbs_harness import project
    from pbs_harness.localcluster import provider, written_inventory

    _use_state_dir(args)
    spec = _spec(args)
    _require_root()
    _check_state_dir()
    target = _inventory_to_write(args)
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
    _require_root()
    _check_state_dir()
    if not provider.down(_progress):
        _progress(f"no local cluster was up in {state.state_dir()}; nothing to remove")
    return errors.EXIT_OK


def cmd_cluster_status(args: argparse.Namespace) -> int:
    from pbs_harness.localcluster import provider

    _use_state_dir(args)
    _require_root()
    _check_state_dir()
    rows = provider.status()
    for row in rows:
        print(f"{row.name:10} {row.ip:15} {row.summary}")
    return errors.EXIT_OK if all(r.ssh for r in rows) else errors.EXIT_FAILED


def cmd_cluster_ssh(args: argparse.Namespace) -> int:
    from pbs_harness.localcluster import provider, sshkeys

    _use_state_dir(args)
    _require_root()
    _check_state_dir()
    host = provider.host(args.host)
    argv = ["ssh", "-F", str(sshkeys.ssh_config()), host.name, *args.command]
    os.execvp("ssh", argv)  # noqa: S606 - replaces this process with the user's ssh session
    return errors.EXIT_FAILED  # not reached


def _inventory(args: argparse.Namespace, *, hooks: bool = False):
    """The inventory, checked: its shape, OpenPBS here (local cluster), hook sources and configs, then the hosts."""
    from pbs_harness import hookconfig, inventory, project

    path = project.inventory_path(args.inventory)
    _progress(f"inventory {path}")
    inv = inventory.load(path)
    inventory.check_openpbs_local(inv)
    inventory.check_ssh_keys(inv)
    if hooks:
        hookconfig.check(inv)
    inventory.check_reachable(inv, timeout=args.connect_timeout)
    return inv


def cmd_deploy(args: argparse.Namespace) -> int:
    from pbs_harness import deploy

    inv = _inventory(args, hooks=True)
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
    if rc in (2, -2, -15):  # pytest's "interrupted", or stopped by SIGINT/SIGTERM
        return errors.EXIT_INTERRUPTED
    _progress("verify: all checks passed" if rc == 0 else f"verify: checks failed (pytest rc={rc})")
    return errors.EXIT_OK if rc == 0 else errors.EXIT_FAILED


def cmd_up(args: argparse.Namespace) -> int:
    args.deploys = True
    cmd_cluster_up(args)
    # A written inventory is the one that knows this cluster's names: deploy through it.
    args.inventory = args.inventory or getattr(args, "written_inventory", None)
    return cmd_deploy(args)


def cmd_down(args: argparse.Namespace) -> int:
    return cmd_cluster_down(args)


def _names_tests(arg: str, root) -> bool:
    """True when a pytest argument is a test path or node id (ptl_tests/x.py::test_y)."""
    return not arg.startswith("-") and (root / arg.split("::", maxsplit=1)[0]).exists()


def _results_json(pytest_args: Sequence[str], root: Path) -> Path:
    """Where this run's recorder writes its results (pytest's --results-json, default reports/results.json)."""
    for i, arg in enumerate(pytest_args):
        if arg.startswith("--results-json="):
            return Path(arg.split("=", 1)[1])
        if arg == "--results-json" and i + 1 < len(pytest_args):
            return Path(pytest_args[i + 1])
    return root / "reports" / "results.json"


def cmd_test(args: argparse.Namespace) -> int:
    import signal
    import subprocess

    from pbs_harness import inventory, precheck, project, testrun

    root = project.root()
    informational = bool(testrun.INFO_OPTIONS & set(args.pytest_args))
    inv_arg = args.inventory or os.environ.get("PBS_HARNESS_INVENTORY")
    hint = ""
    if not informational:
        # Never green by accident: the cluster must be there before any test is asked to skip.
        path = project.inventory_path(inv_arg)
        inv = inventory.load(path)
        _progress(f"cluster under test: {len(inv.hosts)} hosts, server {inv.server.name} (inventory {path})")
        precheck.check_cluster(inv, _progress)
        inv_arg, hint = str(path), inventory.unreachable_hint(inv)
    reports = root / "reports"
    reports.mkdir(exist_ok=True)
    # Given test paths or node ids, run only those; otherwise every suite.
    selected = any(_names_tests(a, root) for a in args.pytest_args)
    argv = [
        sys.executable, "-m", "pytest", *([] if selected else [str(root / "ptl_tests")]),
        "--junitxml", str(reports / "junit.xml"),
        "--html", str(reports / "acceptance.html"), "--self-contained-html",
    ]  # fmt: skip
    if inv_arg:
        argv += ["--inventory", inv_arg]
    argv += args.pytest_args
    _progress("running acceptance suites: " + " ".join(argv[3:]))
    started = time.time()
    # Own session: a terminal Ctrl-C reaches pytest once, through forward(), not twice.
    child = subprocess.Popen(argv, cwd=root, start_new_session=True)

    def forward(signum: int, _frame: object) -> None:
        # pytest heals the running test's faults on SIGINT/SIGTERM; wait for it to finish.
        _progress(f"signal {signum}: stopping the suites after healing the running test")
        child.send_signal(signal.SIGINT)

    previous = {signum: signal.signal(signum, forward) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        rc = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    results_file = _results_json(args.pytest_args, root)
    results = testrun.read_results(results_file, since=started)
    if results is not None and not informational:
        cmd_report(argparse.Namespace(results=str(results_file), out=None))
        _progress(f"reports: {reports / 'junit.xml'}, {reports / 'acceptance.html'}")
        _progress(f"evidence of failed tests (if any): {reports / 'evidence'}")
    verdict = testrun.judge(rc, results, informational=informational, unreachable_hint=hint)
    if verdict.code == errors.EXIT_OK:
        _progress(verdict.message)
    else:
        print(f"pbs-harness: {verdict.message}" + (f"\n  fix: {verdict.hint}" if verdict.hint else ""), file=sys.stderr)
    return verdict.code


def _output_dir(arg: str) -> Path:
    """The report folder, created if needed; an error naming it when it cannot hold the reports."""
    out = Path(arg)
    hint = "give --out a folder this user can write (default reports/)"
    if out.exists() and not out.is_dir():
        raise PreconditionError(f"report folder {out} is not a folder", hint)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PreconditionError(f"cannot create report folder {out}: {exc.strerror}", hint) from exc
    if not os.access(out, os.W_OK | os.X_OK):
        raise PreconditionError(f"report folder {out} is not writable", hint)
    return out


def cmd_report(args: argparse.Namespace) -> int:
    from pbs_harness import project
    from pbs_harness.conformance import catalogue, report, results

    root = project.root()
    default = root / "reports" / "results.json"
    out = _output_dir(args.out) if args.out else root / "reports"
    if args.results:
        data = results.load(Path(args.results))
    elif default.exists():
        data = results.load(default)
    else:
        data = {}
        _progress(f"no results at {default}: every interface will read 'not run' or 'not covered'")
    paths = report.write_all(catalogue.load(), data, root / "ptl_tests", out)
    _progress("conformance report: " + ", ".join(str(p) for p in paths))
    return errors.EXIT_OK


def _lifecycle(verb: str):
    def handler(args: argparse.Namespace) -> int:
        from pbs_harness.localcluster import provider

        _use_state_dir(args)
        _require_root()
        _check_state_dir()
        host = provider.host(args.host)
        getattr(host, verb)()
        _progress(f"{verb} {host.name}: done")
        return errors.EXIT_OK

    return handler


def _host_count(text: str) -> int:
    from pbs_harness.localcluster.spec import MAX_HOSTS

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of hosts (1 to {MAX_HOSTS})") from None
    if not 1 <= value <= MAX_HOSTS:
        raise argparse.ArgumentTypeError(f"{value} is out of range: use between 1 and {MAX_HOSTS} hosts")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds (e.g. 10)")
    return value


def _subnet(text: str) -> ipaddress.IPv4Network:
    try:
        net = ipaddress.IPv4Network(text, strict=True)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an IPv4 network with its host bits zero, such as 10.71.0.0/24 ({exc})"
        ) from None
    if not net.is_private:
        raise argparse.ArgumentTypeError(
            f"{text} is not a private range: use one in 10/8, 172.16/12 or 192.168/16, such as 10.71.0.0/24"
        )
    return net


def known_tags(root: Path) -> set[str]:
    """Tags used in the project's playbooks and roles (what --tags can select)."""
    import re

    found: set[str] = set()
    for path in [*root.glob("playbooks/*.yml"), *root.glob("roles/*/tasks/*.yml")]:
        for m in re.finditer(r"^\s*-?\s*tags:\s*\[([^\]]*)\]", path.read_text(), re.M):
            found.update(t.strip().strip("'\"") for t in m[1].split(","))
    return found - {"always", ""}


def _tags(text: str) -> str:
    from pbs_harness import project

    try:
        known = known_tags(project.root())
    except HarnessError:
        return text  # no checkout to read them from: ansible-playbook judges
    unknown = [t for t in text.split(",") if t.strip() not in known]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown tag(s) {', '.join(unknown)}: use {', '.join(sorted(known))}")
    return text


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
        p.add_argument(
            "--hosts", type=_host_count, default=DEFAULT_HOSTS, help=f"number of hosts (default {DEFAULT_HOSTS})"
        )
        p.add_argument(
            "--subnet", type=_subnet, default=DEFAULT_SUBNET, help=f"private IPv4 /24 (default {DEFAULT_SUBNET})"
        )
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
            "--connect-timeout",
            type=_seconds,
            default=10,
            help="seconds the hosts' SSH ports have to answer, all probed at once (default 10)",
        )

    def deploy_opts(p: argparse.ArgumentParser) -> None:
        target(p)
        p.add_argument("--check", action="store_true", help="ansible --check --diff: show what would change")
        p.add_argument("--tags", type=_tags, help="only these role tags (install, configure, qmgr, hooks)")
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
        _local_command(csub, verb, text, _lifecycle(verb)).add_argument("host")
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
