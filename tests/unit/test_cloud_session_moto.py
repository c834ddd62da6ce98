"""A whole run on cloud hosts (`test --cloud`: pbs_harness.hosts.cloud.lifecycle.session) is always removed: after a
pass, a failure, Ctrl-C, SIGTERM (a second one during the teardown ignored), and, when killed outright, by
`sweep`. The real provision and teardown playbooks and amazon.aws modules run against moto's EC2 on 127.0.0.1.

FAKED: the EC2 API (moto, fake credentials), and the run's work: where `test --cloud` deploys, verifies and runs
the suites over SSH, these tests give the session a function that connects nowhere (moto's addresses are fake:
nothing may connect to them; reachability.probe is a tripwire) and passes, fails, raises, or waits to be
signalled. What it proves: what the session does around its work, with the resources a real provision leaves
(tags, record, teardown by tag, sweep of a killed run). What it does not: a deploy or a suite on a VM.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from pbs_harness.common import errors
from pbs_harness.hosts.cloud import lifecycle, records, request
from tests.unit.badinput import run_cli
from tests.unit.cloudmoto import start_child
from tests.unit.test_cloud_moto import IMAGE, NOTHING, OWNER, REGION, ec2, freeze_tree, tagged


def _request(moto_url: str, keep: bool = False) -> request.CloudRequest:
    # provision_only: at a stand-in endpoint the kind refuses any request that may lead to SSH; the session's
    # work here connects nowhere.
    return request.CloudRequest(
        cloud="aws", region=REGION, hosts=2, instance_type="t3.medium", image=IMAGE, ttl=request.parse_ttl("1h"),
        name_prefix="pbss", owner=OWNER, ssh_from="0.0.0.0/0", endpoint_url=moto_url, keep_on_failure=keep,
        provision_only=True,
    )  # fmt: skip


def test_a_run_is_removed_after_a_pass_and_after_ctrl_c(cloud: Path, moto: str) -> None:
    client = ec2(moto)
    seen: dict[str, object] = {}

    def passes(rec: records.RunRecord) -> int:
        seen["during"] = tagged(client, rec.run_id)
        seen["status"] = records.load(rec.dir).status
        return errors.EXIT_OK

    said: list[str] = []
    req = _request(moto)
    assert lifecycle.session(req, cloud, said.append, passes) == errors.EXIT_OK
    during = seen["during"]
    assert isinstance(during, dict)
    assert len(during["instances"]) == 2, during
    assert seen["status"] == "testing"  # owned by this process while it works: a kill leaves it to sweep
    assert tagged(client, req.run_id) == NOTHING
    assert records.find(cloud, req.run_id).status == "down"

    def interrupted(_rec: records.RunRecord) -> int:
        raise KeyboardInterrupt

    req = _request(moto)
    with pytest.raises(KeyboardInterrupt):
        lifecycle.session(req, cloud, said.append, interrupted)
    assert tagged(client, req.run_id) == NOTHING
    assert records.find(cloud, req.run_id).status == "down"


def test_a_failed_run_is_removed_unless_kept_and_then_says_how(
    cloud: Path, moto: str, capsys: pytest.CaptureFixture[str]
) -> None:
    client = ec2(moto)
    said: list[str] = []
    req = _request(moto, keep=True)
    assert lifecycle.session(req, cloud, said.append, lambda _rec: errors.EXIT_FAILED) == errors.EXIT_FAILED
    assert len(tagged(client, req.run_id)["instances"]) == 2
    assert records.find(cloud, req.run_id).status == "kept"
    hint = next(line for line in said if "--keep-on-failure" in line)
    assert f"pbs-harness down --run {req.run_id}" in hint, said
    rc, out = run_cli(["down", "--run", req.run_id], capsys)
    assert rc == errors.EXIT_OK, out
    assert tagged(client, req.run_id) == NOTHING

    req = _request(moto)
    assert lifecycle.session(req, cloud, said.append, lambda _rec: errors.EXIT_FAILED) == errors.EXIT_FAILED
    assert tagged(client, req.run_id) == NOTHING
    assert records.find(cloud, req.run_id).status == "down"


# The child: a session whose work says its run id, then waits to be signalled; SIGTERM as the CLI takes it
# (pbs_harness.cli._terminate: raised as KeyboardInterrupt, so every `finally` runs).
CHILD = """
import signal, sys, time
from pathlib import Path
from pbs_harness import cli
from pbs_harness.hosts.cloud import lifecycle, request
signal.signal(signal.SIGTERM, cli._terminate)
req = request.CloudRequest(
    cloud="aws", region=sys.argv[1], hosts=2, instance_type="t3.medium", image=sys.argv[2],
    ttl=request.parse_ttl("1h"), name_prefix="pbsk", owner=sys.argv[3], ssh_from="0.0.0.0/0",
    endpoint_url=sys.argv[4], provision_only=True)
def work(rec):
    print("WORKING", rec.run_id, flush=True)
    time.sleep(900)
    return 0
try:
    sys.exit(lifecycle.session(req, Path(sys.argv[5]), lambda line: print(line, flush=True), work))
except KeyboardInterrupt:
    print("INTERRUPTED", flush=True)
    sys.exit(130)
"""


def _child(moto_url: str, state_root: Path) -> tuple[subprocess.Popen[str], str]:
    """The child, once its run exists and it works on it; its run id."""
    return start_child(CHILD, "WORKING", REGION, IMAGE, OWNER, moto_url, str(state_root))


def test_sigterm_during_the_work_removes_the_run_and_a_second_one_does_not_stop_the_teardown(
    cloud: Path, moto: str
) -> None:
    client = ec2(moto)
    proc, run_id = _child(moto, cloud)
    try:
        assert len(tagged(client, run_id)["instances"]) == 2
        proc.send_signal(signal.SIGTERM)
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith(f"removing cloud run {run_id}"):
                proc.send_signal(signal.SIGTERM)  # a CI runner's second signal, while the teardown runs
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = "".join(lines)
    assert proc.returncode == 130, out
    assert "signal 15 ignored: tearing down cloud run" in out, out
    assert f"cloud run {run_id}: nothing tagged with it is left" in out, out
    assert tagged(client, run_id) == NOTHING
    assert json.loads((cloud / run_id / "run.json").read_text())["status"] == "down"


def test_a_run_killed_while_it_tests_is_swept(cloud: Path, moto: str, capsys: pytest.CaptureFixture[str]) -> None:
    client = ec2(moto)
    proc, run_id = _child(moto, cloud)
    tree = freeze_tree(proc.pid)  # no `finally` runs: the whole tree SIGKILLed at once
    for pid in tree:
        os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=30)
    left = tagged(client, run_id)
    assert len(left["instances"]) == 2
    assert json.loads((cloud / run_id / "run.json").read_text())["status"] == "testing"
    rc, out = run_cli(["sweep", "--region", REGION, "--owner", OWNER], capsys)
    assert rc == errors.EXIT_OK, out
    assert f"its controller was killed while testing (pid {proc.pid} gone)" in out, out
    assert tagged(client, run_id) == NOTHING


def test_test_cloud_at_a_stand_in_endpoint_is_refused_before_any_api_call(
    cloud: Path, moto: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`test --cloud` deploys and tests over SSH: at moto (fake addresses) it is refused, nothing created."""
    rc, out = run_cli(["test", "--cloud", "aws", "--region", REGION, "--image", IMAGE, "--owner", OWNER], capsys)
    assert rc == errors.EXIT_USAGE, out
    assert "not AWS's" in out, out
    assert "up --cloud aws --provision-only" in out, out
    assert not cloud.exists() or not any(cloud.iterdir())
    instances = ec2(moto).describe_instances(Filters=[{"Name": "tag:pbs-harness-owner", "Values": [OWNER]}])
    assert [i for r in instances["Reservations"] for i in r["Instances"] if i["State"]["Name"] != "terminated"] == []
