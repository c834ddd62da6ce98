"""The PBS client facade used by the suites: `pbs.jobs`, `pbs.nodes`, `pbs.server`, ..."""

from __future__ import annotations

from pbs_harness.pbs.hooks import Hooks
from pbs_harness.pbs.jobs import Jobs
from pbs_harness.pbs.moms import MomConfig
from pbs_harness.pbs.nodes import Nodes
from pbs_harness.pbs.resv import Reservations
from pbs_harness.pbs.server import Server
from pbs_harness.remote.cluster import Cluster
from pbs_harness.remote.transport import RemoteHost


class Pbs:
    """One PBS complex seen from its submit host."""

    def __init__(self, cluster: Cluster, host: RemoteHost | None = None) -> None:
        self.cluster = cluster
        self.host = host or cluster.client
        self.jobs = Jobs(cluster, self.host)
        self.nodes = Nodes(cluster, self.host)
        self.server = Server(cluster, self.host)
        self.resv = Reservations(cluster, self.host)
        self.hooks = Hooks(cluster)
        self.mom_config = MomConfig(cluster)
