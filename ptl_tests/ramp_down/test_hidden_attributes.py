"""Hidden attributes (RD-7): show_hidden_attribs shows the original and previous phases of a job."""

from __future__ import annotations

import pytest

from pbs_harness.pbs.evidence import pick
from pbs_harness.pbs.parsers import vnodes_of
from ptl_tests.ramp_down.assignment import Assignment
from ptl_tests.ramp_down.evidence import accounting

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.ramp_down,
    pytest.mark.needs_moms(3),
    pytest.mark.requires_feature("pbs_release_nodes"),
]


HIDDEN = (
    "exec_vnode_orig", "exec_vnode_acct", "exec_vnode_deallocated", "exec_host_orig", "exec_host_acct",
    "schedselect_orig", "resources_used_acct",
)  # fmt: skip


@pytest.mark.spec("RD-7")
@pytest.mark.guards("RD-7")
def test_show_hidden_attribs_exposes_the_phases(pbs, cluster, roles, running_job, conformance) -> None:
    """After a partial release (one super-chunk vnode, still held) and a whole-host release, the
    hidden attributes show the original and the previous phase; only a manager may set the switch."""
    job_id, before, since = running_job
    chunks = Assignment.of(before["exec_vnode"]).chunks
    superchunk = pick.one([c for c in chunks if c[0].host == roles.multi], f"one chunk on {roles.multi}", str)
    held = superchunk[0].vnode
    assert pbs.jobs.release_nodes(job_id, [held], user=roles.owner).ok
    middle = pbs.jobs.status(job_id)
    assert pbs.jobs.release_nodes(job_id, [roles.plain], user=roles.owner).ok
    pbs.nodes.wait_state([roles.plain], "free", timeout=30)
    assert not set(HIDDEN) & set(pbs.jobs.status(job_id)), "hidden attributes shown by default"

    refused = pbs.server.set({"show_hidden_attribs": True}, user=roles.topology.users.account("operator"))
    assert not refused.ok
    assert pbs.server.set({"show_hidden_attribs": True}).ok

    job = pbs.jobs.status(job_id)
    assert job["exec_vnode_orig"] == before["exec_vnode"]
    assert job["exec_host_orig"] == before["exec_host"]
    assert job["schedselect_orig"] == before["schedselect"]
    # *_acct: the phase that the last release closed (what its 'u' record shows)
    assert job["exec_vnode_acct"] == middle["exec_vnode"]
    assert job["exec_host_acct"] == middle["exec_host"]
    assert "resources_used_acct" in job
    # the spec also names Resource_List_orig and Resource_List_acct: qstat shows neither
    text = pbs.jobs.run("qstat", "-f", job_id).stdout
    shown = sorted({line.split("=")[0].strip() for line in text.splitlines() if "_orig" in line or "_acct" in line})
    assert not {"Resource_List_orig", "Resource_List_acct"} & set(job)
    assert not [name for name in shown if name.startswith("Resource_List_")], shown
    conformance.difference(
        "RD-7",
        spec_says="show_hidden_attribs=true lets qstat -f show exec_vnode_orig, exec_vnode_acct, "
        "exec_vnode_deallocated, exec_host_orig, exec_host_acct, Resource_List_orig, Resource_List_acct",
        openpbs_does="Resource_List_orig and Resource_List_acct are not shown (qstat -f nor -F json); "
        "schedselect_orig and resources_used_acct are shown besides the others",
        evidence=f"hidden attributes in qstat -f: {shown}",
    )
    # deallocated: released vnodes the job still holds (the partially released host's vnode)
    assert set(vnodes_of(job["exec_vnode_deallocated"])) == {held}, job["exec_vnode_deallocated"]
    _, _, second_u, _ = accounting(pbs).expect(job_id, "ucuc", since, timeout=30)
    assert second_u.fields["exec_vnode"] == job["exec_vnode_acct"]
