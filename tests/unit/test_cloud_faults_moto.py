"""The aws kind's faults through the fault layer (Nemesis -> faults.host_of -> the registry of host kinds ->
AwsHost -> playbooks/cloud/aws/instance.yml -> amazon.aws and library/pbsh_ec2_power.py), against moto's EC2
on 127.0.0.1, on the instances of a real `up --cloud aws --provision-only`.

FAKED: the EC2 API (moto, fake credentials), and the SSH side of the run's hosts: a connection object that
records the commands it is given and connects nowhere (moto's addresses are fake; reachability.probe is a
tripwire). What it proves: the fault layer finds the aws kind in the registry from the written inventory; a
crash is a forced stop (the instance is stopped), a partition swaps the instance's security groups AND sets
the iptables chain over SSH (EC2 keeps tracked connections open across a group swap), each heal undoes it, and
boot starts the instance then refuses to wait for a stand-in's address; the fault log names each mechanism.
What it does not: that a real VM loses its processes, that PBS sees the host go, or how long EC2 takes.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from pbs_harness.common import errors
from pbs_harness.suite.faults import Nemesis
from tests.unit.test_cloud_moto import ec2, up


class RecordingConnection:
    """A host's SSH connection that records commands and connects nowhere."""

    def __init__(self) -> None:
        self.commands: list[str] = []
        self.closed = 0

    def _ok(self, command: Any, stdout: str = "") -> SimpleNamespace:
        self.commands.append(command if isinstance(command, str) else " ".join(command))
        return SimpleNamespace(ok=True, stdout=stdout, stderr="", rc=0)

    def run(self, command: Any, timeout: float = 120) -> SimpleNamespace:
        return self._ok(command)

    def check(self, command: Any, timeout: float = 120) -> SimpleNamespace:
        return self._ok(command)

    def run_as_login(self, command: str) -> SimpleNamespace:
        return self._ok(command, "192.0.2.10 50000 192.0.2.20 22")  # documentation addresses: never used

    def close(self) -> None:
        self.closed += 1


def _cluster(inventory: Path) -> SimpleNamespace:
    """The run's hosts as the fault layer reads them: each host's variables merged with group_vars/all."""
    group = yaml.safe_load((inventory / "group_vars" / "all" / "cloud.yml").read_text())
    moms = yaml.safe_load((inventory / "hosts.yml").read_text())["all"]["children"]["pbs_moms"]["hosts"]
    hosts = {name: SimpleNamespace(vars={**group, **hv}) for name, hv in moms.items()}
    return SimpleNamespace(
        inventory=SimpleNamespace(hosts=hosts),
        hosts={name: RecordingConnection() for name in hosts},
        users=lambda: ["pbsuser"],
    )


def _instance(client: Any, iid: str) -> dict[str, Any]:
    return client.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]


def test_cloud_faults_act_through_the_ec2_api_and_heal(
    cloud: Path, moto: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, run_id = up(capsys, "--hosts", "2")
    assert rc == errors.EXIT_OK, out
    cluster = _cluster(cloud / run_id / "inventory")
    target = "pbsc02"
    hv = cluster.inventory.hosts[target].vars
    iid, home, cut = hv["cloud_instance_id"], hv["cloud_security_group"], hv["cloud_partition_group"]
    client = ec2(moto)
    nemesis = Nemesis(cluster)

    crash = nemesis.crash_host(target)
    assert type(crash.backend).__name__ == "AwsHost"
    assert _instance(client, iid)["State"]["Name"] == "stopped"
    assert cluster.hosts[target].closed == 1  # the connection to a dead host is dropped
    # boot starts it through the API, then refuses to wait for the stand-in's (fake) address.
    with pytest.raises(errors.PreconditionError, match="never connects"):
        nemesis.heal(crash)
    assert _instance(client, iid)["State"]["Name"] == "running"

    part = nemesis.partition(target)
    groups = [g["GroupId"] for g in _instance(client, iid)["SecurityGroups"]]
    assert groups == [cut]
    ssh = cluster.hosts[target].commands
    assert any("-j PBSH_PARTITION" in c and "-I INPUT 1" in c for c in ssh), ssh
    assert any("--dport 22 -j ACCEPT" in c for c in ssh), ssh  # the harness's own session is spared
    nemesis.heal(part)
    assert [g["GroupId"] for g in _instance(client, iid)["SecurityGroups"]] == [home]
    assert any("-D INPUT -j PBSH_PARTITION" in c for c in cluster.hosts[target].commands)

    reboot = nemesis.reboot_host(target)
    assert _instance(client, iid)["State"]["Name"] == "running"
    with pytest.raises(errors.PreconditionError, match="never connects"):
        nemesis.heal(reboot)

    log = nemesis.log.text()
    assert "host-crash on pbsc02" in log
    assert "via aws: EC2 StopInstances with Force through the API (no guest shutdown)" in log
    assert "via aws: security groups swapped for the run's partition group" in log
    assert "via aws: EC2 RebootInstances through the API" in log
    assert nemesis.active == []

    rc, out = run_cli_down(run_id, capsys)
    assert rc == errors.EXIT_OK, out


def run_cli_down(run_id: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from tests.unit.badinput import run_cli

    return run_cli(["down", "--run", run_id], capsys)
