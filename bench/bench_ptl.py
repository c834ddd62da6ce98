"""Benchmark: OpenPBS's own PTL test files for the four features, unmodified, on a harness cluster, then
our suites for the same features on the same cluster; reports/bench-ptl.json and .md (docs/ptl.md).

    python bench/bench_ptl.py --source openpbs-master-cd7ab5e.tar.gz            # default cluster
    python bench/bench_ptl.py --state-dir /var/lib/pbs-harness/pt --name-prefix pt --subnet 10.83.0.0/24 \\
        --source ... --features admin_suspend --limit 2                          # a sample: 2 tests a group

1. `pbs-harness up` (cluster and deploy; a no-op repair when it is up).
2. PTL from the cluster's own OpenPBS source (--source, or $OPENPBS_SOURCE) into a virtualenv of its own
   (pbs_harness.ptl.install); PTL's test accounts (pbs_harness.ptl.accounts).
3. Each PTL file, in groups by declared mom count, with `pbs_benchpress` on the server host
   (pbs_harness.ptl.runner); PTL's JSON results and log are copied to reports/bench-ptl/.
4. The accounts the run made are removed; `pbs-harness up` again restores the harness's baseline that
   PTL's own set-up reverted (it deletes nodes, hooks, queues and mom configs).
5. Our suite of each feature: `pbs-harness test -m FEATURE`, timed.

Wall times are of the whole commands (PTL's setUpClass and clean-up included, like our session set-up).
Exit status 0 when every feature had PTL tests that ran (passed + failed > 0) and our suites ran.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pbs_harness.localcluster import state  # noqa: E402
from pbs_harness.ptl import accounts, install, mapping, report, restore, results, runner, selection, site  # noqa: E402
from pbs_harness.remote import inventory  # noqa: E402 - after sys.path setup
from pbs_harness.remote.cluster import Cluster  # noqa: E402

HARNESS = [sys.executable, "-m", "pbs_harness"]
OUT_DIR = ROOT / "reports" / "bench-ptl"
UNMAPPED: list[str] = []  # PTL tests of the source with no row in the mapping (docs/suites/*.md)


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def cluster_args(args: argparse.Namespace) -> list[str]:
    out = []
    for flag in ("state_dir", "name_prefix", "subnet", "hosts"):
        value = getattr(args, flag)
        if value is not None:
            out += [f"--{flag.replace('_', '-')}", str(value)]
    return out


def up(args: argparse.Namespace) -> None:
    argv = [*HARNESS, "up", *cluster_args(args)]
    say(" ".join(argv[2:]))
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    (OUT_DIR / "up.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        sys.exit(
            f"`{' '.join(argv[2:])}` failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
        )
    say(f"cluster up and deployed in {time.monotonic() - start:.0f}s")


def inventory_path(args: argparse.Namespace) -> Path:
    written = state.state_dir(Path(args.state_dir) if args.state_dir else None) / "inventory"
    return written if (written / "hosts.yml").exists() else ROOT / "inventory" / "local"


def install_ptl(cluster: Cluster, where: site.PtlSite, source_path: str | None) -> install.Source:
    if not source_path:
        sys.exit(
            "name the OpenPBS source of the cluster's OpenPBS: --source PATH or OPENPBS_SOURCE=PATH (.tar.gz or tree)"
        )
    src = install.source(Path(source_path))
    prefix = cluster.prefix
    stamp = cluster.server.run(f"cat {prefix}/.pbs-harness-source 2>/dev/null").stdout.strip() or None
    version = cluster.server.run(f"{prefix}/bin/qstat --version").stdout.strip().split("=")[-1].strip() or None
    configure_ac = (Path(src.path) / "configure.ac").read_text() if src.path.is_dir() else None
    if configure_ac is None:  # read it from the archive only when the installation records no source id
        configure_ac = "" if stamp else _archive_member(src.path, "configure.ac")
    say(f"PTL source {src.path}: {install.check_same_source(src, stamp, configure_ac, version)}")
    if where.build_dir is not None:
        built = install.build(src, where.build_dir, where.host_python)
        say(f"PTL {'installed' if built else 'already installed'} in {where.build_dir}/venv ({install.NOSE_FORK})")
    return src


def _archive_member(archive: Path, name: str) -> str:
    import tarfile

    with tarfile.open(archive) as tar:
        member = next(m for m in tar.getmembers() if m.name.split("/", 1)[-1] == name)
        f = tar.extractfile(member)
        return f.read().decode() if f else ""


def accounts_record(host: str) -> Path:
    return OUT_DIR / "accounts" / f"{host}.json"


def with_accounts(cluster: Cluster, wanted: accounts.Accounts):
    """Create PTL's accounts on every host (a host sharing /etc with an earlier one creates nothing)."""
    for host in cluster:
        record = accounts_record(host.name)
        record.parent.mkdir(parents=True, exist_ok=True)
        accounts.remove(host.run, record)  # what a killed run left
        made = accounts.create(host.run, wanted, record)
        if made.users or made.groups:
            say(f"{host.name}: created {len(made.groups)} groups, {len(made.users)} users; kept {', '.join(made.kept)}")


def drop_accounts(cluster: Cluster) -> None:
    for host in cluster:
        left = accounts.remove(host.run, accounts_record(host.name))
        if left and (left.users or left.groups):
            say(f"{host.name}: could not remove {left.users + left.groups} (still recorded for the next run)")


def run_ptl(cluster: Cluster, where: site.PtlSite, args: argparse.Namespace) -> list[report.FileResult]:
    run_id = time.strftime("run-%Y%m%d-%H%M%S")
    out: list[report.FileResult] = []
    for ptl_file in selection.FILES:
        if ptl_file.feature not in args.features:
            continue
        text = runner.fetch(cluster.server, where.tests_dir / ptl_file.path)
        if text is None:
            sys.exit(f"{where.tests_dir / ptl_file.path} is missing on {where.server}")
        chosen = [
            t.name
            for t in selection.read_tests(text, ptl_file.test_class)
            if not ptl_file.tests or t.name in ptl_file.tests
        ]
        missing = mapping.unmapped(chosen, (ROOT / "docs" / "suites" / f"{ptl_file.feature}.md").read_text())
        if missing:
            say(f"WARNING {ptl_file.path}: no row in docs/suites/{ptl_file.feature}.md for {', '.join(missing)}")
        UNMAPPED.extend(f"{ptl_file.path}::{t}" for t in missing)
        outcomes: list[results.Outcome] = []
        asked, wall = 0, 0.0
        for whole in selection.groups(ptl_file, text):
            picked = tuple(t for t in whole.tests if not args.only or t in args.only)
            group = selection.Group(whole.file, whole.num_moms, picked[: args.limit.get(ptl_file.feature)])
            if not group.tests:
                continue
            run = runner.group_run(where, run_id, group)
            say(f"PTL {ptl_file.path}: {len(group.tests)} tests on {group.num_moms} moms ({run.dir})")
            body = runner.script(where, run, group)
            rc, seconds = runner.run_group(cluster.server, run, body, runner.limit(group), progress=say)
            asked, wall = asked + len(group.tests), wall + seconds
            got = runner.fetch(cluster.server, run.json)
            found = results.parse(got) if got else []
            outcomes += found
            say(f"  exit {rc}, {seconds:.0f}s: {results.counts(found, len(group.tests))}")
            (OUT_DIR / "ptl").mkdir(parents=True, exist_ok=True)
            if got:
                (OUT_DIR / "ptl" / f"{run.name}.json").write_text(got)
            log = runner.fetch(cluster.server, run.out)
            if log:
                (OUT_DIR / "ptl" / f"{run.name}.log.gz").write_bytes(gzip.compress(log.encode()))
        if not asked:  # --only named none of this file's tests
            continue
        out.append(report.file_result(ptl_file.feature, ptl_file.path, asked, outcomes, wall, in_file=len(chosen)))
        (OUT_DIR / "ptl-files.json").write_text(json.dumps([asdict(f) for f in out], indent=2) + "\n")
    return out


def run_ours(
    args: argparse.Namespace, inv_path: Path, written: Callable[[dict[str, report.SuiteResult]], None]
) -> dict[str, report.SuiteResult]:
    """Each feature's suite, timed; `written` is called after each (the report so far)."""
    suites: dict[str, report.SuiteResult] = {}
    for feature in args.features:
        junit = OUT_DIR / f"ours-{feature}.xml"
        argv = [
            *HARNESS,
            "test",
            "-i",
            str(inv_path),
            "-m",
            feature,
            "-p",
            "no:cacheprovider",
            "--junitxml",
            str(junit),
        ]
        say(" ".join(argv[2:]))
        start = time.monotonic()
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
        seconds = time.monotonic() - start
        (OUT_DIR / f"ours-{feature}.log").write_text(proc.stdout + proc.stderr)
        c = (
            report.suite_counts(junit.read_text())
            if junit.exists()
            else dict.fromkeys(("tests", "passed", "xfailed", "failed", "skipped"), 0)
        )
        suites[feature] = report.SuiteResult(
            feature, c["tests"], c["passed"], c["xfailed"], c["failed"], c["skipped"], round(seconds, 1)
        )
        say(f"  exit {proc.returncode}, {seconds:.0f}s: {c}")
        written(suites)
    (OUT_DIR / "ours.json").write_text(json.dumps({k: asdict(v) for k, v in suites.items()}, indent=2) + "\n")
    return suites


def print_server(cluster: Cluster) -> str:
    """`qmgr -c 'print server'` and `qmgr -c 'print sched'`: the configuration PTL reverts and the deploy restores."""
    qmgr = f"{cluster.prefix}/bin/qmgr"
    return cluster.server.run(f"{qmgr} -c 'print server'; {qmgr} -c 'print sched'", timeout=60).stdout


def baseline_difference(inv: inventory.Inventory) -> list[str]:
    """Lines of `print server`/`print sched` that differ between before PTL and after the redeploy."""
    cluster = Cluster.from_inventory(inv)
    try:
        after = print_server(cluster)
    finally:
        cluster.close()
    (OUT_DIR / "qmgr-after-redeploy.txt").write_text(after)
    before = (OUT_DIR / "qmgr-before-ptl.txt").read_text().splitlines()
    now = after.splitlines()
    return [f"- {ln}" for ln in before if ln not in now] + [f"+ {ln}" for ln in now if ln not in before]


def ptl_phase(
    inv: inventory.Inventory, where: site.PtlSite, args: argparse.Namespace
) -> tuple[install.Source, list[report.FileResult], float]:
    """PTL installed, its accounts made, its files run, the accounts removed: (source, results, wall)."""
    cluster = Cluster.from_inventory(inv)
    try:
        src = install_ptl(cluster, where, args.source)
        if where.build_dir:
            accounts_text = (where.build_dir / "src" / accounts.ACCOUNTS_FILE).read_text()
        else:
            accounts_text = _archive_member(src.path, accounts.ACCOUNTS_FILE)
        wanted = accounts.parse(accounts_text)
        start = time.monotonic()
        prefix = PurePosixPath(str(cluster.prefix))
        before = restore.snapshot(cluster.moms, prefix)
        scheduling = restore.sched_scheduling(cluster.server, prefix)
        (OUT_DIR / "qmgr-before-ptl.txt").write_text(print_server(cluster))
        try:
            with_accounts(cluster, wanted)
            files = run_ptl(cluster, where, args)
        finally:
            for line in restore.revert(
                cluster.moms, cluster.server, before, prefix, where.bin_dir, scheduling=scheduling
            ):
                say(f"after PTL: {line}")
            drop_accounts(cluster)
        return src, files, time.monotonic() - start
    finally:
        cluster.close()


def limits(text: str) -> dict[str, int | None]:
    try:
        return selection.parse_limits(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def report_again(out: Path) -> int:
    """Write the report again from a run's saved files (its meta, ptl-files.json, PTL's own JSON results
    per group, ours.json), without touching any cluster: e.g. after the report code changed."""
    meta = json.loads(out.read_text())["meta"] if out.exists() else {}
    files = []
    for saved in json.loads((OUT_DIR / "ptl-files.json").read_text()):
        stem = Path(saved["ptl_file"]).stem
        outcomes = [o for group in sorted((OUT_DIR / "ptl").glob(f"{stem}-*moms.json"))
                    for o in results.parse(group.read_text())]  # fmt: skip
        again = report.file_result(saved["feature"], saved["ptl_file"], saved["ptl_tests"], outcomes,
                                   saved["ptl_seconds"], in_file=saved.get("ptl_tests_in_file", 0))  # fmt: skip
        files.append(again)
    ours = OUT_DIR / "ours.json"
    suites = {k: report.SuiteResult(**v) for k, v in json.loads(ours.read_text()).items()} if ours.exists() else {}
    data = {"meta": meta, "ratio_ptl_over_ours": report.ratios(files, suites), "files": report.rows(files, suites)}
    out.write_text(json.dumps(data, indent=2) + "\n")
    out.with_suffix(".md").write_text(report.markdown(files, suites, meta))
    say(f"written again: {out} and {out.with_suffix('.md')}")
    return 0


def interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    # Ctrl-C, and SIGTERM too, unwind through the clean-ups (PTL killed on the host, the cluster restored,
    # the accounts removed); SIGINT even when a shell started this in the background with it ignored.
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--state-dir", help="the cluster's state directory (as for pbs-harness up)")
    parser.add_argument("--name-prefix", help="host-name prefix of the cluster")
    parser.add_argument("--subnet", help="subnet of the cluster")
    parser.add_argument("--hosts", type=int, help="hosts of the cluster (PTL's files need at most 5 moms)")
    parser.add_argument("--source", default=os.environ.get("OPENPBS_SOURCE"), help="OpenPBS source of the cluster")
    parser.add_argument("--features", default=",".join(selection.FEATURES), help="comma-separated (default: all four)")
    parser.add_argument(
        "--limit",
        type=limits,
        default={},
        help="a sample: N (the first N tests of every PTL group) or FEATURE=N,... (of those features' groups)",
    )
    parser.add_argument("--only", type=lambda v: {t for t in v.split(",") if t}, default=set(),
                        help="only these PTL tests (comma-separated names, in any selected file)")  # fmt: skip
    parser.add_argument("--skip-ours", action="store_true", help="PTL only")
    parser.add_argument("--report-only", action="store_true", help="write the report again from the last run's files")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench-ptl.json")
    args = parser.parse_args()
    args.features = [f for f in args.features.split(",") if f]
    unknown = sorted(set(args.features) - set(selection.FEATURES))
    if unknown:
        parser.error(f"unknown feature {', '.join(unknown)}: choose from {', '.join(selection.FEATURES)}")
    if args.report_only:
        return report_again(args.out)
    if args.state_dir:
        os.environ["PBS_HARNESS_STATE_DIR"] = args.state_dir
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    up(args)
    inv_path = inventory_path(args)
    inv = inventory.load(inv_path)
    where = site.of(inv)
    src, files, ptl_wall = ptl_phase(inv, where, args)
    meta = {
        "cluster": f"{inv.kind.cluster_name(inv.server.vars) or inv.server.name}: {len(inv.hosts)} hosts, "
        f"PTL's moms {', '.join(where.moms[:5])}",
        "OpenPBS source": f"{src.path} ({src.ident})",
        "PTL": f"{where.bin_dir}/pbs_benchpress ({install.NOSE_FORK}), CLI mode (no SWIG pbs_ifl, as packaged)",
        "machine": f"{os.cpu_count()} cores; one run, PTL then ours, on the same cluster",
        "PTL phase wall (with account set-up)": f"{ptl_wall:.0f} s",
        "sample": ", ".join(f"{k}: first {v} tests of each group" for k, v in args.limit.items() if v)
        or ("only " + ", ".join(sorted(args.only)) if args.only else "every selected test"),
        "PTL tests without a row in docs/suites/*.md": ", ".join(UNMAPPED) or "none",
    }

    def written(suites: dict[str, report.SuiteResult]) -> None:
        data = {"meta": meta, "ratio_ptl_over_ours": report.ratios(files, suites), "files": report.rows(files, suites)}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(data, indent=2) + "\n")
        args.out.with_suffix(".md").write_text(report.markdown(files, suites, meta))

    written({})  # PTL's half already, should our suites be interrupted
    suites: dict[str, report.SuiteResult] = {}
    if not args.skip_ours:
        say("restoring the harness's baseline that PTL reverted")
        up(args)
        changed = baseline_difference(inv)
        say("server/scheduler configuration as before PTL" if not changed else
            "server/scheduler configuration differs from before PTL:\n  " + "\n  ".join(changed))  # fmt: skip
        meta["qmgr print server/sched, before PTL vs after the redeploy"] = (
            "same" if not changed else "; ".join(changed)
        )
        suites = run_ours(args, inv_path, written)
    say(f"written: {args.out} and {args.out.with_suffix('.md')}")
    ran = {f.feature for f in files if f.ptl_passed + f.ptl_failed > 0}
    ok = ran >= set(args.features) and (args.skip_ours or all(s.tests for s in suites.values()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
