"""How many local clusters this machine holds (`up --clusters N`), and how many it gets by default.

Memory: a cluster needs what its hosts use (measured on running clusters: the proportional set size
of every process in the hosts' cgroups; estimated per host otherwise) plus its test worker (pytest,
its SSH connections) and the jobs the suites run. `up` refuses N when the clusters it would add do
not fit in the available memory less a reserve, and says the numbers.

The default N (`--clusters auto`) follows the cores: the suites spend their time waiting on
OpenPBS's own timers (join alarms, reservation retries, server restarts), not computing, so a core
carries more than one cluster; bench/bench_parallel.py measures where that stops paying.

The arithmetic is pure (unit-tested); `measure_*` and `available_mib` read /proc.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster.containers import cgroups
from pbs_harness.localcluster.spec import ClusterSpec

# A host's daemons, sshd and init, idle: measured 4-9 MiB on a MoM-only host and ~66 MiB on the
# server host (server, scheduler, comm, datastore); the estimate covers a host of either kind.
HOST_ESTIMATE_MIB = 40.0
# The cluster's test worker and the jobs of a suite (bench/bench_parallel.py records the peak).
WORKER_MIB = 300.0
RESERVE_FRACTION = 0.2  # of the available memory, kept for this machine's own work
CLUSTERS_PER_CORE = 2


@dataclass(frozen=True)
class Need:
    """Memory one more cluster needs, and how that figure was found."""

    per_cluster_mib: float
    how: str


def need(host_count: int, measured: dict[str, float] | None = None) -> Need:
    """One cluster's memory: measured on running clusters (label -> MiB of its hosts), else estimated."""
    if measured:
        hosts_mib = max(measured.values())
        where = ", ".join(f"{label} {mib:.0f} MiB" for label, mib in sorted(measured.items()))
        how = f"measured hosts of running clusters ({where}; the largest counts) + {WORKER_MIB:.0f} MiB for its tests"
    else:
        hosts_mib = host_count * HOST_ESTIMATE_MIB
        how = (
            f"estimated: {host_count} hosts x {HOST_ESTIMATE_MIB:.0f} MiB + {WORKER_MIB:.0f} MiB for its tests "
            "(no cluster is up to measure)"
        )
    return Need(hosts_mib + WORKER_MIB, how)


def usable_mib(available_mib: float) -> float:
    return available_mib * (1 - RESERVE_FRACTION)


def fits(new_clusters: int, need_: Need, available_mib: float) -> int:
    """How many of `new_clusters` fit in the available memory (all of them when they do)."""
    return min(new_clusters, int(usable_mib(available_mib) // need_.per_cluster_mib))


def check_memory(total: int, new_clusters: int, need_: Need, available_mib: float) -> None:
    """Refuse `total` clusters when the `new_clusters` to bring up do not fit, with the numbers."""
    room = fits(new_clusters, need_, available_mib)
    if room >= new_clusters:
        return
    most = total - new_clusters + room
    raise PreconditionError(
        f"{total} clusters do not fit in this machine's memory: {new_clusters} more would need "
        f"{new_clusters * need_.per_cluster_mib:.0f} MiB ({need_.per_cluster_mib:.0f} MiB each, {need_.how}), "
        f"and {usable_mib(available_mib):.0f} MiB of the {available_mib:.0f} MiB available may be used "
        f"({RESERVE_FRACTION:.0%} kept free)",
        f"use --clusters {most}" if most >= 1 else "free memory first (no further cluster fits)",
    )


def default_count(cores: int, available_mib: float, need_: Need, most: int) -> int:
    """`--clusters auto`: CLUSTERS_PER_CORE per core, within memory and `most` (the fleet's bound)."""
    by_memory = int(usable_mib(available_mib) // need_.per_cluster_mib)
    return max(1, min(CLUSTERS_PER_CORE * max(cores, 1), by_memory, most))


def available_mib(meminfo: Path = Path("/proc/meminfo")) -> float:
    for line in meminfo.read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise PreconditionError(f"{meminfo} has no MemAvailable line", "run on Linux 3.14 or later")


def cores() -> int:
    return len(os.sched_getaffinity(0))


def pss_mib(pids: Iterable[int], proc: Path = Path("/proc")) -> float:
    """Proportional set size of these processes (shared pages counted once across them all)."""
    total_kib = 0
    for pid in pids:
        try:
            text = (proc / str(pid) / "smaps_rollup").read_text()
        except OSError:
            continue  # ended meanwhile, or no smaps_rollup: not counted
        total_kib += sum(int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:"))
    return total_kib / 1024


def measure_cluster_mib(spec: ClusterSpec) -> float | None:
    """What the running cluster's hosts use now, or None when none of its hosts runs."""
    pids = [pid for host in spec.hosts for pid in cgroups.pids(host.name)]
    return pss_mib(pids) if pids else None
