"""What the conformance report is headed with for a cluster: its OpenPBS version and build, and the cluster."""

from __future__ import annotations

from pbs_harness.parallel import binding
from pbs_harness.pbs.client import Pbs


def of(pbs: Pbs) -> dict[str, object]:
    """Read on the cluster (the server's status, the date of pbs_server.bin) and from its inventory."""
    server = pbs.server.status()
    build = pbs.cluster.server.run(
        f"ls -l --time-style=+%Y-%m-%d {pbs.cluster.prefix}/sbin/pbs_server.bin | awk '{{print $6}}'"
    ).stdout.strip()
    return {
        "pbs_version": server.get("pbs_version", "unknown"),
        "build": f"{pbs.cluster.prefix} (pbs_server.bin dated {build or 'unknown'})",
        "inventory": str(pbs.cluster.inventory.path),
        "server": pbs.cluster.server.name,
        "hosts": sorted(pbs.cluster.hosts),
        "cluster": binding.cluster_name(pbs.cluster.inventory),
    }
