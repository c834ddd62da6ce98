"""Benchmark: the two flavours of local host side by side, in one run on this machine.

    python bench/bench_flavours.py --openpbs ../shared/openpbs/openpbs-master-cd7ab5e.tar.gz
    python bench/bench_flavours.py --openpbs PATH --clusters 2 -m "smoke or harness"

For each flavour, namespace then system, on clusters of their own (state directories
/var/lib/pbs-harness/bench-<flavour>, prefixes bfn/bfs, --subnet auto):
1. `pbs-harness up --clusters N --flavour F` (system: `--openpbs PATH`): wall time of bringing the
   hosts up and deploying OpenPBS, and whether the image and packages came from the cache;
2. memory per host once deployed and idle (PSS of each cluster's host processes / its hosts);
3. the acceptance suites, `pbs-harness test --clusters N` (bench_parallel.run_suites: wall time,
   pytest's summary line, peak memory and CPU per cluster sampled during the run);
4. `pbs-harness down`.

Writes reports/bench-flavours.json and reports/bench-flavours.md with the ratios system/namespace.
The namespace flavour needs OpenPBS in this machine's /opt/pbs.
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
sys.path.insert(0, str(ROOT / "bench"))

from bench_parallel import HARNESS, run_logged, run_suites  # noqa: E402 - after sys.path setup

from pbs_harness import hosts  # noqa: E402
from pbs_harness.localcluster import capacity, fleet, state  # noqa: E402

PREFIX = {"namespace": "bfn", "system": "bfs"}


def stamp(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def run(argv: list[str], log: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.monotonic()
    proc = run_logged(argv, log)
    return time.monotonic() - start, proc


def one_flavour(flavour: str, args: argparse.Namespace, out_dir: Path) -> dict:
    state_dir = Path(f"/var/lib/pbs-harness/bench-{flavour}")
    where = ["--state-dir", str(state_dir)]
    up = [*HARNESS, "up", "--clusters", str(args.clusters), "--flavour", flavour, *where]
    up += ["--name-prefix", PREFIX[flavour], "--subnet", "auto"]
    if not hosts.get_kind_class(flavour).shares_controller_files:  # its own OpenPBS, from packages
        up += ["--openpbs", str(args.openpbs)]
    stamp(f"{flavour}: {' '.join(up[2:])} (output: {out_dir / f'flavours-{flavour}-up.log'})")
    up_s, proc = run(up, out_dir / f"flavours-{flavour}-up.log")
    if proc.returncode != 0:
        run([*HARNESS, "down", *where], out_dir / f"flavours-{flavour}-down.log")
        sys.exit(f"{flavour}: up failed (exit {proc.returncode}); see {out_dir / f'flavours-{flavour}-up.log'}")
    # What pbs_harness.localcluster.containers.images and deploy.openpbs_build say
    # when they make something (not a deploy's task names).
    cached = not re.search(r"image layer \S+ made in \d|OpenPBS packages built in \d", proc.stdout)
    members = fleet.recorded(state_dir)
    per_host = {}
    for member in members:
        spec = state.load(member.root).spec  # type: ignore[union-attr]
        per_host[member.name] = round((capacity.measure_cluster_mib(spec) or 0) / spec.host_count, 1)
    stamp(f"{flavour}: up + deploy {up_s:.0f}s; idle MiB per host {per_host}")
    args.state_dir = str(state_dir)
    suites = run_suites(flavour, len(members), args, members)
    run([*HARNESS, "down", *where], out_dir / f"flavours-{flavour}-down.log")
    return {"up_deploy_s": round(up_s, 1), "image_and_packages_cached": cached, "idle_mib_per_host": per_host,
            "acceptance": suites}  # fmt: skip


def markdown(result: dict) -> str:
    ns, sy = result["namespace"], result["system"]
    lines = [
        "# Host flavours side by side",
        "",
        f"One run, {result['clusters']} cluster(s) of 6 hosts each, on this machine; "
        f"suites: {result['marker'] or 'all'}.",
        "",
        "| | namespace | system | system / namespace |",
        "|---|---|---|---|",
        f"| up + deploy | {ns['up_deploy_s']:.0f} s | {sy['up_deploy_s']:.0f} s "
        f"(image and packages {'cached' if sy['image_and_packages_cached'] else 'made'}) | "
        f"{sy['up_deploy_s'] / ns['up_deploy_s']:.2f} |",
    ]
    mem = [sum(f["idle_mib_per_host"].values()) / len(f["idle_mib_per_host"]) for f in (ns, sy)]
    lines.append(f"| idle memory per host | {mem[0]:.0f} MiB | {mem[1]:.0f} MiB | {mem[1] / mem[0]:.2f} |")
    walls = [f["acceptance"]["wall_s"] for f in (ns, sy)]
    lines.append(f"| acceptance wall time | {walls[0]:.0f} s | {walls[1]:.0f} s | **{walls[1] / walls[0]:.2f}** |")
    peaks = [max((c["peak_mib"] for c in f["acceptance"]["per_cluster"].values()), default=0) for f in (ns, sy)]
    lines.append(f"| peak memory per cluster (hosts + worker) | {peaks[0]} MiB | {peaks[1]} MiB | |")
    lines += ["", f"- namespace: `{ns['acceptance']['summary']}`", f"- system: `{sy['acceptance']['summary']}`", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openpbs", type=Path, required=True, help="OpenPBS for the system hosts (as for up)")
    parser.add_argument("--clusters", type=int, default=4, help="clusters per flavour (default 4)")
    parser.add_argument("-m", dest="marker", help="only these suites (a pytest -m expression)")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench-flavours.json")
    args = parser.parse_args()
    out_dir = ROOT / "reports" / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    result: dict = {"clusters": args.clusters, "marker": args.marker}
    for flavour in ("namespace", "system"):
        result[flavour] = one_flavour(flavour, args, out_dir)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    table = markdown(result)
    args.out.with_suffix(".md").write_text(table)
    print("\n" + table)
    ok = all(result[f]["acceptance"]["exit"] == 0 for f in ("namespace", "system"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
