"""library/pbsh_ec2_power.py (the aws kind's crash and reboot) run in this process against moto's in-process EC2.

FAKED: the EC2 API (moto's mock_aws, fake credentials); exit_json/fail_json raise instead of exiting. What it
proves: the crash is StopInstances with Force=true (the request's own parameters, read from botocore's event
hook) and returns once the instance is stopped; a stopped instance is left alone (changed=false); a reboot is
RebootInstances; a terminated instance is refused by name. What it does not prove: that AWS really skips the
guest's shutdown on Force (moto boots nothing), nor how long a real stop or reboot takes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from tests.unit.ansible_module import ModuleExit, ModuleFailed, load

REGION = "eu-west-1"


@pytest.fixture
def ec2(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    import boto3
    from moto import mock_aws

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield boto3.client("ec2", region_name=REGION)


def run(args: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """The module's result and the EC2 requests it made (operation, parameters)."""
    module = load("pbsh_ec2_power")
    calls: list[tuple[str, dict[str, Any]]] = []
    original = module.AnsibleAWSModule.client

    def client(self: Any, service: str, *a: Any, **k: Any) -> Any:
        made = original(self, service, *a, **k)

        def record(params: dict[str, Any], model: Any, **_: Any) -> None:
            calls.append((model.name, dict(params)))

        made.meta.events.register("provide-client-params.ec2.*", record)
        return made

    def done(_self: Any, **result: Any) -> None:
        raise ModuleExit(result)

    def failed(_self: Any, **result: Any) -> None:
        raise ModuleFailed(result)

    with (
        patch_module_args({"region": REGION, **args}),
        mock.patch.object(module.AnsibleAWSModule, "client", client),
        mock.patch.object(AnsibleModule, "exit_json", done),
        mock.patch.object(AnsibleModule, "fail_json", failed),
    ):
        try:
            module.main()
        except ModuleExit as exc:
            return exc.result, calls
    raise AssertionError("the module neither exited nor failed")


def instance(ec2: Any) -> str:
    return ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]


def state(ec2: Any, iid: str) -> str:
    return ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]["State"]["Name"]


def test_the_crash_is_a_forced_stop_and_returns_once_stopped(ec2: Any) -> None:
    iid = instance(ec2)
    result, calls = run({"instance_id": iid, "action": "force_stopped"})
    assert (result["changed"], result["state"]) == (True, "stopped")
    assert ("StopInstances", {"InstanceIds": [iid], "Force": True}) in calls
    assert state(ec2, iid) == "stopped"
    # Again: already stopped, nothing is asked of EC2 but a describe.
    result, calls = run({"instance_id": iid, "action": "force_stopped"})
    assert (result["changed"], result["state"]) == (False, "stopped")
    assert [op for op, _ in calls] == ["DescribeInstances"]


def test_a_reboot_is_ec2s_reboot_not_a_stop_and_start(ec2: Any) -> None:
    iid = instance(ec2)
    result, calls = run({"instance_id": iid, "action": "rebooted"})
    assert (result["changed"], result["state"]) == (True, "running")
    ops = [op for op, _ in calls]
    assert "RebootInstances" in ops
    assert "StopInstances" not in ops
    assert "StartInstances" not in ops


def test_a_terminated_instance_is_refused_by_name(ec2: Any) -> None:
    iid = instance(ec2)
    ec2.terminate_instances(InstanceIds=[iid])
    with pytest.raises(ModuleFailed, match=rf"{iid} is terminated: only a running instance can be crashed"):
        run({"instance_id": iid, "action": "force_stopped"})
