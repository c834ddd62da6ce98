"""Evidence of a release: the job's accounting records, and the logs of a sister host leaving the job."""

from __future__ import annotations

import re
from datetime import datetime

from pbs_harness.pbs.evidence.accounting import AccountingReader
from pbs_harness.pbs.evidence.logs import mom_log, server_log
from ptl_tests.ramp_down.assignment import Assignment
from ptl_tests.ramp_down_helpers import Roles


def accounting(pbs) -> AccountingReader:
    return AccountingReader(pbs.cluster.server, str(pbs.cluster.pbs_home))


def released_vnode_logs(cluster, roles: Roles, job_id: str, released: Assignment, since: datetime) -> None:
    """The logs of a sister host leaving the job: server DEBUG2 "clearing job J from node V" per vnode
    and "deallocating N cpu(s) from job J" (object: the mom host), the sister's DELETE_JOB2, and
    the primary mom's "<host> cput=... mem=...kb" with the sister's final usage."""
    __tracebackhide__ = True
    srv_log = server_log(cluster)
    ms_log = mom_log(cluster, roles.primary)
    jid = re.escape(job_id)
    for host in released.hosts():
        vnodes = [s for chunk in released.chunks for s in chunk if s.host == host]
        for s in vnodes:
            srv_log.expect(rf";Node;{re.escape(host)};clearing job {jid} from node {re.escape(s.vnode)}$", since, 30)
        cpus = sum(int(s.resources.get("ncpus", 0)) for s in vnodes)
        srv_log.expect(rf";Node;{re.escape(host)};deallocating {cpus} cpu\(s\) from job {jid}$", since, 30)
        mom_log(cluster, host).expect(f"Job;{jid};DELETE_JOB2 received", since, 30)
        ms_log.expect(rf"Job;{jid};{re.escape(host)} cput=\d\d:\d\d:\d\d mem=\d+kb$", since, 30)
