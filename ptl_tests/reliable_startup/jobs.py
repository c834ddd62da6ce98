"""Part A's jobs: how long a padded job may take to start, and the report job (its nodefile, pbsdsh
and pbs_tmrsh from inside the job) with its check."""

from __future__ import annotations

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
    assert jobscripts.section(report, "nodefile") == [names[h] for h in kept]
    # One line per task that ran, from the hosts they ran on (StartupKit.report): ordered by host,
    # so compared sorted; each task ran exactly once, on the expected host.
    tasks = jobscripts.section(report, "tasks")
    # pbsdsh takes the index modulo the job's node count: index 3 lands on node 0 of 3 nodes.
    pbsdsh = sorted((t for t in tasks if t.startswith("pbsdsh-")), key=lambda t: int(t.split()[0].split("-")[1]))
    assert pbsdsh == [f"pbsdsh-{i} {names[kept[i % len(kept)]]}" for i in range(len(pbsdsh))], tasks
    tmrsh_tasks = sorted(t for t in tasks if t.startswith("tmrsh-"))
    assert tmrsh_tasks == sorted(f"tmrsh-{h} {names[h]}" for h in names if h in kept), tasks
    tmrsh = dict(line.split(" ", 1) for line in jobscripts.section(report, "tmrsh"))
    for host in names:
        if host in kept:
            assert tmrsh[host] == "rc=0", tmrsh
        else:
            assert f'host "{host}" is not a node in job <{job_id}>' in tmrsh[host], tmrsh
