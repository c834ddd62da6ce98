"""Known OpenPBS defects, recognised on the cluster by their signature when a test's wait times out.

A recognised defect turns the failure into an xfail whose reason names the defect and carries
what was observed; anything else stays a failure. Each entry says where it is documented.
"""

from __future__ import annotations

import contextlib

from pbs_harness.cluster import Cluster
from pbs_harness.evidence import starters

# docs/suites/reliable_startup.md, "OpenPBS defects found"
STARTER_HALF_READ = (
    "OpenPBS defect (start_exec.c get_failed_moms_and_vnodes): the job starter read the size of a "
    "failed host's name, then the name with a zero poll timeout before the primary mom had written "
    "it; the next loop took the name as a size and readpipe() now waits forever for bytes that never "
    "come, so the job stays in substate 41"
)


def diagnose(cluster: Cluster) -> str | None:
    """The known defect the cluster shows right now, with the observation, or None."""
    for host in cluster.moms:
        stuck: list[starters.Starter] = []
        # A host that cannot be read is no diagnosis; it never replaces the test's own failure.
        with contextlib.suppress(Exception):
            stuck = starters.stuck_reading_failed_host_names(starters.starters(host))
        if stuck:
            seen = "; ".join(s.describe() for s in stuck)
            return f"{STARTER_HALF_READ}. Observed on {host.name}: starter {seen}"
    return None
