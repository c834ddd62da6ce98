"""Benchmark: the acceptance suites serially on one cluster, then in parallel on N, in one run.

    python bench/bench_parallel.py                      # N = auto (pbs-harness up --clusters auto)
    python bench/bench_parallel.py --clusters 3 -m "smoke or harness"
    python bench/bench_parallel.py --state-dir /var/lib/pbs-harness/pa --name-prefix pa --subnet 10.81.0.0/24

1. `pbs-harness up --clusters N` (timed; a no-op when they are up).
2. Serial: `pbs-harness test --clusters 1` on the first cluster; parallel: `--clusters N`. Wall time
   of each, and their ratio.
3. Per suite: its time in each run (the progress summary's wall per suite) and its 10 slowest tests,
   with what they wait on (bench/wait_profile.py: the longest kinds of `wait_until` in each test).
4. Per cluster, sampled every few seconds during each run: peak memory (PSS of its hosts' processes
   and of its test worker) and CPU (cores used, mean and peak, by the same processes and the
   children they reaped: jobs, hooks).

Writes reports/bench-parallel.json and prints a summary. The clusters are left up.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pbs_harness.localcluster import capacity, fleet, state  # noqa: E402
from pbs_harness.localcluster.containers import cgroups  # noqa: E402 - after sys.path setup

HARNESS = [sys.executable, "-m", "pbs_harness"]
SUITE_LINE = re.compile(r"^(\w+)\s+((?:\d+ \w+(?:, )?)+) in (\S+)$", re.M)
TICKS = os.sysconf("SC_CLK_TCK")


def seconds_of(text: str) -> float:
    m = re.fullmatch(r"(?:(\d+)m)?([\d.]+)s", text)
    return (int(m[1] or 0) * 60 + float(m[2])) if m else 0.0


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / TICKS


class Sampler(threading.Thread):
    """Memory and CPU of each cluster (its hosts' processes, and its test worker) every `every` s."""

    def __init__(self, members: list[fleet.Member], every: float = 5.0) -> None:
        super().__init__(daemon=True)
        self.members, self.every = members, every
        self.stop = threading.Event()
        self.mem: dict[str, float] = {m.name: 0.0 for m in members}
        self.cores: dict[str, list[float]] = {m.name: [] for m in members}

    def pids(self, index: int, member: fleet.Member) -> list[int]:
        found = [pid for host in member.spec.hosts for pid in cgroups.pids(host.name)]
        for info in Path("/tmp").glob(f"pbs-harness-parallel-*/worker-gw{index}.json"):  # noqa: S108 - the controller's run dir
            with contextlib.suppress(OSError, ValueError, KeyError):
                found.append(int(json.loads(info.read_text())["pid"]))
        return found

    def run(self) -> None:
        last = {m.name: (time.monotonic(), cpu_seconds(self.pids(i, m))) for i, m in enumerate(self.members)}
        while not self.stop.wait(self.every):
            for index, member in enumerate(self.members):
                pids = self.pids(index, member)
                self.mem[member.name] = max(self.mem[member.name], capacity.pss_mib(pids))
                now, cpu = time.monotonic(), cpu_seconds(pids)
                then, before = last[member.name]
                self.cores[member.name].append(max(0.0, (cpu - before) / (now - then)))
                last[member.name] = (now, cpu)

    def result(self) -> dict[str, dict[str, float]]:
        out = {}
        for name, samples in self.cores.items():
            mean = sum(samples) / len(samples) if samples else 0.0
            out[name] = {"peak_mib": round(self.mem[name]), "cpu_mean_cores": round(mean, 2),
                         "cpu_peak_cores": round(max(samples, default=0.0), 2)}  # fmt: skip
        return out


def slowest(junit: Path, top: int = 10) -> dict[str, list[dict[str, object]]]:
    """Each suite's `top` slowest tests with their cluster and what they waited on (wait_profile)."""
    per_suite: dict[str, list[dict[str, object]]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):  # noqa: S314 - our own JUnit file
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        suite = case.get("classname", "").rsplit(".", 1)[-1].removeprefix("test_").removesuffix("_faults")
        entry = {"test": case.get("name"), "seconds": float(case.get("time", 0)), "cluster": props.get("cluster")}
        entry["waits"] = json.loads(props.get("waits") or "[]")
        per_suite.setdefault(suite, []).append(entry)
    return {s: sorted(t, key=lambda t: -float(t["seconds"]))[:top] for s, t in per_suite.items()}  # type: ignore[arg-type]


def run_logged(argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run argv with its output (stdout and stderr, merged) written to `log` as it comes, so a long step can
    be followed with `tail -f`; the whole output is also returned, as stdout."""
    log.parent.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    with (
        log.open("w") as out,
        subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc,
    ):
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(line)
            out.flush()
            lines.append(line)
    return subprocess.CompletedProcess(argv, proc.returncode, "".join(lines), "")


def run_suites(label: str, clusters: int, args: argparse.Namespace, members: list[fleet.Member]) -> dict:
    junit = ROOT / "reports" / "bench" / f"parallel-{label}.xml"
    junit.parent.mkdir(parents=True, exist_ok=True)
    argv = [*HARNESS, "test", "--clusters", str(clusters), *state_args(args), "-p", "wait_profile"]
    argv += ["--junitxml", str(junit), *(["-m", args.marker] if args.marker else [])]
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'bench'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    print(f"[{time.strftime('%H:%M:%S')}] {label}: {' '.join(argv[2:])}", flush=True)
    sampler = Sampler(members[:clusters])
    sampler.start()
    start = time.monotonic()
    print(f"    output: {junit.with_suffix('.log')}", flush=True)
    proc = run_logged(argv, junit.with_suffix(".log"), env)
    wall = time.monotonic() - start
    sampler.stop.set()
    sampler.join()
    summary = [ln for ln in proc.stdout.splitlines() if re.search(r"=+ .*(passed|failed).* in ", ln)]
    suites = {name: seconds_of(wall_) for name, _counts, wall_ in SUITE_LINE.findall(proc.stdout)}
    print(f"    {summary[-1] if summary else '(no pytest summary)'}; wall {wall:.0f}s; exit {proc.returncode}")
    return {"clusters": clusters, "wall_s": round(wall, 1), "exit": proc.returncode,
            "summary": summary[-1].strip("= ") if summary else "", "suites_s": suites,
            "per_cluster": sampler.result(), "slowest": slowest(junit) if junit.exists() else {}}  # fmt: skip


def state_args(args: argparse.Namespace) -> list[str]:
    return ["--state-dir", args.state_dir] if args.state_dir else []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", default="auto", help="clusters of the parallel run (default auto)")
    parser.add_argument("--state-dir", help="state directory of the first cluster (as for pbs-harness up)")
    parser.add_argument("--name-prefix", help="host-name prefix of the first cluster")
    parser.add_argument("--subnet", help="subnet of the first cluster")
    parser.add_argument("-m", dest="marker", help="only these suites (a pytest -m expression)")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench-parallel.json")
    args = parser.parse_args()
    up = [*HARNESS, "up", "--clusters", args.clusters, *state_args(args)]
    up += [*(["--name-prefix", args.name_prefix] if args.name_prefix else [])]
    up += [*(["--subnet", args.subnet] if args.subnet else [])]
    start = time.monotonic()
    proc = subprocess.run(up, cwd=ROOT, capture_output=True, text=True, check=False)
    up_s = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"`{' '.join(up[2:])}` failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr}")
    members = fleet.recorded(Path(args.state_dir) if args.state_dir else None)
    count = len(members) if args.clusters == "auto" else int(args.clusters)
    serial = run_suites("serial", 1, args, members)
    parallel = run_suites(f"{count}-clusters", count, args, members)
    ratio = round(serial["wall_s"] / parallel["wall_s"], 2) if parallel["wall_s"] else None
    result = {"up_s": round(up_s, 1), "clusters": [m.name for m in members[:count]], "serial": serial,
              "parallel": parallel, "ratio": ratio,
              "state_dir": str(state.state_dir(Path(args.state_dir) if args.state_dir else None))}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nup: {result['up_s']}s; serial {serial['wall_s']}s, {count} clusters {parallel['wall_s']}s: "
          f"ratio {result['ratio']}")  # fmt: skip
    for suite in sorted(set(serial["suites_s"]) | set(parallel["suites_s"])):
        one, many = serial["suites_s"].get(suite, 0), parallel["suites_s"].get(suite, 0)
        print(f"  {suite:<18} serial {one:>7.0f}s   parallel {many:>7.0f}s")
    for name, figures in parallel["per_cluster"].items():
        print(f"  cluster {name:<8} peak {figures['peak_mib']} MiB, CPU mean {figures['cpu_mean_cores']} cores, "
              f"peak {figures['cpu_peak_cores']}")  # fmt: skip
    for suite, tests in parallel["slowest"].items():
        top = "; ".join(f"{t['test']} {t['seconds']:.0f}s {t['waits'][:1]}" for t in tests[:3])
        print(f"  {suite}: slowest {top}")
    print(f"written: {args.out}")
    return 0 if serial["exit"] == 0 and parallel["exit"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
