#!/usr/bin/python
"""Ansible module: the two EC2 power actions amazon.aws.ec2_instance does not offer (the aws kind's crash)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: pbsh_ec2_power
short_description: Force-stop or reboot one EC2 instance (the faults of pbs-harness's aws kind of host)
description:
  - C(amazon.aws.ec2_instance) stops an instance only the gentle way (C(state=stopped): the guest is asked
    to shut down, and EC2 forces it after its grace time) and its C(state=rebooted) is a stop followed by a
    start. A crash fault must not let the guest shut down cleanly, so this module calls the two EC2 actions
    the collection leaves out, through the collection's own client (C(AnsibleAWSModule)).
  - O(action=force_stopped) calls C(StopInstances) with C(Force=true) (no guest shutdown, no flush of its
    caches) and waits until the instance is stopped. An instance already stopped is left alone (not changed).
  - O(action=rebooted) calls C(RebootInstances) and returns at once: EC2 asks the guest to reboot and hard
    reboots it when it does not within minutes; the caller waits for the guest's SSH.
  - Returns the instance's state afterwards.
version_added: "0.1.0"
author: pbs-harness
options:
  instance_id:
    description: The instance (C(i-...)).
    type: str
    required: true
  action:
    description: What to do.
    type: str
    required: true
    choices: [force_stopped, rebooted]
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Pull the plug of one instance
  pbsh_ec2_power:
    instance_id: i-0123456789abcdef0
    action: force_stopped
    region: eu-west-1
"""

RETURN = r"""
state:
  description: The instance's state name after the action (C(stopped), C(running), ...).
  returned: always
  type: str
"""

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

try:
    from botocore.exceptions import BotoCoreError, ClientError, WaiterError
except ImportError:  # AnsibleAWSModule itself fails with the message that botocore is missing
    BotoCoreError = ClientError = WaiterError = Exception


def _state(client, instance_id: str) -> str:
    reservations = client.describe_instances(InstanceIds=[instance_id])["Reservations"]
    return reservations[0]["Instances"][0]["State"]["Name"]


def main() -> None:
    module = AnsibleAWSModule(
        argument_spec={
            "instance_id": {"type": "str", "required": True},
            "action": {"type": "str", "required": True, "choices": ["force_stopped", "rebooted"]},
        },
        supports_check_mode=True,
    )
    instance_id, action = module.params["instance_id"], module.params["action"]
    client = module.client("ec2")
    try:
        state = _state(client, instance_id)
        if action == "force_stopped":
            if state == "stopped":
                module.exit_json(changed=False, state=state)
            if state not in {"running", "stopping"}:
                module.fail_json(msg=f"{instance_id} is {state}: only a running instance can be crashed")
            if not module.check_mode:
                client.stop_instances(InstanceIds=[instance_id], Force=True)
                client.get_waiter("instance_stopped").wait(
                    InstanceIds=[instance_id], WaiterConfig={"Delay": 5, "MaxAttempts": 60}
                )
                state = _state(client, instance_id)
            module.exit_json(changed=True, state=state)
        if state != "running":
            module.fail_json(msg=f"{instance_id} is {state}: only a running instance can be rebooted")
        if not module.check_mode:
            client.reboot_instances(InstanceIds=[instance_id])
        module.exit_json(changed=True, state=_state(client, instance_id))
    except (BotoCoreError, ClientError, WaiterError) as exc:
        module.fail_json_aws(exc, msg=f"{action} of {instance_id} failed")


if __name__ == "__main__":
    main()
