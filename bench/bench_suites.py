"""Benchmark: wall time of each acceptance suite, run N times in a row on the deployed cluster.

Suite wall time is measured here, never inside tests. Each run is a separate pytest session
(`pytest ptl_tests -m <suite>`), so the numbers include session setup (baseline snapshot) and
every per-test baseline restore — what a user waits for. pytest's own summary line is kept
verbatim, so the output doubles as the "twice in a row" evidence of a suite.

    python bench/bench_suites.py                       # every suite, twice
    python bench/bench_suites.py ramp_down --runs 3    # one suite, three times

Writes reports/bench-suites.json and prints a table. Exit status 1 if any run had a failure or
a skip (no test may skip on the local cluster).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pbs_harness.conformance import catalogue  # noqa: E402 - after sys.path setup

SUITES = tuple(sorted(f.marker for f in catalogue.load().features.values()))  # the feature suites
# pytest's final line, e.g. "==== 25 passed, 1 xfailed in 296.01s (0:04:56) ====" (or without the bars with -q).
SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in ([\d.]+)s.*$", re.MULTILINE)
COUNT = re.compile(r"(\d+) (\w+)")
# Printed by the plugin when this session had to queue for the cluster's session lock.
LOCK_WAIT = re.compile(r"session lock acquired after (\d+)s of waiting")


def run_suite(suite: str, index: int) -> dict[str, object]:
    junit = ROOT / "reports" / "bench" / f"{suite}-{index}.xml"  # one per suite and run: benches may overlap
    junit.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pytest", "ptl_tests", "-m", suite, "-q", "-rs", "-p", "no:cacheprovider"]
    argv += ["--junitxml", str(junit)]
    print(f"[{time.strftime('%H:%M:%S')}] {suite} run {index}: {' '.join(argv[3:])}", flush=True)
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    # The whole output next to the junit file: warnings (baseline repairs) and failures are read there.
    junit.with_suffix(".log").write_text(proc.stdout + proc.stderr)
    found = SUMMARY.findall(proc.stdout)
    summary = f"{found[-1][0]} in {found[-1][1]}s" if found else "(no pytest summary line)"
    counts = {word: int(n) for n, word in COUNT.findall(found[-1][0])} if found else {}
    waited = sum(int(s) for s in LOCK_WAIT.findall(proc.stdout))
    print(f"    {summary}; wall {wall:.0f}s, of which {waited}s queued for the cluster", flush=True)
    if proc.returncode not in (0, 1):
        print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
    return {"suite": suite, "run": index, "summary": summary, "counts": counts, "wall_s": round(wall, 1),
            "lock_wait_s": waited, "exit": proc.returncode, "junit": str(junit.relative_to(ROOT))}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="*", metavar="SUITE", help=f"suite markers: {', '.join(SUITES)} (default: all)")
    parser.add_argument("--runs", type=int, default=2, help="consecutive runs of each suite (default 2)")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench-suites.json", help="results file")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    unknown = sorted(set(args.suites) - set(SUITES))
    if unknown:
        parser.error(f"unknown suite {', '.join(unknown)}: choose from {', '.join(SUITES)}")
    results = [run_suite(suite, i) for suite in (args.suites or SUITES) for i in range(1, args.runs + 1)]
    out = args.out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\n{'suite':<18} {'run':>3}  {'wall':>7}  {'queued':>7}  pytest summary")
    for r in results:
        print(f"{r['suite']:<18} {r['run']:>3}  {r['wall_s']:>6}s  {r['lock_wait_s']:>6}s  {r['summary']}")
    print(f"written: {out}")
    bad = [r for r in results if r["exit"] != 0 or r["counts"].get("skipped") or r["counts"].get("error")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
