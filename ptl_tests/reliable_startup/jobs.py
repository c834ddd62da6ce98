"""Part A's jobs: how long a padded job may take to start, and the report job (its nodefile, pbsdsh
and pbs_tmrsh from inside the job) with its check."""

from __future__ import annotations

from pbs_harness.pbs.evidence import pick
from ptl_tests import jobscripts
from ptl_tests.reliable_startup_helpers import SLEEP, StartupKit

START_TIMEOUT = 90  # short alarms: a padded job starts within ~2 x SHORT_ALARM plus a scheduling cycle


def report_job(kit: StartupKit, name: str, indexes: int = 4) -> str:
    """A job script writing its nodefile, `pbsdsh -n i` for i < indexes and pbs_tmrsh to every host."""
    hosts = list(kit.roles.all_hosts)
    return jobscripts.pruned_job_report(str(kit.cluster.prefix), kit.report_path(name), indexes, hosts, SLEEP)


def assert_reach(report: str, job_id: str, kept: list[str], names: dict[str, str]) -> None:
    """The job's report (report_job): the nodefile lists the kept hosts; `pbsdsh -n i` runs on the
    i-th kept host (modulo their number); pbs_tmrsh reaches the kept hosts and refuses the others
    (`names` has every host of the report, in its order)."""
    __tracebackhide__ = True
    nodefile = jobscripts.section(report, "nodefile")
    want = [names[h] for h in kept]
    assert nodefile == want, f"$PBS_NODEFILE of {job_id}: expected the kept hosts {want}, found {nodefile}"
    # One line per task that ran, from the hosts they ran on (StartupKit.report): ordered by host,
    # so compared sorted; each task ran exactly once, on the expected host.
    tasks = jobscripts.section(report, "tasks")
    # pbsdsh takes the index modulo the job's node count: index 3 lands on node 0 of 3 nodes.
    pbsdsh = sorted((t for t in tasks if t.startswith("pbsdsh-")), key=lambda t: int(t.split()[0].split("-")[1]))
    want = [f"pbsdsh-{i} {names[kept[i % len(kept)]]}" for i in range(len(pbsdsh))]
    assert pbsdsh == want, f"pbsdsh tasks of {job_id}: expected {want}, found {tasks}"
    want = sorted(f"tmrsh-{h} {names[h]}" for h in names if h in kept)
    got = sorted(t for t in tasks if t.startswith("tmrsh-"))
    assert got == want, f"pbs_tmrsh tasks of {job_id}: expected {want} (the kept hosts only), found {tasks}"
    tmrsh = dict(line.split(" ", 1) if " " in line else (line, "") for line in jobscripts.section(report, "tmrsh"))
    for host in names:
        said = pick.field(tmrsh, host, f"the job's '== tmrsh' section (pbs_tmrsh {host})")
        if host in kept:
            assert said == "rc=0", f"pbs_tmrsh {host} (kept) in {job_id}: expected rc=0, found {said!r}"
        else:
            refusal = f'host "{host}" is not a node in job <{job_id}>'
            assert refusal in said, f"pbs_tmrsh {host} (released): expected '{refusal}', found {said!r}"
