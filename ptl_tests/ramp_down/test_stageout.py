"""release_nodes_on_stageout (RD-2): every sister leaves the job when its stageout begins, set in
every way a job can get the attribute; and a release by command before the stageout releases the rest."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pbs_harness.pbs.evidence import pick
from pbs_harness.pbs.evidence.logs import mom_log
from ptl_tests.hook_files import create_hook
from ptl_tests.ramp_down.assignment import Assignment, assert_job_matches
from ptl_tests.ramp_down.evidence import accounting, released_vnode_logs
from ptl_tests.ramp_down.jobs import start_job
from ptl_tests.ramp_down_helpers import RELNODES_ATTR, STAGEOUT_SUBSTATE, hook_set_release_nodes_on_stageout

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.ramp_down,
    pytest.mark.needs_moms(3),
    pytest.mark.requires_feature("pbs_release_nodes"),
]


@dataclass(frozen=True)
class StageoutWay:
    """How a test gives the job its release_nodes_on_stageout, and whether sisters then go at stageout."""

    qsub: str | None = None  # -W value at submission
    qalter: str | None = None  # -W value given with qalter on the running job
    hook: tuple[str, bool] | None = None  # (queuejob|modifyjob, value the hook sets)
    default_qsub_arguments: str | None = None
    releases: bool = False

    def shown(self) -> str | None:
        """What qstat shows before the job ends (None: attribute not set)."""
        if self.hook:
            return str(self.hook[1])
        value = self.qalter or self.qsub or self.default_qsub_arguments
        return None if value is None else str(value == "true")


STAGEOUT_WAYS = {
    "qsub-true": StageoutWay(qsub="true", releases=True),
    "qsub-false": StageoutWay(qsub="false"),
    "unset": StageoutWay(),
    "qalter-true": StageoutWay(qalter="true", releases=True),
    "qalter-false-over-qsub-true": StageoutWay(qsub="true", qalter="false"),
    "queuejob-hook-true": StageoutWay(hook=("queuejob", True), releases=True),
    "queuejob-hook-false-over-qsub-true": StageoutWay(qsub="true", hook=("queuejob", False)),
    "modifyjob-hook-true": StageoutWay(hook=("modifyjob", True), releases=True),
    "modifyjob-hook-false-over-qsub-true": StageoutWay(qsub="true", hook=("modifyjob", False)),
    "default_qsub_arguments-true": StageoutWay(default_qsub_arguments="true", releases=True),
}


# A way that releases the sisters checks their u/c/e records and release logs: those cases guard
# RD-3..6. A way that keeps them pins the other side (no u/c/e records, no DELETE_JOB2).
RELEASE_RECORDS = pytest.mark.guards("RD-3", "RD-4", "RD-5", "RD-6")


STAGEOUT_CASES = [
    pytest.param(way, id=name, marks=RELEASE_RECORDS if way.releases else ()) for name, way in STAGEOUT_WAYS.items()
]


@pytest.mark.spec("RD-2", "RD-3", "RD-4", "RD-5", "RD-6")
@pytest.mark.guards("RD-2")
@pytest.mark.parametrize("way", STAGEOUT_CASES)
def test_release_nodes_on_stageout(pbs, cluster, roles, blocked_stageout, way: StageoutWay) -> None:
    """With release_nodes_on_stageout true, every sister leaves the job when its stageout begins
    (the job is still in E/51 copying files); with false or unset, they stay until the job ends."""
    if way.default_qsub_arguments:
        assert pbs.server.set({"default_qsub_arguments": f"-W {RELNODES_ATTR}={way.default_qsub_arguments}"}).ok
    if way.hook:
        event, value = way.hook
        create_hook(pbs, "rd_stageout", hook_set_release_nodes_on_stageout(value, event))
    attributes = {"stageout": blocked_stageout.attribute(roles.primary)}
    if way.qsub:
        attributes[RELNODES_ATTR] = way.qsub
    job_id, before, since = start_job(pbs, cluster, roles, attributes=attributes)
    if way.qalter:
        res = pbs.jobs.alter(job_id, "-W", f"{RELNODES_ATTR}={way.qalter}", user=roles.owner)
        assert res.ok, res.stderr
    elif way.hook and way.hook[0] == "modifyjob":
        res = pbs.jobs.alter(job_id, "-N", "rd-modified", user=roles.owner)
        assert res.ok, res.stderr
    assert pbs.jobs.status(job_id).get(RELNODES_ATTR) == way.shown()
    assigned = Assignment.of(before["exec_vnode"])
    ms_only = Assignment(tuple(c for c in assigned.chunks if c[0].host == roles.primary))
    sisters = Assignment(tuple(c for c in assigned.chunks if c[0].host != roles.primary))
    sister_vnodes = sorted(sisters.vnodes())

    assert pbs.jobs.delete(job_id, user=roles.owner).ok
    staging = pbs.jobs.wait(job_id, job_state="E", substate=STAGEOUT_SUBSTATE, timeout=60)

    records = accounting(pbs)
    if way.releases:
        assert_job_matches(staging, ms_only)
        pbs.nodes.wait_state(sister_vnodes, "free", timeout=30)
        u, c = records.expect(job_id, "uc", since, timeout=30)
        assert u.fields["exec_vnode"] == before["exec_vnode"]
        assert Assignment.of(c.fields["exec_vnode"]) == ms_only
        released_vnode_logs(cluster, roles, job_id, sisters, since)
    else:
        assert_job_matches(staging, assigned)
        assert {v: pbs.nodes.status(v)["state"] for v in sister_vnodes} == dict.fromkeys(sister_vnodes, "job-busy")
        assert records.of(job_id, "uc", since) == []
        for host in sisters.hosts():
            mom_log(cluster, host).absent(f"Job;{job_id};DELETE_JOB2", since)

    assert blocked_stageout.drain() == blocked_stageout.payload
    pbs.jobs.wait(job_id, job_state="F", timeout=60)
    (end,) = records.expect(job_id, "E", since, timeout=30)
    assert end.resource_list["select"] == before["Resource_List"]["select"]
    last_phase = records.of(job_id, "e", since)
    if way.releases:
        assert [Assignment.of(e.fields["exec_vnode"]) for e in last_phase] == [ms_only]
    else:
        assert last_phase == []


@pytest.mark.spec("RD-2")
@pytest.mark.guards("RD-2")
@pytest.mark.parametrize("value", ["-1", "11", "tru"])
def test_release_nodes_on_stageout_rejects_bad_values(pbs, roles, value: str) -> None:
    res = pbs.jobs.run("qsub", "-W", f"{RELNODES_ATTR}={value}", "--", "/bin/true", user=roles.owner)
    assert not res.ok
    lines = res.stderr.splitlines()
    assert lines[:1] == ["qsub: illegal -W value"], res.stderr
    assert [line[:11] for line in lines[1:2]] == ["usage: qsub"], res.stderr


@pytest.mark.spec("RD-2", "RD-3", "RD-4", "RD-5")
@pytest.mark.guards("RD-2", "RD-3", "RD-4", "RD-5")
def test_release_by_command_then_the_rest_at_stageout(pbs, cluster, roles, blocked_stageout) -> None:
    """Two phases end early: the command releases the plain host, the stageout the multi-vnode host;
    then 'e' closes the primary-only phase and 'E' keeps the original request."""
    attributes = {"stageout": blocked_stageout.attribute(roles.primary), RELNODES_ATTR: "true"}
    job_id, before, since = start_job(pbs, cluster, roles, attributes=attributes)
    assigned = Assignment.of(before["exec_vnode"])
    assert pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner).ok
    assert pbs.jobs.delete(job_id, user=roles.owner).ok
    staging = pbs.jobs.wait(job_id, job_state="E", substate=STAGEOUT_SUBSTATE, timeout=60)
    ms_only = assigned.only({s.vnode for c in assigned.chunks for s in c if s.host == roles.primary})
    assert_job_matches(staging, ms_only)
    released_vnode_logs(cluster, roles, job_id, assigned.without(ms_only.vnodes()), since)
    assert blocked_stageout.drain() == blocked_stageout.payload
    pbs.jobs.wait(job_id, job_state="F", timeout=60)
    records = accounting(pbs).wait_for(job_id, "ucE", 5, since, timeout=30)
    assert [r.type for r in records] == ["u", "c", "u", "c", "E"]
    assert [Assignment.of(r.fields["exec_vnode"]) for r in records[:4]] == [
        assigned,
        assigned.without({roles.plain}),
        assigned.without({roles.plain}),
        ms_only,
    ]
    last = pick.one(accounting(pbs).of(job_id, "e", since), f"one 'e' record of {job_id}")
    assert Assignment.of(last.fields["exec_vnode"]) == ms_only
    assert records[-1].resource_list["select"] == before["Resource_List"]["select"]
