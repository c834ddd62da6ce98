"""Benchmark: the suites' own mutation check (issue #30) — would our suites catch this change to OpenPBS?

    python bench/bench_mutants.py --state-dir DIR --source ARCHIVE             # every mutant of bench/mutants.yaml
    python bench/bench_mutants.py --state-dir DIR --source ARCHIVE --only NAME # one of them
    python bench/bench_mutants.py --state-dir DIR --source ARCHIVE --patch my.diff --suite ramp_down  # a user's patch

On a local cluster of system hosts (each its own root; `pbs-harness up --flavour system --openpbs SOURCE`),
for each mutant:
1. apply it to a configured, built tree of the source the cluster's packages were built from
   (pbs_harness.deploy.mutants.buildtree: kept in the cache, made once), rebuild only the folder it touches,
   install that folder into a stage and take the files whose bytes differ from the pristine build's;
   the source is reverted at once;
2. put those files into every host that has them installed, restart PBS there through systemd
   (`systemctl restart pbs`), wait for every vnode to be free, and check that each host's running
   daemon is the new file (its /proc/PID/exe not deleted);
3. run the mutant's suite (`pbs-harness test -m SUITE [-k SELECT]`): its pytest summary line, the tests that
   failed or errored, and every xfail with its reason, read from the suite's junit file;
4. always, also on failure and Ctrl-C: put the packaged files back, restart PBS, and check that the
   cluster is back at its baseline: every vnode free, no job, reservation or assigned resource left, the
   qmgr/vnode/hook state taken before the first mutant unchanged, `dpkg --verify` of OpenPBS clean.

A mutant is caught when its suite ends with at least one failed test and none of the tests that failed
on it ended as an xfail instead. Writes reports/bench-mutants.json (with date, build, command) and the
suites' junit files and logs in reports/bench-mutants/. Exit status 0 when every mutant was caught and
every restore found a clean baseline; 1 otherwise; 3 on bad input (checked before any host is touched).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pbs_harness.common.errors import EXIT_FAILED, EXIT_PRECONDITION, HarnessError, PreconditionError  # noqa: E402
from pbs_harness.common.waits import WaitTimeout, wait_until  # noqa: E402
from pbs_harness.conformance import catalogue  # noqa: E402
from pbs_harness.deploy import openpbs_source  # noqa: E402 - after sys.path setup
from pbs_harness.deploy.mutants import buildtree, hosts, patch  # noqa: E402
from pbs_harness.localcluster import state  # noqa: E402
from pbs_harness.localcluster.containers import images  # noqa: E402
from pbs_harness.pbs.client import Pbs  # noqa: E402
from pbs_harness.remote import inventory  # noqa: E402
from pbs_harness.remote.cluster import Cluster  # noqa: E402
from pbs_harness.suite import baseline  # noqa: E402

OUT_DIR = ROOT / "reports" / "bench-mutants"
MUTANTS = ROOT / "bench" / "mutants.yaml"
SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+ in [\d.]+s(?: \([\d:]+\))?)\s*=*$", re.MULTILINE)
SUITES = ("smoke", *sorted(f.marker for f in catalogue.load().features.values()))
SETTLE_TIMEOUT = 180
ABOUT = "make bench-mutants runs (docs/mutants.md); each run names its harness commit, build and command"


def kept_runs(out: Path) -> list[dict]:
    """The runs the results file already keeps, which this run's record is appended to: reports/bench-mutants.json
    is the measured history docs/mutants.md cites, so a run must never replace it. A file of one run in the
    first layout ({"meta", "mutants"}) is kept as that run; a file that is no such record is refused before
    anything is built or any host touched."""
    if not out.exists():
        return []
    try:
        data = json.loads(out.read_text())
    except (OSError, ValueError) as exc:
        raise PreconditionError(
            f"--out {out} cannot be read as a results file ({exc})", "name another --out, or move that file away"
        ) from None
    if isinstance(data, dict) and isinstance(data.get("runs"), list):
        return data["runs"]
    if isinstance(data, dict) and {"meta", "mutants"} <= data.keys():
        return [data]
    raise PreconditionError(
        f"--out {out} is not a bench-mutants results file (no 'runs' list, nor one run's 'meta' and 'mutants')",
        "name another --out, or move that file away",
    )


def with_run(earlier: list[dict], run: dict) -> dict:
    """The results file: the runs it kept, then this one (rewritten after each mutant, so a killed run keeps
    what it measured)."""
    return {"about": ABOUT, "runs": [*earlier, run]}


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@dataclass
class Result:
    mutant: str
    file: list[str]
    breaks: str
    suite: str
    select: str
    command: str = ""
    rebuilt: list[str] = field(default_factory=list)
    placed: dict[str, list[str]] = field(default_factory=dict)
    rebuild_s: float = 0.0
    suite_s: float = 0.0
    summary: str = ""
    exit: int | None = None
    failed: list[str] = field(default_factory=list)
    xfailed: dict[str, str] = field(default_factory=dict)  # test -> xfail reason
    caught: bool = False
    verdict: str = ""
    restored: dict[str, list[str]] = field(default_factory=dict)
    baseline_after: list[str] = field(default_factory=list)  # what was not clean after the restore (empty: clean)
    error: str = ""


# ---- the cluster ------------------------------------------------------------------------------------------


def systemctl_restart(cluster: Cluster, names: list[str]) -> None:
    """`systemctl restart pbs` on each named host (the server host last: its server then finds its moms up)."""
    server = cluster.inventory.server.name
    for name in sorted(names, key=lambda n: n == server):
        say(f"{name}: systemctl restart pbs")
        cluster.hosts[name].check("systemctl restart pbs", timeout=180)


def settle(pbs: Pbs) -> None:
    """Every vnode free (the moms re-registered after the restart)."""

    def states() -> dict[str, str]:
        try:
            return {name: str(n.get("state")) for name, n in pbs.nodes.all().items()}
        except Exception as exc:  # noqa: BLE001 - the server may still be starting: asked again
            return {"(server)": str(exc)[:80]}

    wait_until(states, lambda s: bool(s) and all(v == "free" for v in s.values()), timeout=SETTLE_TIMEOUT,
               interval=2, describe="every vnode free after restarting PBS")  # fmt: skip


def running_files(cluster: Cluster, placed: dict[str, list[str]]) -> list[str]:
    """Problems: a daemon whose binary was replaced still running the old one (its exe '(deleted)')."""
    out = []
    for host, files in placed.items():
        for rel in files:
            name = Path(rel).name
            if not rel.startswith("opt/pbs/sbin/"):
                continue
            res = cluster.hosts[host].run(f"for p in $(pgrep -x {shlex.quote(name)}); do readlink /proc/$p/exe; done")
            exes = res.stdout.split()
            if not exes:
                out.append(f"{host}: no {name} process runs after the restart")
            elif any(e.endswith("(deleted)") or e != f"/{rel}" for e in exes):
                out.append(f"{host}: {name} runs {', '.join(exes)}, not the new /{rel}")
    return out


def dpkg_verify(cluster: Cluster) -> list[str]:
    """Files of the OpenPBS packages that differ from what the packages installed (dpkg --verify)."""
    out = []
    for name, host in cluster.hosts.items():
        res = host.run("dpkg --verify $(dpkg-query -W -f='${Package}\\n' 'openpbs*')")
        lines = [ln for ln in res.stdout.splitlines() if ln.strip() and " c " not in ln[:12]]  # conffiles may change
        out += [f"{name}: dpkg --verify: {ln.strip()}" for ln in lines]
    return out


def baseline_problems(pbs: Pbs, cluster: Cluster, before: baseline.Snapshot) -> list[str]:
    now = baseline.take(pbs)
    return baseline.dirty(now) + baseline.phantom_assignments(pbs) + baseline.diff(before, now) + dpkg_verify(cluster)


# ---- the suite --------------------------------------------------------------------------------------------


def suite_argv(inv_path: Path, mutant: patch.Mutant, junit: Path) -> list[str]:
    argv = [sys.executable, "-m", "pbs_harness", "test", "-i", str(inv_path), "ptl_tests", "-m", mutant.suite]
    if mutant.select:
        argv += ["-k", mutant.select]
    return [*argv, "-p", "no:cacheprovider", "-rfEx", "--junitxml", str(junit)]


def read_junit(junit: Path) -> tuple[list[str], dict[str, str]]:
    """(failed or errored tests, xfailed test -> reason) of a pytest junit file."""
    failed, xfailed = [], {}
    if not junit.is_file():
        return failed, xfailed
    for case in ET.parse(junit).getroot().iter("testcase"):  # noqa: S314 - our own pytest's file
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(name)
        skipped = case.find("skipped")
        if skipped is not None and skipped.get("type") == "pytest.xfail":
            xfailed[name] = skipped.get("message", "")
    return failed, xfailed


def run_suite(inv_path: Path, mutant: patch.Mutant, result: Result) -> None:
    junit = OUT_DIR / f"{mutant.name}.xml"
    junit.unlink(missing_ok=True)
    argv = suite_argv(inv_path, mutant, junit)
    result.command = " ".join(shlex.quote(a) for a in ["pbs-harness", *argv[3:]])
    say(f"{mutant.name}: {result.command}")
    start = time.monotonic()
    with (OUT_DIR / f"{mutant.name}.log").open("w") as log:
        proc = subprocess.run(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=False)
    result.suite_s = round(time.monotonic() - start, 1)
    result.exit = proc.returncode
    found = SUMMARY.findall((OUT_DIR / f"{mutant.name}.log").read_text(errors="replace"))
    result.summary = found[-1] if found else "(no pytest summary line)"
    result.failed, result.xfailed = read_junit(junit)
    say(f"{mutant.name}: {result.summary} (exit {proc.returncode}, {result.suite_s:.0f}s)")


def judge(result: Result) -> None:
    """Caught: red through failures (exit 1, at least one failed test). The xfails are reported with their
    reasons: a retried known race that ended as an xfail on every attempt is how a mutant hides."""
    hiding = {t: r for t, r in result.xfailed.items() if "intermittent" in r or "every one of" in r}
    result.caught = result.exit == 1 and bool(result.failed) and not hiding
    if result.caught:
        result.verdict = f"caught: {len(result.failed)} failed, {len(result.xfailed)} xfailed (none as a retried race)"
    elif result.failed and hiding:
        result.verdict = f"red, but {len(hiding)} test(s) ended as a retried-race xfail instead of failing"
    elif hiding:
        result.verdict = f"NOT caught: hidden as {len(hiding)} retried-race xfail(s)"
    else:
        result.verdict = (
            "NOT caught: the suite stayed green" if result.exit == 0 else f"no verdict (exit {result.exit})"
        )


# ---- one mutant -------------------------------------------------------------------------------------------


@dataclass
class Bench:
    """What every mutant's run needs: the build tree, the hosts' roots, the cluster, the baseline."""

    tree: buildtree.BuildTree
    dist: images.Distribution
    roots: hosts.Roots
    inv_path: Path
    cluster: Cluster
    pbs: Pbs
    before: baseline.Snapshot | None = None


def run_mutant(bench: Bench, mutant: patch.Mutant) -> Result:
    result = Result(mutant.name, mutant.files, mutant.breaks, mutant.suite, mutant.select)
    try:
        start = time.monotonic()
        stage = bench.roots.state_dir / "mutants" / "stage"
        # The tree is this bench's only while it is mutated: a bench on another cluster may rebuild next.
        with buildtree.locked(bench.tree.path):
            applied = patch.apply(mutant, bench.tree.src)
            try:
                result.rebuilt = buildtree.rebuild(bench.tree, bench.dist, mutant.files, say)
            finally:
                applied.revert()
            buildtree.copy_files(bench.tree.mutant, result.rebuilt, stage)
        result.rebuild_s = round(time.monotonic() - start, 1)
        if not result.rebuilt:
            raise PreconditionError(
                f"mutant {mutant.name} changed no file that `make install` installs", "does it change compiled code?"
            )
        result.placed = hosts.put(bench.roots, stage, result.rebuilt)
        say(f"{mutant.name}: {', '.join(result.rebuilt)} put into {', '.join(sorted(result.placed))}")
        systemctl_restart(bench.cluster, sorted(result.placed))
        settle(bench.pbs)
        stale = running_files(bench.cluster, result.placed)
        if stale:
            raise HarnessError("the mutant is not what runs: " + "; ".join(stale))
        run_suite(bench.inv_path, mutant, result)
        judge(result)
    except (HarnessError, WaitTimeout, OSError, subprocess.SubprocessError) as exc:
        result.error = str(exc)
        result.verdict = "error: " + str(exc).splitlines()[0]
        say(f"{mutant.name}: {result.verdict}")
    finally:
        result.restored, result.baseline_after = restore(bench)
    return result


def restore(bench: Bench) -> tuple[dict[str, list[str]], list[str]]:
    """The packaged files back, PBS restarted on those hosts, and what is not clean afterwards."""
    cluster, pbs = bench.cluster, bench.pbs
    restored = hosts.restore(bench.roots)
    if restored:
        listed = "; ".join(f"{h}: {', '.join(f)}" for h, f in sorted(restored.items()))
        say(f"restored the packaged files: {listed}")
        systemctl_restart(cluster, sorted(restored))
    problems: list[str] = []
    try:
        settle(pbs)
    except WaitTimeout as exc:
        problems.append(str(exc))
    placed_back = {h: [f for f in files if f.startswith("opt/pbs/sbin/")] for h, files in restored.items()}
    problems += running_files(cluster, placed_back)
    if bench.before is not None:
        problems += baseline_problems(pbs, cluster, bench.before)
    say("baseline clean after the restore" if not problems else "NOT clean after the restore: " + "; ".join(problems))
    return restored, problems


# ---- input ------------------------------------------------------------------------------------------------


def check_source(source: openpbs_source.Source, st: state.ClusterState) -> str:
    """The cluster's packages must have been built from this source; returns their version."""
    record = Path(st.packages_dir or "") / openpbs_source.PROVENANCE_FILE
    if not record.is_file():
        raise PreconditionError(
            f"the cluster's packages ({st.packages_dir}) have no {openpbs_source.PROVENANCE_FILE}",
            "bring the cluster up from an OpenPBS source: pbs-harness up --flavour system --openpbs SOURCE",
        )
    prov = openpbs_source.Provenance.from_json(json.loads(record.read_text()))
    if prov.sha256 != source.sha256:
        raise PreconditionError(
            f"the cluster's OpenPBS was built from {prov.archive} (sha256 {prov.sha256[:16]}), not from "
            f"{source.path.name} (sha256 {source.sha256[:16]})",
            "name the source the cluster was built from with --source, or bring the cluster up from this one",
        )
    return prov.version


def select_mutants(args: argparse.Namespace) -> list[patch.Mutant]:
    if args.patch:
        if not args.suite:
            raise PreconditionError("--patch needs --suite: the suite that must catch the change", f"one of {SUITES}")
        return [patch.from_diff(args.patch, args.suite, args.select or "")]
    mutants = patch.load(args.mutants)
    if args.only:
        names = {m.name for m in mutants}
        unknown = sorted(set(args.only) - names)
        if unknown:
            raise PreconditionError(
                f"no mutant named {', '.join(unknown)} in {args.mutants}", f"choose from {', '.join(sorted(names))}"
            )
        mutants = [m for m in mutants if m.name in args.only]
    if args.select:  # a narrower run of each mutant's suite, said in the report's command lines
        mutants = [dataclasses.replace(m, select=args.select) for m in mutants]
    return mutants


def harness_commit() -> str:
    git = ["git", "-C", str(ROOT)]
    res = subprocess.run([*git, "log", "-1", "--format=%h %s"], capture_output=True, text=True, check=False)
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    return res.stdout.strip()[:90] + (" (with uncommitted changes)" if dirty else "")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--state-dir", type=Path, default=None, help="the cluster's state directory (as for up)")
    parser.add_argument("--source", type=Path, default=os.environ.get("OPENPBS_SOURCE"),
                        help="the OpenPBS source (archive or tree) the cluster was built from")  # fmt: skip
    parser.add_argument("--image", default=images.DEFAULT_DISTRIBUTION, help="the hosts' distribution (builder image)")
    parser.add_argument("--mutants", type=Path, default=MUTANTS, help="mutants file (default bench/mutants.yaml)")
    parser.add_argument("--only", type=lambda v: [n for n in v.split(",") if n], default=[], help="these mutants")
    parser.add_argument("--patch", type=Path, help="a unified diff against the source (-p1), instead of the file")
    parser.add_argument("--suite", choices=SUITES, help="with --patch: the suite that must catch it")
    parser.add_argument("--select", help="a pytest -k expression within the suite (default: the mutant's own)")
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "reports" / "bench-mutants.json",
        help="results file: this run is appended to the runs it keeps (default reports/bench-mutants.json)",
    )
    return parser.parse_args()


@dataclass
class Input:
    mutants: list[patch.Mutant]
    source: openpbs_source.Source
    version: str
    dist: images.Distribution
    roots: hosts.Roots
    st: state.ClusterState
    inv_path: Path
    inv: inventory.Inventory


def checked_input(args: argparse.Namespace) -> Input:
    """Everything about the input, before anything is built or any host touched."""
    mutants = select_mutants(args)
    if not args.source:
        raise PreconditionError("no OpenPBS source named", "--source ARCHIVE, or OPENPBS_SOURCE=ARCHIVE")
    source = openpbs_source.judge(args.source)
    dist = images.distribution(args.image)
    state_dir = state.state_dir(args.state_dir)
    roots = hosts.of(state_dir)
    st = state.load_checked(state_dir)
    if st is None:
        raise PreconditionError(f"no local cluster is recorded in {state_dir}", "bring one up")
    version = check_source(source, st)
    inv_path = state_dir / "inventory"
    return Input(mutants, source, version, dist, roots, st, inv_path, inventory.load(inv_path))


def run_all(bench: Bench, inp: Input, results: list[Result], write: Callable[[], None]) -> None:
    left = hosts.backups(bench.roots)
    if left:
        say(f"a killed run left mutated files in place: {left}; putting the packaged ones back first")
        restore(bench)
    settle(bench.pbs)
    before = baseline.take(bench.pbs)
    problems = baseline.dirty(before) + baseline.phantom_assignments(bench.pbs) + dpkg_verify(bench.cluster)
    if problems:
        raise PreconditionError(
            "the cluster is not at a clean baseline before the first mutant: " + "; ".join(problems),
            "run the suites once (their session start clears what a killed run left) or redeploy",
        )
    bench.before = before
    for m in inp.mutants:
        results.append(run_mutant(bench, m))
        write()


def print_table(results: list[Result]) -> None:
    print(f"\n{'mutant':<36} {'suite':<16} {'wall':>6}  summary / verdict")
    for r in results:
        print(f"{r.mutant:<36} {r.suite:<16} {r.suite_s:>5.0f}s  {r.summary}\n{'':<61}{r.verdict}")
        for t in r.failed:
            print(f"{'':<61}failed: {t}")
        for t, why in r.xfailed.items():
            print(f"{'':<61}xfailed: {t}: {why[:100]}")
        if r.baseline_after:
            print(f"{'':<61}NOT clean after restore: {'; '.join(r.baseline_after)}")


def main() -> int:
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    args = parse_args()
    try:
        inp = checked_input(args)
        earlier = kept_runs(args.out)
    except HarnessError as exc:
        print(f"bench-mutants: {exc}", file=sys.stderr)
        return exc.exit_code if exc.exit_code != EXIT_FAILED else EXIT_PRECONDITION
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    meta = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(shlex.quote(a) for a in sys.argv),
        "harness": harness_commit(),
        "build": f"OpenPBS {inp.version} from {inp.source.path.name} (commit {inp.source.commit or '?'}, sha256 "
        f"{inp.source.sha256[:16]}); packages {inp.st.packages_dir}",
        "cluster": f"{len(inp.roots.roots)} {inp.st.image} system hosts {', '.join(inp.roots.roots)} ({inp.st.subnet})",
        "machine": f"{os.cpu_count()} cores",
    }

    def write() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        run = {"meta": meta, "mutants": [asdict(r) for r in results]}
        args.out.write_text(json.dumps(with_run(earlier, run), indent=2) + "\n")

    cluster = Cluster.from_inventory(inp.inv)
    try:
        with buildtree.locked(buildtree.tree_path(inp.source, images.builder_layer(inp.dist))):
            tree = buildtree.ensure(inp.source, inp.version, inp.dist, say)
            for m in inp.mutants:  # each mutant's text must be found before any host changes
                patch.apply(m, tree.src).revert()
        bench = Bench(tree, inp.dist, inp.roots, inp.inv_path, cluster, Pbs(cluster))
        run_all(bench, inp, results, write)
    except HarnessError as exc:
        print(f"bench-mutants: {exc}", file=sys.stderr)
        write()
        return exc.exit_code
    finally:
        cluster.close()
    write()
    print_table(results)
    say(f"written: {args.out}")
    ok = bool(results) and all(r.caught and not r.baseline_after and not r.error for r in results)
    return 0 if ok else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
