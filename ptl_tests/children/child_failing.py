"""Run by test_harness.py in a child pytest: submits a job, then fails on purpose."""

import pytest

pytestmark = pytest.mark.acceptance


def test_fails_after_submitting(pbs, topology) -> None:
    job_id = pbs.jobs.submit(user=topology.users.owner, command=["/bin/sleep", "30"])
    pbs.jobs.wait(job_id, job_state="R", timeout=60)
    assert job_id == "deliberately-wrong", "this failure is the point of the test"
