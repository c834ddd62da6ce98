"""`test` (the acceptance suites, on one cluster or one worker per cluster) and `report` (its --compare
and --matrix: pbs_harness.cli.compare)."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from pbs_harness.cli.common import cannot_write, progress, use_state_dir
from pbs_harness.common import errors, shell
from pbs_harness.common.errors import PreconditionError, UsageError


def names_tests(arg: str, root: Path) -> bool:
    """True when a pytest argument is a test path or node id (ptl_tests/x.py::test_y)."""
    if arg.startswith("-"):
        return False
    try:
        return (root / arg.split("::", maxsplit=1)[0]).exists()
    except OSError:  # e.g. a long -k expression given as its own argument: "File name too long"
        return False


def results_json(pytest_args: Sequence[str], root: Path) -> Path:
    """Where this run's recorder writes its results (pytest's --results-json, default reports/results.json)."""
    for i, arg in enumerate(pytest_args):
        if arg.startswith("--results-json="):
            return Path(arg.split("=", 1)[1])
        if arg == "--results-json" and i + 1 < len(pytest_args):
            return Path(pytest_args[i + 1])
    return root / "reports" / "results.json"


def fleet_inventories(requested: int | str) -> list[str | None]:
    """The inventories of the first N clusters of the fleet in the state directory (`auto`: all that are
    up); None stands for inventory/local. Refuses a fleet another checkout brought up."""
    from pbs_harness.common import project
    from pbs_harness.localcluster import fleet, state

    members = fleet.recorded()
    if not members:
        if requested in ("auto", 1):
            return [None]  # the suites say themselves that no cluster is up
        raise PreconditionError(
            f"no local cluster is up in {state.describe_dir()}",
            f"bring them up first: pbs-harness up --clusters {requested}",
        )
    count = len(members) if requested == "auto" else int(requested)
    if count > len(members):
        raise PreconditionError(
            f"--clusters {count}: only {len(members)} local clusters are up in the fleet of {state.state_dir()} "
            f"({', '.join(m.name for m in members)})",
            f"bring the others up first: pbs-harness up --clusters {count}",
        )
    first = state.load(members[0].root)
    here = project.checkout()
    if count > 1 and first is not None and first.owner not in (None, here):
        raise PreconditionError(
            f"the local clusters in {members[0].root} were brought up by another checkout ({first.owner})",
            "run the suites from that checkout, or name the inventories explicitly (-i INV1 -i INV2 ...)",
        )
    out: list[str | None] = []
    for member in members[:count]:
        written = member.written_inventory()
        out.append(str(written) if (written / "hosts.yml").exists() else None)
    return out


def inventories_of(args: argparse.Namespace) -> list[str | None]:
    """The clusters to test: every -i, else --clusters N of the fleet, else PBS_HARNESS_INVENTORY or the default."""
    given = args.inventory or []
    if given:
        if args.clusters not in (None, "auto", len(given)):
            raise UsageError(
                f"--clusters {args.clusters} with {len(given)} inventories (-i)",
                "give one -i per cluster, or --clusters alone for the local clusters",
            )
        return list(given)
    if args.clusters is not None:
        use_state_dir(args)
        return fleet_inventories(args.clusters)
    return [os.environ.get("PBS_HARNESS_INVENTORY")]


def _check_clusters(inventories: list[str | None]) -> tuple[list[str], str]:
    """Each cluster can be tested now (precheck), named in a line; their paths and unreachable hints."""
    from pbs_harness.common import project
    from pbs_harness.remote import inventory
    from pbs_harness.suite import precheck

    paths, hints = [], []
    for index, given in enumerate(inventories):
        path = project.inventory_path(given)
        inv = inventory.load(path)
        where = f"cluster {index + 1} of {len(inventories)}: " if len(inventories) > 1 else "cluster under test: "
        progress(f"{where}{len(inv.hosts)} hosts, server {inv.server.name} (inventory {path})")
        precheck.check_cluster(inv, progress)
        paths.append(str(path))
        hints.append(inventory.unreachable_hint(inv))
    return paths, "; ".join(dict.fromkeys(h for h in hints if h))


def cmd_test(args: argparse.Namespace) -> int:
    if args.judge_only:
        return _judge_only(args)
    if getattr(args, "cloud", None):
        return _cloud_test(args)
    return run_suites(args, inventories_of(args))


def _judge_only(args: argparse.Namespace) -> int:
    """`test --judge-only`: the pytest line judged as ./acceptance runs it (PYTEST_ARGS), by the standard-library
    judge (cli/pytest_judge.py) and then by pytest's own parse; nothing else. ./acceptance runs it after make
    venv and before `pbs-harness up`, so what only pytest knows stops the run before any host too."""
    from pbs_harness.cli import pytest_judge
    from pbs_harness.common import project

    if args.inventory or args.clusters is not None or args.state_dir or getattr(args, "cloud", None):
        raise UsageError(
            "--judge-only judges pytest's line, and this one holds pbs-harness test's own options "
            "(-i, --clusters, --state-dir or --cloud)",
            "leave them out of PYTEST_ARGS: ./acceptance sets the clusters from CLUSTERS",
        )
    root = project.root()
    refused = pytest_judge.judge(args.pytest_args, root)
    if refused is not None:
        raise UsageError(refused.what, refused.fix)
    _check_pytest_line(args.pytest_args, root)
    progress("the pytest line is taken: " + (" ".join(args.pytest_args) or "(empty)"))
    return errors.EXIT_OK


def _cloud_test(args: argparse.Namespace) -> int:
    """`test --cloud KIND`: the pytest line judged first (no API call for a bad one), then the whole cloud run
    (cli.cloud.cmd_cloud_test: create, deploy, verify, these suites, always remove)."""
    from pbs_harness.cli.cloud import cmd_cloud_test
    from pbs_harness.common import project
    from pbs_harness.suite import testrun

    if args.inventory or args.clusters is not None:
        raise UsageError(
            "--cloud creates the cluster it tests; -i/--clusters name clusters that exist",
            "give --cloud (a new run, removed afterwards) or -i/--clusters, not both",
        )
    if testrun.INFO_OPTIONS & set(args.pytest_args):
        raise UsageError(
            f"--cloud with {' '.join(sorted(testrun.INFO_OPTIONS & set(args.pytest_args)))} would create VMs only "
            "to list tests",
            "leave --cloud out to list or collect the tests",
        )
    _judge_pytest_line(args.pytest_args, project.root())
    return cmd_cloud_test(args, lambda a, inventory: run_suites(a, [inventory], line_checked=True))


def run_suites(args: argparse.Namespace, inventories: list[str | None], line_checked: bool = False) -> int:
    """The suites on these clusters (one worker each when several); the verdict's exit code."""
    from pbs_harness.common import project
    from pbs_harness.suite import testrun

    root = project.root()
    informational = bool(testrun.INFO_OPTIONS & set(args.pytest_args))
    hint = ""
    paths = [p for p in inventories if p]
    if not informational:
        # The pytest line is judged first: `test -i UNREACHABLE --no-such-opt` is a bad command line (2), not a
        # host that does not answer (4), and `test -m typo` is refused, not run to pytest's "no tests" (5).
        if not line_checked:
            _judge_pytest_line(args.pytest_args, root)
        # Never green by accident: the clusters must be there before any test is asked to skip.
        paths, hint = _check_clusters(inventories)
    reports = root / "reports"
    reports.mkdir(exist_ok=True)
    # Given test paths or node ids, run only those; otherwise every suite.
    selected = any(names_tests(a, root) for a in args.pytest_args)
    argv = [
        sys.executable, "-m", "pytest", *([] if selected else [str(root / "ptl_tests")]),
        "--junitxml", str(reports / "junit.xml"),
        "--html", str(reports / "acceptance.html"), "--self-contained-html",
    ]  # fmt: skip
    if len(inventories) > 1:
        # One xdist worker per cluster; a worker that dies is not replaced (its cluster would be tested twice).
        argv += ["-n", str(len(inventories)), "--dist", "load", "--max-worker-restart", "0"]
        for path in paths or inventories:
            argv += ["--worker-inventory", str(path)]
    elif paths:
        argv += ["--inventory", paths[0]]
    argv += args.pytest_args
    progress("running acceptance suites: " + " ".join(argv[3:]))
    started = time.time()
    rc, signalled = _run_pytest(argv, root)
    results_file = results_json(args.pytest_args, root)
    results = testrun.read_results(results_file, since=started)
    if results is not None and not informational:
        if (reports / "junit.xml").exists():
            from pbs_harness.conformance import junit

            junit.annotate(reports / "junit.xml", results)
        write_report(results_file, reports)
        progress(f"reports: {reports / 'junit.xml'}, {reports / 'acceptance.html'}")
        progress(f"evidence of failed and xfailed tests and retried attempts: {reports / 'evidence'}")
    verdict = testrun.judge(rc, results, informational=informational, unreachable_hint=hint, signalled=signalled)
    if verdict.code == errors.EXIT_OK:
        progress(verdict.message)
    else:
        print(f"pbs-harness: {verdict.message}" + (f"\n  fix: {verdict.hint}" if verdict.hint else ""), file=sys.stderr)
    return verdict.code


def _judge_pytest_line(pytest_args: list[str], root: Path) -> None:
    """The line judged as `test --judge-only` judges it, before any host or cloud API: pytest's parse (its own
    message for an option or value it refuses), then the harness's judge (cli/pytest_judge.py) for what that
    parse takes but the run would not: a -m marker no suite registers (it selected no test: pytest's exit 5
    after the hosts were probed), a path not in the checkout, an option the harness gives pytest itself."""
    from pbs_harness.cli import pytest_judge

    _check_pytest_line(pytest_args, root)
    refused = pytest_judge.judge(pytest_args, root)
    if refused is not None:
        raise UsageError(refused.what, refused.fix)


def _check_pytest_line(pytest_args: list[str], root: Path) -> None:
    """pytest reads the line (with the suites' own options) and stops: nothing collected, no host contacted."""
    selected = any(names_tests(a, root) for a in pytest_args)
    argv = [sys.executable, "-m", "pytest", "-p", "pbs_harness.cli.pytest_line"]
    argv += [*([] if selected else [str(root / "ptl_tests")]), *pytest_args]
    proc = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode == 0:
        return
    said = (proc.stderr or proc.stdout).strip()
    if proc.returncode == 4:  # pytest's usage error
        sys.stderr.write(said + "\n")
        raise UsageError(
            "pytest refused the command line (its message is above); no host was contacted",
            "fix the pytest option or value it names (pbs-harness test --help lists them)",
        )
    raise PreconditionError(
        f"pytest could not start (exit {proc.returncode}): {said[-2000:]}",
        "run `make venv` again; if it persists, run the same pytest line with PBS_HARNESS_DEBUG=1",
    )


def _run_pytest(argv: list[str], root: Path) -> tuple[int, bool]:
    """pytest's exit code, and whether a stop signal (Ctrl-C, SIGTERM) was passed to it."""
    # Own session: a terminal Ctrl-C reaches pytest once, through forward(), not twice. pytest heals
    # the running test's faults on SIGINT (a parallel run's controller passes it to every worker).
    # SIGINT too when this process is killed outright (SIGKILL): pytest heals and stops, not runs on alone.
    dies = shell.dies_with_this_process(signal.SIGINT)
    child = subprocess.Popen(argv, cwd=root, start_new_session=True, preexec_fn=dies)  # noqa: PLW1509 - prctl only
    signalled = False

    def forward(signum: int, _frame: object) -> None:
        nonlocal signalled
        signalled = True
        progress(f"signal {signum}: stopping the suites after healing the running test")
        child.send_signal(signal.SIGINT)

    previous = {signum: signal.signal(signum, forward) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        return child.wait(), signalled
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


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
    why = cannot_write(out)
    if why:
        raise PreconditionError(f"report folder {out} is not writable ({why})", hint)
    return out


def write_report(results_file: Path | None, out: Path, since: Path | None = None) -> list[Path]:
    """Write the conformance report of `results_file` (None: reports/results.json when there is one) into the
    folder `out`, with what changed since the previous run kept in `out`/history/ (or since the run `since`,
    a results.json or history file), and keep this run there; returns the files written."""
    from pbs_harness.common import project
    from pbs_harness.conformance import catalogue, ci_summary, history, report, results, run_timeline

    root = project.root()
    default = root / "reports" / "results.json"
    if results_file is not None:
        data = results.load(results_file)
    elif default.exists():
        data = results.load(default)
    else:
        data = {}
        progress(f"no results at {default}: every interface will read 'not run' or 'not covered'")
    cat = catalogue.load()
    head = report.headline_of(cat, data, root / "ptl_tests")
    run = history.entry(data, head.line(), head.state, head.tests, head.builds)
    before, left_out = history.load(out / history.FOLDER)
    for why in left_out:
        progress(f"run history: left out {why}")
    if since is not None:
        before = [_run_of(since)]
    trend = history.trend(run, history.earlier(before, run["started"]) if since is None else before)
    run_timeline.write(out / "timeline.html", data)  # first: the conformance report links it
    paths = report.write_all(cat, data, root / "ptl_tests", out, trend)
    progress("conformance report: " + ", ".join(str(p) for p in [*paths, out / "timeline.html"]))
    progress(head.line())
    if trend is not None:
        progress(trend.line())
    if data.get("tests"):
        progress(f"run history: {history.record(out / history.FOLDER, run)}")
    published = ci_summary.publish(ci_summary.markdown(head, data, str(out), trend))
    if published:
        progress("CI summary written to " + ", ".join(published))
    return paths


def _run_of(path: Path) -> dict:
    """The run `path` names for --since: a history file as kept, or a results.json made into one."""
    from pbs_harness.conformance import history, jsonfile, results

    data = jsonfile.read(path, "run to compare with", SINCE_HINT)
    if isinstance(data, dict) and isinstance(data.get("tests"), dict) and data.get("schema") == history.SCHEMA:
        return data
    loaded = results.load(path)
    return history.entry(loaded, "", "", {}, [])


SINCE_HINT = "give --since a results.json of an earlier run or a file of reports/history/"


def cmd_report(args: argparse.Namespace) -> int:
    from pbs_harness.cli import compare
    from pbs_harness.common import project

    if getattr(args, "since", None) and (getattr(args, "compare", None) or getattr(args, "matrix", None)):
        raise errors.UsageError(
            "--since goes with a run's report, not with --compare or --matrix",
            "drop --since, or run `report --since RUN.json` on its own",
        )
    if getattr(args, "compare", None):
        return compare.cmd_compare(args)
    if getattr(args, "matrix", None):
        return compare.cmd_matrix(args)

    out = _output_dir(args.out) if args.out else project.root() / "reports"
    since = Path(args.since) if getattr(args, "since", None) else None
    write_report(Path(args.results) if args.results else None, out, since)
    return errors.EXIT_OK
