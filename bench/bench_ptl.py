"""Benchmark: OpenPBS's own PTL test files for the four features, unmodified, on a harness cluster, then
our suites for the same features on the same cluster; reports/bench-ptl.json and .md (docs/ptl.md).

    python bench/bench_ptl.py --source openpbs-master-cd7ab5e.tar.gz            # default cluster
    python bench/bench_ptl.py --state-dir /var/lib/pbs-harness/pt --name-prefix pt --subnet 10.83.0.0/24 \\
        --source ... --features admin_suspend --limit 2                          # a sample: 2 tests a group

1. `pbs-harness up` (cluster and deploy; a no-op repair when it is up).
2. PTL from the cluster's own OpenPBS source (--source, or $OPENPBS_SOURCE) into a virtualenv of its own
   (pbs_harness.ptl.install); PTL's test accounts (pbs_harness.ptl.accounts).
3. Each PTL file, in groups by declared mom count, with `pbs_benchpress` on the server host
   (pbs_harness.ptl.runner); PTL's JSON results and log are copied to reports/bench-ptl/, and for a part
   with a failed test PTL's post-analysis data (the daemons' logs of each failure).
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
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pbs_harness import hosts  # noqa: E402
from pbs_harness.localcluster import fleet, state  # noqa: E402
from pbs_harness.ptl import (  # noqa: E402
    accounts,
    install,
    mapping,
    pool,
    report,
    restore,
    results,
    runner,
    scenarios,
    selection,
    site,
)
from pbs_harness.remote import inventory  # noqa: E402 - after sys.path setup
from pbs_harness.remote.cluster import Cluster  # noqa: E402

HARNESS = [sys.executable, "-m", "pbs_harness"]
DEFAULT_PART_SIZE = 3  # PTL tests per pbs_benchpress on several clusters: small parts keep every cluster busy
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
    argv = [*HARNESS, "up", *cluster_args(args), *(["--clusters", str(args.clusters)] if args.clusters > 1 else [])]
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


def inventory_paths(args: argparse.Namespace) -> list[Path]:
    """The inventory of each cluster the bench uses: the one cluster's, or those of the first --clusters
    members of the local fleet `up` brought up."""
    if args.clusters == 1:
        return [inventory_path(args)]
    members = fleet.recorded(Path(args.state_dir) if args.state_dir else None)[: args.clusters]
    found = [m.written_inventory() for m in members if (m.written_inventory() / "hosts.yml").exists()]
    if len(found) < args.clusters:
        sys.exit(f"{args.clusters} clusters asked for, {len(found)} are up with an inventory: see {OUT_DIR / 'up.log'}")
    return found


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


@dataclass
class Planned:
    """One selected PTL file: its parts to run and how many tests the file's selection has."""

    feature: str
    path: str
    in_file: int
    parts: list[pool.Part]


def plan(cluster: Cluster, where: site.PtlSite, args: argparse.Namespace) -> list[Planned]:
    """The PTL files of the features asked for, their groups limited by --limit/--only, cut in parts."""
    out = []
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
        groups = []
        for whole in selection.groups(ptl_file, text):
            picked = tuple(t for t in whole.tests if not args.only or t in args.only)
            group = selection.Group(whole.file, whole.num_moms, picked[: args.limit.get(ptl_file.feature)])
            if group.tests:
                groups.append(group)
        if groups:  # --only may name none of this file's tests
            out.append(Planned(ptl_file.feature, ptl_file.path, len(chosen), pool.parts(groups, args.part_size)))
    return out


def part_runner(cluster: Cluster, where: site.PtlSite, run_id: str) -> pool.Runner:
    """What runs one part on `cluster`: its pbs_benchpress, then PTL's results and log copied here."""

    def run(part: pool.Part, stop: Callable[[], bool]) -> pool.PartResult:
        group = part.group
        run = runner.group_run(where, run_id, group, part.index if part.of > 1 else 0)
        say(f"{cluster_name(cluster)}: PTL {part.label}: {len(group.tests)} tests on {group.num_moms} moms ({run.dir})")
        body = runner.script(where, run, group)
        rc, seconds = runner.run_group(cluster.server, run, body, runner.limit(group), progress=say, stop=stop)
        got = runner.fetch(cluster.server, run.json)
        found = results.parse(got) if got else []
        say(f"  {run.name}: exit {rc}, {seconds:.0f}s: {results.counts(found, len(group.tests))}")
        (OUT_DIR / "ptl").mkdir(parents=True, exist_ok=True)
        if got:
            (OUT_DIR / "ptl" / f"{run.name}.json").write_text(got)
        log = runner.fetch(cluster.server, run.out)
        if log:
            (OUT_DIR / "ptl" / f"{run.name}.log.gz").write_bytes(gzip.compress(log.encode()))
        if any(o.count == results.FAILED for o in found):  # the daemons' logs of its failures (runner.py)
            post = runner.fetch_tree(cluster.server, run.post_data)
            if post:
                (OUT_DIR / "ptl" / f"{run.name}.post.tar.gz").write_bytes(post)
        return pool.PartResult(part, cluster_name(cluster), rc, seconds, found)

    return run


def cluster_name(cluster: Cluster) -> str:
    return cluster.server.name


def file_results(planned: list[Planned], done: list[pool.PartResult]) -> list[report.FileResult]:
    """Per PTL file: its parts' outcomes, and its PTL time = the sum of its parts' walls."""
    out = []
    for p in planned:
        mine = [r for r in done if r.part.group.file.path == p.path]
        asked = sum(len(part.group.tests) for part in p.parts)
        outcomes = [o for r in mine for o in r.outcomes]
        wall = sum(r.seconds for r in mine)
        out.append(report.file_result(p.feature, p.path, asked, outcomes, wall, in_file=p.in_file))
    return out


def run_ours(
    args: argparse.Namespace, inv_paths: list[Path], written: Callable[[dict[str, report.SuiteResult]], None]
) -> dict[str, report.SuiteResult]:
    """Each feature's suite on every cluster (one pytest-xdist worker each), timed; `written` is called
    after each (the report so far)."""
    suites: dict[str, report.SuiteResult] = {}
    for feature in args.features:
        junit = OUT_DIR / f"ours-{feature}.xml"
        argv = [
            *HARNESS,
            "test",
            *(arg for path in inv_paths for arg in ("-i", str(path))),
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
    """Lines of `print server`/`print sched` that differ between before PTL and after the redeploy, once the
    server and scheduler attributes PTL's revert left (and the deploy does not manage) are put back."""
    cluster = Cluster.from_inventory(inv)
    try:
        name = cluster_name(cluster)
        before_text = (OUT_DIR / f"qmgr-before-ptl-{name}.txt").read_text()
        for command in restore.config_commands(before_text, print_server(cluster)):
            res = cluster.server.run(f"{cluster.prefix}/bin/qmgr -c {shlex.quote(command)}", timeout=60)
            say(f"{name}: after the redeploy, as before PTL: qmgr -c '{command}': exit {res.rc}")
        after = print_server(cluster)
    finally:
        cluster.close()
    (OUT_DIR / f"qmgr-after-redeploy-{name}.txt").write_text(after)
    before = before_text.splitlines()
    now = after.splitlines()
    return [f"- {name}: {ln}" for ln in before if ln not in now] + [f"+ {name}: {ln}" for ln in now if ln not in before]


def same_scenarios(files: list[report.FileResult], features: list[str]) -> dict[str, scenarios.FeatureScenarios]:
    """Each feature's PTL tests that ran (PTL's saved results) paired with ours (our suite's JUnit file)."""
    out = {}
    for feature in features:
        junit = OUT_DIR / f"ours-{feature}.xml"
        if not junit.exists():
            continue
        stems = [Path(f.ptl_file).stem for f in files if f.feature == feature]
        ptl = [o for stem in stems for group in sorted((OUT_DIR / "ptl").glob(f"{stem}-*moms*.json"))
               for o in results.parse(group.read_text())]  # fmt: skip
        doc = (ROOT / "docs" / "suites" / f"{feature}.md").read_text()
        out[feature] = scenarios.pair(feature, ptl, doc, scenarios.our_cases(junit.read_text()))
    return out


def report_data(meta: dict[str, str], files: list[report.FileResult], suites: dict[str, report.SuiteResult],
                features: list[str]) -> tuple[dict[str, object], str]:  # fmt: skip
    """The JSON object and the markdown of the report."""
    paired = same_scenarios(files, features) if suites else {}
    same = {k: asdict(v) | {"ratio": v.ratio} for k, v in paired.items()}
    data = {
        "meta": meta,
        "same_scenarios": {**same, "all": scenarios.overall(paired)} if paired else None,
        "ratio_ptl_over_ours": report.ratios(files, suites),
        "files": report.rows(files, suites),
    }
    return data, report.markdown(files, suites, meta, paired)


def put_ptl_into_hosts(cluster: Cluster, where: site.PtlSite) -> None:
    """For hosts with roots of their own (system hosts): PTL, built here, and the harness's ssh directory,
    copied into every host at the same path; their Python must be the one PTL's virtualenv was made with."""
    if not where.copy_to_hosts:
        return
    # The virtualenv holds this Python's minor version in its paths (lib/python3.11) and its compiled modules.
    ask = "import sys; print('Python %d.%d' % sys.version_info[:2])"
    here = subprocess.run([where.host_python, "-c", ask], capture_output=True, text=True, check=True).stdout.strip()
    there = cluster.server.check(f"{where.host_python} -c {shlex.quote(ask)}").stdout.strip()
    if here != there:
        sys.exit(
            f"PTL's virtualenv is made here with {where.host_python} ({here}), and {where.server} has {there}: "
            "it would not run there. Use hosts of this machine's distribution (e.g. --image debian-12 here)"
        )
    for name in cluster.inventory.hosts:
        kind = hosts.host(name, cluster.inventory.hosts[name].vars, cluster)
        for path in where.copy_to_hosts:
            kind.put_tree(path)
    copied = ", ".join(map(str, where.copy_to_hosts))
    say(f"{cluster_name(cluster)}: {copied} copied into its {len(cluster.inventory.hosts)} hosts")


def take_ptl_out_of_hosts(cluster: Cluster, where: site.PtlSite) -> None:
    """The copies put_ptl_into_hosts made, removed: the ssh directory holds the harness's private key."""
    for name in cluster.inventory.hosts:
        kind = hosts.host(name, cluster.inventory.hosts[name].vars, cluster)
        for path in where.copy_to_hosts:
            kind.remove_tree(path)


def ptl_phase(
    invs: list[inventory.Inventory], args: argparse.Namespace
) -> tuple[install.Source, list[report.FileResult], float]:
    """PTL installed on every cluster, its accounts made, its files' parts shared out among the clusters,
    every cluster restored and the accounts removed: (source, results, wall of the whole phase)."""
    clusters = [Cluster.from_inventory(inv) for inv in invs]
    sites = [site.of(inv) for inv in invs]
    restores: list[Callable[[], None]] = []
    try:
        src = None
        for cluster, where in zip(clusters, sites, strict=True):
            src = install_ptl(cluster, where, args.source)
        assert src is not None
        first = sites[0]
        if first.build_dir:
            accounts_text = (first.build_dir / "src" / accounts.ACCOUNTS_FILE).read_text()
        else:
            accounts_text = _archive_member(src.path, accounts.ACCOUNTS_FILE)
        wanted = accounts.parse(accounts_text)
        start = time.monotonic()
        for cluster, where in zip(clusters, sites, strict=True):
            prefix = PurePosixPath(str(cluster.prefix))
            before = restore.snapshot(cluster.moms, prefix)
            scheduling = restore.sched_scheduling(cluster.server, prefix)
            (OUT_DIR / f"qmgr-before-ptl-{cluster_name(cluster)}.txt").write_text(print_server(cluster))

            def undo(cluster=cluster, where=where, before=before, prefix=prefix, scheduling=scheduling) -> None:
                for line in restore.revert(
                    cluster.moms, cluster.server, before, prefix, where.bin_dir, scheduling=scheduling
                ):
                    say(f"{cluster_name(cluster)}: after PTL: {line}")
                drop_accounts(cluster)
                take_ptl_out_of_hosts(cluster, where)

            restores.append(undo)
            for line in restore.run_pbs_the_ptl_way(list(cluster)):
                say(f"{cluster_name(cluster)}: before PTL: {line}")
            put_ptl_into_hosts(cluster, where)
            with_accounts(cluster, wanted)
        planned = plan(clusters[0], first, args)
        work = sorted((part for p in planned for part in p.parts), key=lambda part: -expected_seconds(part))
        say(f"PTL: {sum(len(p.group.tests) for p in work)} tests in {len(work)} parts on {len(clusters)} cluster(s)")
        run_id = time.strftime("run-%Y%m%d-%H%M%S")
        runners = {cluster_name(c): part_runner(c, w, run_id) for c, w in zip(clusters, sites, strict=True)}
        done = pool.share_out(work, runners, say)
        failed = [r for r in done if r.error]
        if failed:
            say("PTL parts that did not run: " + "; ".join(f"{r.part.label} on {r.cluster}: {r.error}" for r in failed))
        files = file_results(planned, done)
        (OUT_DIR / "ptl-files.json").write_text(json.dumps([asdict(f) for f in files], indent=2) + "\n")
        return src, files, time.monotonic() - start
    finally:
        for undo in restores:
            undo()
        for cluster in clusters:
            cluster.close()


# Seconds a PTL test took on average in the measured runs of docs/ptl.md (25 Nov 2026), per file: only to
# start the longest parts first, so that no cluster is left with a long part at the end.
EXPECTED_PER_TEST = {
    "pbs_reliable_job_startup.py": 170,
    "pbs_node_rampdown_keep_select.py": 86,
    "pbs_node_rampdown.py": 60,
    "pbs_maintenance_reservations.py": 75,
    "pbs_admin_suspend.py": 46,
}


def expected_seconds(part: pool.Part) -> float:
    name = part.group.file.path.rsplit("/", 1)[-1]
    return len(part.group.tests) * EXPECTED_PER_TEST.get(name, 40) + 15 * part.group.num_moms


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
        outcomes = [o for group in sorted((OUT_DIR / "ptl").glob(f"{stem}-*moms*.json"))
                    for o in results.parse(group.read_text())]  # fmt: skip
        again = report.file_result(saved["feature"], saved["ptl_file"], saved["ptl_tests"], outcomes,
                                   saved["ptl_seconds"], in_file=saved.get("ptl_tests_in_file", 0))  # fmt: skip
        files.append(again)
    ours = OUT_DIR / "ours.json"
    suites = {k: report.SuiteResult(**v) for k, v in json.loads(ours.read_text()).items()} if ours.exists() else {}
    data, text = report_data(meta, files, suites, list(dict.fromkeys(f.feature for f in files)))
    out.write_text(json.dumps(data, indent=2) + "\n")
    out.with_suffix(".md").write_text(text)
    say(f"written again: {out} and {out.with_suffix('.md')}")
    return 0


def interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    # Ctrl-C, and SIGTERM too, unwind through the clean-ups (PTL killed on the host, the cluster restored,
    # the accounts removed); SIGINT even when a shell started this in the background with it ignored.
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    args = parse_args()
    if args.report_only:
        return report_again(args.out)
    return bench(args)


def parse_args() -> argparse.Namespace:
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
    parser.add_argument("--clusters", type=int, default=1,
                        help="local clusters (pbs-harness up --clusters N) sharing out PTL's parts, and running our "
                        "suites (one pytest-xdist worker each); default 1")  # fmt: skip
    parser.add_argument("--part-size", type=int, default=None,
                        help="PTL tests per pbs_benchpress (0: a whole group); default 0 on one cluster, "
                        f"{DEFAULT_PART_SIZE} on several")  # fmt: skip
    parser.add_argument("--skip-ours", action="store_true", help="PTL only")
    parser.add_argument("--report-only", action="store_true", help="write the report again from the last run's files")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench-ptl.json")
    args = parser.parse_args()
    args.features = [f for f in args.features.split(",") if f]
    unknown = sorted(set(args.features) - set(selection.FEATURES))
    if unknown:
        parser.error(f"unknown feature {', '.join(unknown)}: choose from {', '.join(selection.FEATURES)}")
    if not 1 <= args.clusters <= 12:
        parser.error(f"--clusters {args.clusters}: give 1 to 12")
    if args.part_size is None:
        args.part_size = 0 if args.clusters == 1 else DEFAULT_PART_SIZE
    if args.part_size < 0:
        parser.error(f"--part-size {args.part_size}: give 0 (whole groups) or more")
    return args


def bench(args: argparse.Namespace) -> int:
    if args.state_dir:
        os.environ["PBS_HARNESS_STATE_DIR"] = args.state_dir
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    # Only this run's files: the report (and --report-only) reads every PTL result file found here.
    for stale in [OUT_DIR / "ptl", *OUT_DIR.glob("ours-*"), *OUT_DIR.glob("qmgr-*.txt")]:
        shutil.rmtree(stale) if stale.is_dir() else stale.unlink(missing_ok=True)
    for saved in ("ptl-files.json", "ours.json"):
        (OUT_DIR / saved).unlink(missing_ok=True)
    up(args)
    inv_paths = inventory_paths(args)
    invs = [inventory.load(path) for path in inv_paths]
    src, files, ptl_wall = ptl_phase(invs, args)
    where = site.of(invs[0])
    meta = {
        "clusters": "; ".join(
            f"{inv.kind.cluster_name(inv.server.vars) or inv.server.name}: {len(inv.hosts)} {inv.kind.NAME} hosts"
            for inv in invs
        ),
        "OpenPBS source": f"{src.path} ({src.ident})",
        "PTL": f"{where.bin_dir}/pbs_benchpress ({install.NOSE_FORK}), CLI mode (no SWIG pbs_ifl, as packaged)",
        "machine": f"{os.cpu_count()} cores; one run, PTL then ours, on the same cluster(s)",
        "PTL parts": f"{f'{args.part_size} tests' if args.part_size else 'a whole group'} per pbs_benchpress, "
        f"shared out among {len(invs)} cluster(s); a file's PTL time is the sum of its parts' walls",
        "PTL phase wall (with account set-up)": f"{ptl_wall:.0f} s",
        "sample": ", ".join(
            f"{k}: first {v} tests of each group" for k, v in args.limit.items() if v and k in args.features
        )
        or ("only " + ", ".join(sorted(args.only)) if args.only else "every selected test"),
        "PTL tests without a row in docs/suites/*.md": ", ".join(UNMAPPED) or "none",
        "command": " ".join(["bench/bench_ptl.py", *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }

    def written(suites: dict[str, report.SuiteResult]) -> None:
        data, text = report_data(meta, files, suites, args.features)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(data, indent=2) + "\n")
        args.out.with_suffix(".md").write_text(text)

    written({})  # PTL's half already, should our suites be interrupted
    suites: dict[str, report.SuiteResult] = {}
    if not args.skip_ours:
        say("restoring the harness's baseline that PTL reverted")
        up(args)
        changed = [line for inv in invs for line in baseline_difference(inv)]
        say("server/scheduler configuration as before PTL" if not changed else
            "server/scheduler configuration differs from before PTL:\n  " + "\n  ".join(changed))  # fmt: skip
        meta["qmgr print server/sched, before PTL vs after the redeploy"] = (
            "same" if not changed else "; ".join(changed)
        )
        suites = run_ours(args, inv_paths, written)
    say(f"written: {args.out} and {args.out.with_suffix('.md')}")
    ran = {f.feature for f in files if f.ptl_passed + f.ptl_failed > 0}
    ok = ran >= set(args.features) and (args.skip_ours or all(s.tests for s in suites.values()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
