"""What the conformance report is headed with for a cluster: its OpenPBS version, build and source
(pbs_harness.conformance.provenance), and the cluster."""

from __future__ import annotations

from pbs_harness.conformance import provenance
from pbs_harness.pbs.client import Pbs
from pbs_harness.remote.inventory import cluster_name


def of(pbs: Pbs) -> dict[str, object]:
    """Read on the cluster (the server's status, the date of pbs_server.bin, the source records of
    the server host) and from its inventory."""
    server = pbs.server.status()
    prefix = str(pbs.cluster.prefix)  # a Path; the record is JSON
    build = pbs.cluster.server.run(
        f"ls -l --time-style=+%Y-%m-%d {prefix}/sbin/pbs_server.bin | awk '{{print $6}}'"
    ).stdout.strip()
    version = str(server.get("pbs_version", "unknown"))
    source = provenance.collect(version, prefix, lambda command: pbs.cluster.server.run(command).stdout)
    return {
        "pbs_version": version,
        "build": f"{prefix} (pbs_server.bin dated {build or 'unknown'})",
        "provenance": provenance.to_dict(source),
        "inventory": str(pbs.cluster.inventory.path),
        "server": pbs.cluster.server.name,
        "hosts": sorted(pbs.cluster.hosts),
        "cluster": cluster_name(pbs.cluster.inventory),
    }
