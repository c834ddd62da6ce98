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

from pbs_harness.common import project  # noqa: E402 - after sys.path setup
from pbs_harness.remote import inventory  # noqa: E402
from pbs_harness.remote.cluster import Cluster  # noqa: E402

ROUNDS = 30


def measure(host, ssh_base: list[str], cmd: str) -> dict[str, float]:
    host.check(cmd)  # the connection is opened once per session, outside the measurement
    t_transport, t_ssh = [], []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        host.check(cmd)
        t_transport.append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run([*ssh_base, cmd], check=True, capture_output=True)
        t_ssh.append(time.perf_counter() - start)
    p_med, s_med = statistics.median(t_transport), statistics.median(t_ssh)
    return {
        "transport_median_ms": round(p_med * 1000, 1),
        "ssh_subprocess_median_ms": round(s_med * 1000, 1),
        "speedup": round(s_med / p_med, 1),
    }


def main() -> None:
    inv = inventory.load(project.inventory_path(sys.argv[1] if len(sys.argv) > 1 else None))
    cluster = Cluster.from_inventory(inv)
    target = inv.server.ssh_target()
    ssh = ["ssh", "-o", "BatchMode=yes", "-o", "ControlMaster=no", "-i", str(target.key_file)]
    if target.known_hosts:
        ssh += ["-o", f"UserKnownHostsFile={target.known_hosts}"]
    ssh.append(f"{target.user}@{target.address}")
    result = {
        "rounds": ROUNDS,
        "target_speedup": 5,
        # The acceptance suites' typical probe: job status as JSON.
        "qstat_f_json": measure(cluster.server, ssh, f"{cluster.bin('qstat')} -f -F json"),
        # Node status, the other frequent probe.
        "pbsnodes_json": measure(cluster.server, ssh, f"{cluster.bin('pbsnodes')} -av -F json"),
        # The layer's own cost, with no PBS command in it.
        "true": measure(cluster.server, ssh, "true"),
    }
    (ROOT / "reports").mkdir(exist_ok=True)
    (ROOT / "reports" / "bench-transport.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    cluster.close()


if __name__ == "__main__":
    main()
