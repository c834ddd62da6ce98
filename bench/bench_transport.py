"""Benchmark: one `qstat -F json` round trip through the harness transport (persistent paramiko
connection) versus `ssh HOST qstat ...` as a subprocess. Target: the transport 5x faster or more.

Needs a deployed cluster (default inventory/local). Writes reports/bench-transport.json.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pbs_harness import inventory, project  # noqa: E402 - after sys.path setup
from pbs_harness.cluster import Cluster  # noqa: E402

ROUNDS = 30


def main() -> None:
    inv = inventory.load(project.inventory_path(sys.argv[1] if len(sys.argv) > 1 else None))
    cluster = Cluster.from_inventory(inv)
    host = cluster.server
    cmd = f"{cluster.bin('qstat')} -B -F json"
    host.check(cmd)  # open the connection outside the measurement, as the suites do once per session

    t_paramiko = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        host.check(cmd)
        t_paramiko.append(time.perf_counter() - start)

    target = inv.server.ssh_target()
    ssh = ["ssh", "-o", "BatchMode=yes", "-o", "ControlMaster=no", "-i", str(target.key_file)]
    if target.known_hosts:
        ssh += ["-o", f"UserKnownHostsFile={target.known_hosts}"]
    ssh += [f"{target.user}@{target.address}", cmd]
    t_ssh = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        subprocess.run(ssh, check=True, capture_output=True)
        t_ssh.append(time.perf_counter() - start)

    p_med, s_med = statistics.median(t_paramiko), statistics.median(t_ssh)
    result = {
        "rounds": ROUNDS,
        "transport_median_ms": round(p_med * 1000, 1),
        "ssh_subprocess_median_ms": round(s_med * 1000, 1),
        "speedup": round(s_med / p_med, 1),
        "target_speedup": 5,
    }
    (ROOT / "reports").mkdir(exist_ok=True)
    (ROOT / "reports" / "bench-transport.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    cluster.close()


if __name__ == "__main__":
    main()
