"""A cloud run killed at any step leaves nothing tagged once `sweep` (or a second `down`) has run: `up --cloud
aws --provision-only` killed after its record is saved, after the key, between its two security groups, after
the security groups, after the instances, and while it deploys; `down --run` killed at each step of its
teardown; a `sweep` killed as it terminates a killed run's instances. The real playbooks and
amazon.aws modules run against moto's EC2 in server mode on 127.0.0.1.

How a step is hit exactly, not wherever a timer lands: tests/unit/ansible_callbacks/pbsh_stop_at.py (a test-only
ansible callback, on ANSIBLE_CALLBACK_PLUGINS in the child's environment only) stops the playbook as the named
task starts, before it acts; the test then freezes the controller's whole process tree and SIGKILLs it (no
`finally`, no teardown runs), as a CI runner's kill or a power cut would.

FAKED: the EC2 API (moto, fake credentials); for the `deploying` state, the deploy itself: the child works on
its run with a function that connects nowhere and waits to be killed (moto's addresses are fake; nothing may
connect to them; at a stand-in endpoint `up` refuses to deploy). What it proves: the run's record says what its
controller was doing (provisioning, deploying, removing) before that controller acts, so a run killed at any
of these steps is found, and sweep or a second down removes every tagged resource and ends the record. What it
does not: a real VM, EC2's own timings, or a teardown that AWS itself refuses.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pbs_harness.common import errors
from tests.unit.badinput import run_cli
from tests.unit.cloudmoto import ROOT, start_child
from tests.unit.test_cloud_moto import IMAGE, NOTHING, OWNER, REGION, ec2, kill_tree, tagged

CALLBACKS = Path(__file__).resolve().parent / "ansible_callbacks"
HARNESS = str(Path(sys.executable).parent / "pbs-harness")


def _status(cloud: Path, run_id: str) -> str:
    return json.loads((cloud / run_id / "run.json").read_text())["status"]


def _counts(client: object, run_id: str) -> tuple[int, int, int]:
    found = tagged(client, run_id)
    return len(found["instances"]), len(found["groups"]), len(found["keys"])


def _killed_at(argv: list[str], task: str, tmp_path: Path) -> int:
    """Run `argv`, stop its playbook as `task` starts, then SIGKILL its whole process tree; the child's pid."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    mark = tmp_path / "stopped-at"
    log = tmp_path / "child.log"
    env = dict(
        os.environ,
        PYTHONUNBUFFERED="1",
        # The project's callbacks (ansible.cfg's callback_plugins) and the test's stop-at callback.
        ANSIBLE_CALLBACK_PLUGINS=f"{ROOT / 'plugins' / 'callback'}{os.pathsep}{CALLBACKS}",
        PBSH_STOP_AT_TASK=task,
        PBSH_STOP_AT_MARK=str(mark),
    )
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not mark.exists():
            if proc.poll() is not None:
                pytest.fail(f"{argv[1]} ended (exit {proc.returncode}) before task {task!r}:\n{log.read_text()}")
            if time.monotonic() > deadline:
                pytest.fail(f"task {task!r} not reached within 600 s:\n{log.read_text()}")
            time.sleep(0.2)  # polling for the stopped playbook's mark: bounded by the deadline above
        kill_tree(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert task in mark.read_text(), mark.read_text()
    return proc.pid


def _sweep(capsys: pytest.CaptureFixture[str]) -> str:
    rc, out = run_cli(["sweep", "--region", REGION, "--owner", OWNER], capsys)
    assert rc == errors.EXIT_OK, out
    return out


# provision.yml's tasks, in order: the one the run is killed at (before it acts), and what is tagged by then
# (instances, security groups, key pairs).
UP_STEPS = [
    pytest.param(("Check the run's variables", (0, 0, 0)), id="after-the-record"),
    pytest.param(("Create the run's security group", (0, 0, 1)), id="after-the-key"),
    pytest.param(("Create the run's partition group", (0, 1, 1)), id="between-the-security-groups"),
    pytest.param(("Create the instances", (0, 2, 1)), id="after-the-security-groups"),
    pytest.param(("Collect the instances' addresses", (2, 2, 1)), id="after-the-instances"),
]


@pytest.mark.parametrize("step", UP_STEPS)
def test_up_killed_at_a_step_leaves_nothing_once_swept(
    step: tuple[str, tuple[int, int, int]], cloud: Path, moto: str, capsys: pytest.CaptureFixture[str]
) -> None:
    task, left = step
    client = ec2(moto)
    run_id = f"pbsk-up-{secrets.token_hex(4)}"
    argv = [HARNESS, "up", "--cloud", "aws", "--region", REGION, "--image", IMAGE, "--provision-only",
            "--owner", OWNER, "--hosts", "2", "--name-prefix", "pbsk", "--run-id", run_id]  # fmt: skip
    pid = _killed_at(argv, task, cloud.parent)
    assert _counts(client, run_id) == left
    assert _status(cloud, run_id) == "provisioning"  # saved before anything was created

    out = _sweep(capsys)
    assert tagged(client, run_id) == NOTHING
    if left != (0, 0, 0):
        assert f"its controller was killed while provisioning (pid {pid} gone)" in out, out
    else:
        assert f"record of {run_id} ended: its controller was killed while provisioning" in out, out
    assert _status(cloud, run_id) == "down"


CHILD = """
import sys, time
from pathlib import Path
from pbs_harness.hosts.cloud import lifecycle, request
req = request.CloudRequest(
    cloud="aws", region=sys.argv[1], hosts=2, instance_type="t3.medium", image=sys.argv[2],
    ttl=request.parse_ttl("1h"), name_prefix="pbsk", owner=sys.argv[3], ssh_from="0.0.0.0/0",
    endpoint_url=sys.argv[4], provision_only=True)
say = lambda line: print(line, flush=True)
root = Path(sys.argv[5])
# What `up --cloud` (cli/cloud.py cmd_cloud_up) does without --provision-only: the record says `deploying`
# while this process deploys; here the deploy connects nowhere and waits to be killed.
rec = lifecycle.up(req, root, say, then="deploying")
def deploy(rec):
    print("DEPLOYING", rec.run_id, flush=True)
    time.sleep(900)
    return 0
lifecycle.work_on(rec, root, say, deploy, keep_on_failure=False, down_after=False)
"""


def test_up_killed_while_it_deploys_leaves_nothing_once_swept(
    cloud: Path, moto: str, capsys: pytest.CaptureFixture[str]
) -> None:
    client = ec2(moto)
    proc, run_id = start_child(CHILD, "DEPLOYING", REGION, IMAGE, OWNER, moto, str(cloud))
    try:
        assert _status(cloud, run_id) == "deploying"
        assert _counts(client, run_id) == (2, 2, 1)
        kill_tree(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert _status(cloud, run_id) == "deploying"  # the kill ran no `finally`: the run is left as it was

    out = _sweep(capsys)
    assert f"its controller was killed while deploying (pid {proc.pid} gone)" in out, out
    assert tagged(client, run_id) == NOTHING
    assert _status(cloud, run_id) == "down"


# teardown.yml's tasks, in order: the one `down` is killed at (before it acts), what is tagged by then, and
# what finishes the job: a second `down`, or `sweep`.
DOWN_STEPS = [
    pytest.param(("Terminate the instances", (2, 2, 1), "sweep"), id="before-the-instances-then-sweep"),
    pytest.param(("Delete the security groups", (0, 2, 1), "down"), id="after-the-instances-then-down"),
    pytest.param(("Delete the key pairs", (0, 0, 1), "sweep"), id="before-the-keys-then-sweep"),
    pytest.param(("Look again for anything of the runs left", (0, 0, 0), "sweep"), id="after-the-keys-then-sweep"),
]


@pytest.mark.parametrize("step", DOWN_STEPS)
def test_down_killed_at_a_step_is_finished_by_a_second_down_or_sweep(
    step: tuple[str, tuple[int, int, int], str], cloud: Path, moto: str, capsys: pytest.CaptureFixture[str]
) -> None:
    task, left, finisher = step
    client = ec2(moto)
    rc, out = run_cli(
        ["up", "--cloud", "aws", "--region", REGION, "--image", IMAGE, "--provision-only", "--owner", OWNER,
         "--hosts", "2", "--name-prefix", "pbsk"],
        capsys,
    )  # fmt: skip
    assert rc == errors.EXIT_OK, out
    run_id = next(w for w in out.split() if w.startswith("pbsk-")).rstrip(":")
    assert _status(cloud, run_id) == "up"

    pid = _killed_at([HARNESS, "down", "--run", run_id], task, cloud.parent)
    assert _counts(client, run_id) == left
    # Said before the teardown acts: a killed `down` is not mistaken for a run handed to the user.
    assert _status(cloud, run_id) == "removing"

    if finisher == "down":
        rc, out = run_cli(["down", "--run", run_id], capsys)
        assert rc == errors.EXIT_OK, out
    else:
        out = _sweep(capsys)
        if left != (0, 0, 0):
            assert f"its controller was killed while removing (pid {pid} gone)" in out, out
        else:
            assert f"record of {run_id} ended: its controller was killed while removing" in out, out
    assert tagged(client, run_id) == NOTHING
    assert _status(cloud, run_id) == "down"


def test_sweep_killed_while_it_removes_a_run_is_finished_by_the_next_sweep(
    cloud: Path, moto: str, capsys: pytest.CaptureFixture[str]
) -> None:
    client = ec2(moto)
    run_id = f"pbsk-sw-{secrets.token_hex(4)}"
    up_argv = [HARNESS, "up", "--cloud", "aws", "--region", REGION, "--image", IMAGE, "--provision-only",
               "--owner", OWNER, "--hosts", "2", "--name-prefix", "pbsk", "--run-id", run_id]  # fmt: skip
    _killed_at(up_argv, "Collect the instances' addresses", cloud.parent / "up")
    assert _counts(client, run_id) == (2, 2, 1)

    # The sweep that takes the killed run is killed in its turn, as its teardown starts terminating.
    sweep_argv = [HARNESS, "sweep", "--region", REGION, "--owner", OWNER]
    pid = _killed_at(sweep_argv, "Terminate the instances", cloud.parent / "sweep")
    assert _counts(client, run_id) == (2, 2, 1)
    assert _status(cloud, run_id) == "removing"  # said before the sweep acted

    out = _sweep(capsys)
    assert f"its controller was killed while removing (pid {pid} gone)" in out, out
    assert tagged(client, run_id) == NOTHING
    assert _status(cloud, run_id) == "down"
