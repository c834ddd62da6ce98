"""`up --cloud aws --provision-only`, `down` and `sweep` through the real playbooks and the real amazon.aws
modules, against moto's EC2 in server mode on 127.0.0.1.

FAKED: the EC2 API (moto on 127.0.0.1, fake credentials). What that proves: the calls the playbooks
make, the resources and tags they leave, the inventory written from what the API returned, idempotence
by tag, teardown by tag, and that a killed run is swept. What it does not prove: moto boots nothing (no
SSH, no cloud-init, so the TTL timer is checked as the user-data it is, not as a VM powering off), and
it has no quotas, throttling or IAM. Nothing here connects to an address moto hands out.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from pbs_harness.common import errors
from tests.unit.badinput import assert_refused, run_cli

REGION = "eu-west-1"
OWNER = "tester@ci"
IMAGE = "ami-12c6146b"  # one of the AMIs moto serves in every region


def ec2(moto: str):
    import boto3

    return boto3.client(
        "ec2",
        region_name=REGION,
        endpoint_url=moto,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",  # noqa: S106 - moto's fake credentials
    )


def tagged(client, run_id: str) -> dict[str, list[str]]:
    """Every resource still carrying the run's tag (instances not terminated)."""
    f = [{"Name": "tag:pbs-harness-run", "Values": [run_id]}]
    live = {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]}
    return {
        "instances": [
            i["InstanceId"]
            for r in client.describe_instances(Filters=[*f, live])["Reservations"]
            for i in r["Instances"]
        ],
        "groups": [g["GroupId"] for g in client.describe_security_groups(Filters=f)["SecurityGroups"]],
        "keys": [k["KeyName"] for k in client.describe_key_pairs(Filters=f)["KeyPairs"]],
    }


NOTHING = {"instances": [], "groups": [], "keys": []}


def tags_of(client, run_id: str) -> dict[str, dict[str, str]]:
    """Each resource of the run (by id) with its tags."""
    f = [{"Name": "tag:pbs-harness-run", "Values": [run_id]}]
    found = [
        *(
            (i["InstanceId"], i["Tags"])
            for r in client.describe_instances(Filters=f)["Reservations"]
            for i in r["Instances"]
        ),
        *((g["GroupId"], g["Tags"]) for g in client.describe_security_groups(Filters=f)["SecurityGroups"]),
        *((k["KeyName"], k["Tags"]) for k in client.describe_key_pairs(Filters=f)["KeyPairs"]),
    ]
    return {rid: {t["Key"]: t["Value"] for t in tags} for rid, tags in found}


def freeze_tree(pid: int) -> list[int]:
    """SIGSTOP `pid` and every descendant, parents first; the pids."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            os.kill(current, signal.SIGSTOP)
        except ProcessLookupError:
            continue
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):  # the task ended meanwhile
                todo += [int(c) for c in (task / "children").read_text().split()]
    return found


def kill_tree(proc: subprocess.Popen) -> None:
    """Every process of proc's tree frozen as it is found (so none forks a new one; ansible's workers start
    sessions of their own, so a process group would miss them), then all SIGKILLed, and dead."""
    tree = freeze_tree(proc.pid)
    for pid in tree:
        os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=30)
    for pid in tree:
        deadline = time.monotonic() + 30
        while not _dead(pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # waiting for a killed process to die: bounded


def _dead(pid: int) -> bool:
    """Gone, or a zombie. The unit session is a child subreaper (tests/conftest.py), so a killed grandchild
    is re-parented to it and stays a zombie in /proc until reaped: reap it here. Waiting for its /proc entry
    to vanish instead cost 30 s per killed process (the unit suite sat at 81% for minutes)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in "ZX"


def up(capsys, *more: str) -> tuple[int, str, str]:
    rc, out = run_cli(
        ["up", "--cloud", "aws", "--region", REGION, "--image", IMAGE, "--provision-only", "--owner", OWNER,
         "--name-prefix", "pbsc", *more],
        capsys,
    )  # fmt: skip
    run_id = next((w for w in out.split() if w.startswith("pbsc-")), "").rstrip(":")
    return rc, out, run_id


def assert_up_again_changes_nothing(client, cloud: Path, run_id: str, record: dict, capsys) -> None:
    """`up` again with the same run id (and another --ttl) changes nothing: the run keeps its times, so its
    tags, its VMs' power-off, its plan and its record stay as they were, and the playbook changes nothing."""
    before = tags_of(client, run_id), (cloud / run_id / "plan.json").read_text(), record
    rc, out, _ = up(capsys, "--hosts", "2", "--ttl", "3h", "--run-id", run_id)
    assert rc == errors.EXIT_OK, out
    assert f"it keeps its expiry {record['expires']}" in out
    plan = (cloud / run_id / "plan.json").read_text()
    again = json.loads((cloud / run_id / "run.json").read_text())
    assert (tags_of(client, run_id), plan, {**again, "pid": record["pid"], "pid_start": record["pid_start"]}) == before
    recap = (cloud / run_id / "logs" / "ansible-provision.log").read_text().rsplit("PLAY RECAP", 1)[1]
    assert " changed=0 " in recap, recap
    assert " failed=0 " in recap, recap


def test_provision_tags_everything_writes_the_inventory_and_down_leaves_nothing(
    cloud: Path, moto: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, run_id = up(capsys, "--hosts", "2", "--ttl", "90m")
    assert rc == errors.EXIT_OK, out
    client = ec2(moto)
    found = tagged(client, run_id)
    assert (len(found["instances"]), len(found["groups"]), found["keys"]) == (2, 2, [f"pbs-harness-{run_id}"])

    record = json.loads((cloud / run_id / "run.json").read_text())
    assert (record["status"], record["owner"], record["region"]) == ("up", OWNER, REGION)
    expires = dt.datetime.strptime(record["expires"], "%Y-%m-%dT%H:%M:%SZ")
    assert expires - dt.datetime.strptime(record["created"], "%Y-%m-%dT%H:%M:%SZ") == dt.timedelta(minutes=90)

    reservations = client.describe_instances(InstanceIds=found["instances"])["Reservations"]
    instances = [i for r in reservations for i in r["Instances"]]
    for inst in instances:
        tags = {t["Key"]: t["Value"] for t in inst["Tags"]}
        assert tags["pbs-harness-run"] == run_id
        assert tags["pbs-harness-owner"] == OWNER
        assert tags["pbs-harness-expires"] == record["expires"]
        attr = client.describe_instance_attribute(
            InstanceId=inst["InstanceId"], Attribute="instanceInitiatedShutdownBehavior"
        )
        assert attr["InstanceInitiatedShutdownBehavior"]["Value"] == "terminate"
        raw = client.describe_instance_attribute(InstanceId=inst["InstanceId"], Attribute="userData")["UserData"][
            "Value"
        ]
        user_data = yaml.safe_load(base64.b64decode(raw))
        timer = next(f["content"] for f in user_data["write_files"] if f["path"].endswith("pbs-harness-ttl.timer"))
        assert f"OnCalendar={expires:%Y-%m-%d %H:%M:%S} UTC" in timer
        assert "Persistent=true" in timer
        assert ["systemctl", "enable", "--now", "pbs-harness-ttl.timer"] in user_data["runcmd"]
        assert "ed25519_private" in user_data["ssh_keys"]  # the host key pinned before boot

    # The inventory lists the created instances at the addresses the API gave, marked as not real.
    inventory = cloud / run_id / "inventory"
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())["all"]["children"]
    moms = hosts["pbs_moms"]["hosts"]
    by_id = {i["InstanceId"]: i for i in instances}
    assert sorted(moms) == ["pbsc01", "pbsc02"]
    assert list(hosts["pbs_server"]["hosts"]) == ["pbsc01"]
    for host in moms.values():
        assert host["ansible_host"] == by_id[host["cloud_instance_id"]]["PublicIpAddress"]
    cloud_vars = yaml.safe_load((inventory / "group_vars" / "all" / "cloud.yml").read_text())
    assert (cloud_vars["pbs_harness_host_kind"], cloud_vars["cloud_endpoint_real"]) == ("aws", False)
    known = (inventory / ".ssh" / "known_hosts").read_text()
    assert all(m["ansible_host"] in known for m in moms.values())

    # Deploying onto it is refused before any connection (reachability.probe is a tripwire here).
    rc, out = run_cli(["deploy", "-i", str(inventory)], capsys)
    assert_refused(rc, out, errors.EXIT_PRECONDITION, "not AWS's", "never connects")

    assert_up_again_changes_nothing(client, cloud, run_id, record, capsys)

    # A second provision of the same plan by hand changes nothing either (found by tag).
    second = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "playbooks/cloud/aws/provision.yml",
         "-e", f"@{cloud / run_id / 'plan.json'}"],
        capture_output=True, text=True, check=False, env=dict(os.environ, ANSIBLE_CONFIG="ansible.cfg"),
    )  # fmt: skip
    assert second.returncode == 0, second.stdout[-3000:]
    assert "changed=0" in second.stdout, second.stdout[-3000:]
    assert "failed=0" in second.stdout, second.stdout[-3000:]
    assert tagged(client, run_id) == found

    rc, out = run_cli(["down", "--run", run_id], capsys)
    assert rc == errors.EXIT_OK, out
    assert tagged(client, run_id) == NOTHING
    assert json.loads((cloud / run_id / "run.json").read_text())["status"] == "down"


def test_a_missing_ami_is_refused_and_creates_nothing(
    cloud: Path, moto: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out = run_cli(
        ["up", "--cloud", "aws", "--region", REGION, "--image", "ami-00000000", "--provision-only", "--owner", OWNER],
        capsys,
    )
    assert_refused(rc, out, errors.EXIT_PRECONDITION, "no AMI ami-00000000 in eu-west-1")
    (run_dir,) = cloud.iterdir()
    assert tagged(ec2(moto), run_dir.name) == NOTHING


def test_a_killed_provision_is_swept_and_sweep_spares_what_is_not_ours(
    cloud: Path, moto: str, capsys: pytest.CaptureFixture[str]
) -> None:
    client = ec2(moto)
    # Not ours: an untagged instance, and an expired run of another owner.
    untagged = client.run_instances(ImageId=IMAGE, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    other_tags = [
        {"Key": "pbs-harness-run", "Value": "other-run-1"},
        {"Key": "pbs-harness-owner", "Value": "someone@else"},
        {"Key": "pbs-harness-expires", "Value": "2020-01-01T00:00:00Z"},
    ]
    other = client.run_instances(
        ImageId=IMAGE, MinCount=1, MaxCount=1, TagSpecifications=[{"ResourceType": "instance", "Tags": other_tags}]
    )["Instances"][0]["InstanceId"]

    # `up` killed outright (SIGKILL, it and its playbook) once its first instance exists.
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "pbs-harness"), "up", "--cloud", "aws", "--region", REGION, "--image", IMAGE,
         "--provision-only", "--owner", OWNER, "--hosts", "3", "--name-prefix", "pbsk"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 600
    run_id = ""
    while time.monotonic() < deadline:
        runs = [d.name for d in cloud.iterdir()] if cloud.exists() else []
        run_id = runs[0] if runs else ""
        if run_id and tagged(client, run_id)["instances"]:
            break
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        time.sleep(0.5)  # polling the API for the first instance: bounded by the deadline above
    else:
        pytest.fail("no instance appeared within 600 s")
    kill_tree(proc)  # killed outright, the whole tree: what is tagged now stays as it is
    left = tagged(client, run_id)
    assert left["instances"], "the run was killed after creating something"
    assert json.loads((cloud / run_id / "run.json").read_text())["status"] == "provisioning"

    rc, out = run_cli(["sweep", "--region", REGION, "--owner", OWNER, "--dry-run"], capsys)
    assert rc == errors.EXIT_OK, out
    assert run_id in out, out
    assert "was killed" in out, out
    assert "nothing removed" in out, out
    assert tagged(client, run_id) == left
    rc, out = run_cli(["sweep", "--region", REGION, "--owner", OWNER], capsys)
    assert rc == errors.EXIT_OK, out
    assert tagged(client, run_id) == NOTHING
    states = {
        i["InstanceId"]: i["State"]["Name"]
        for r in client.describe_instances(InstanceIds=[untagged, other])["Reservations"]
        for i in r["Instances"]
    }
    assert states == {untagged: "running", other: "running"}, "sweep touched what is not ours"
    client.terminate_instances(InstanceIds=[untagged, other])
