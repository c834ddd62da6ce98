"""Known OpenPBS defects, recognised on the cluster by their signature when a test's wait times out.

Only the test's OWN jobs are looked at: the jobs the server has now that it did not have when the
test started (`jobs_now` at the start, then `diagnose(cluster, before)`). A stuck starter or a
tm_init failure of some other job (a leftover the baseline restore is still deleting) says nothing
about why this test's wait timed out.

A recognised defect makes the attempt one that met a known race (pbs_harness.suite.defect_retry: the
scenario runs again on a fresh job; met on every attempt it fails); anything else stays a failure.
Each entry says where it is documented.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from pbs_harness.pbs.evidence import starters
from pbs_harness.pbs.substates import PRERUN
from pbs_harness.remote.cluster import Cluster
from pbs_harness.remote.transport import RemoteHost

# docs/suites/reliable_startup.md, "OpenPBS defects found"
STARTER_HALF_READ = (
    "OpenPBS defect (start_exec.c get_failed_moms_and_vnodes): the job starter read the size of a "
    "failed host's name, then the name with a zero poll timeout before the primary mom had written "
    "it; the next loop took the name as a size and readpipe() now waits forever for bytes that never "
    "come, so the job stays in substate 41"
)


# docs/suites/admin_suspend.md, "OpenPBS defects found"
TM_INIT_ENOEVENT = (
    "OpenPBS defect (cause not yet found): pbsdsh in a healthy running job failed in tm_init(), its "
    "first exchange with its own mom, with TM_ENOEVENT (17001): the mom's reply carried an event "
    "number this client never sent, so none of the job's pbsdsh tasks started"
)
TM_INIT_ENOEVENT_TEXT = "tm_init failed, rc = unknown (17001)"


def jobs_now(cluster: Cluster) -> frozenset[str]:
    """The ids of the jobs (subjobs too) the server has right now: taken when a test starts, so that
    a diagnosis counts only the jobs that came after."""
    out = cluster.server.check([cluster.bin("qstat"), "-t", "-f", "-F", "json"], timeout=30).stdout
    return frozenset(json.loads(out or "{}").get("Jobs", {}))


def diagnose(cluster: Cluster, before: frozenset[str]) -> str | None:
    """The known defect the cluster shows right now in a job that is not one of `before` (the jobs
    the server had when the test started), with the observation; or None."""
    return _stuck_starter(cluster, before) or _tm_init_enoevent(cluster, before)


def _tm_init_enoevent(cluster: Cluster, before: frozenset[str]) -> str | None:
    """pbsdsh's tm_init failure in the spooled output of a job of the test the server still has
    (old spool files of finished jobs, or other jobs' output, are no diagnosis)."""
    with contextlib.suppress(Exception):
        listed = set(cluster.server.run([cluster.bin("qstat"), "-t", "-w"], timeout=30).stdout.split()) - before
        for host in cluster.moms:
            spool = cluster.pbs_home / "spool"
            found = host.run(
                f"grep -l -F '{TM_INIT_ENOEVENT_TEXT}' {spool}/*.OU {spool}/*.ER 2>/dev/null", timeout=30
            ).stdout.split()
            jobs = sorted({Path(f).name.rsplit(".", 1)[0] for f in found} & listed)
            if jobs:
                seen = f"`{TM_INIT_ENOEVENT_TEXT}` in the output of {', '.join(jobs)}"
                return f"{TM_INIT_ENOEVENT}. Observed on {host.name}: {seen}"
    return None


def _prerun_primaries(cluster: Cluster, before: frozenset[str]) -> dict[str, list[str]]:
    """The test's jobs (not in `before`) the server has in substate 41 (sent to run, no session
    yet), by their primary host."""
    out = cluster.server.run([cluster.bin("qstat"), "-t", "-f", "-F", "json"], timeout=30).stdout
    jobs = json.loads(out or "{}").get("Jobs", {})
    by_host: dict[str, list[str]] = {}
    for job_id, job in jobs.items():
        if job_id not in before and job.get("substate") == PRERUN and job.get("exec_host"):
            by_host.setdefault(str(job["exec_host"]).split("/", 1)[0], []).append(job_id)
    return by_host


def _stuck_starters(host: RemoteHost, younger_than: float | None = None) -> list[starters.Starter]:
    """The starters on `host` blocked in the starter race, only those forked less than `younger_than`
    seconds ago when given."""
    return [
        s
        for s in starters.stuck_reading_failed_host_names(starters.starters(host))
        if younger_than is None or (s.age is not None and s.age < younger_than)
    ]


def stuck_starter_on(host: RemoteHost, younger_than: float) -> str | None:
    """The starter race seen on `host` in a starter forked less than `younger_than` seconds ago (one
    of the caller's own jobs: a starter left from an earlier attempt's job is older), or None. The
    signature is final: a starter blocked reading a name's bytes as a size never gets them, so a wait
    can end at once on it (`StartupKit.started`) instead of at its timeout."""
    stuck = _stuck_starters(host, younger_than)
    if not stuck:
        return None
    return f"{STARTER_HALF_READ}. Observed on {host.name}: starter {'; '.join(s.describe() for s in stuck)}"


def _stuck_starter(cluster: Cluster, before: frozenset[str]) -> str | None:
    """A stuck starter on the primary host of a job of the test that is waiting in substate 41 right
    now: a starter left from an earlier job (whose job the baseline restore deleted), or one of
    another job's, is no diagnosis."""
    with contextlib.suppress(Exception):
        waiting = _prerun_primaries(cluster, before)
        for host in cluster.moms:
            if host.name not in waiting:
                continue
            stuck: list[starters.Starter] = []
            # A host that cannot be read is no diagnosis; it never replaces the test's own failure.
            with contextlib.suppress(Exception):
                stuck = _stuck_starters(host)
            if stuck:
                seen = "; ".join(s.describe() for s in stuck)
                jobs = ", ".join(waiting[host.name])
                return f"{STARTER_HALF_READ}. Observed on {host.name}, primary of {jobs} (substate 41): starter {seen}"
    return None
