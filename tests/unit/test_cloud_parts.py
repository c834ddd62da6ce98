"""The cloud run's parts with no cloud at all: request checks (TTL, sizes, owner), the sweep's choice
of runs, the kind's endpoint rule and its refusal to connect to a stand-in's addresses, and bad
input on the command line refused before any API call. FAKED: nothing but `deploy.run_playbook`,
replaced by a tripwire: a refused command never reaches a playbook, so no API call is made."""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path

import pytest

from pbs_harness import hosts
from pbs_harness.common import errors
from pbs_harness.deploy import playbook as deploy
from pbs_harness.hosts.aws import AwsHost, endpoint_is_real
from pbs_harness.hosts.cloud import lifecycle, records
from pbs_harness.hosts.cloud.request import parse_duration, parse_ttl
from tests.unit.badinput import assert_refused, run_cli, tripwire

NOW = dt.datetime(2026, 11, 28, 3, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(("text", "minutes"), [("2h", 120), ("90m", 90), ("1h30m", 90), ("72h", 4320)])
def test_ttl_parses_hours_and_minutes(text: str, minutes: int) -> None:
    assert parse_ttl(text) == dt.timedelta(minutes=minutes)


@pytest.mark.parametrize("text", ["", "2", "2d", "h", "1.5h", "-1h", "2h 5m"])
def test_a_ttl_that_does_not_parse_is_a_usage_error(text: str) -> None:
    with pytest.raises(errors.UsageError, match="does not parse"):
        parse_duration(text, "--ttl")


@pytest.mark.parametrize("text", ["5m", "73h"])
def test_a_ttl_out_of_range_is_refused(text: str) -> None:
    with pytest.raises(errors.UsageError, match="out of range"):
        parse_ttl(text)


def test_only_aws_own_endpoints_are_real() -> None:
    assert endpoint_is_real("")
    assert endpoint_is_real("https://ec2.eu-west-1.amazonaws.com")
    assert not endpoint_is_real("http://127.0.0.1:5000")
    assert not endpoint_is_real("http://amazonaws.com.example.org")


def test_the_kind_refuses_to_probe_hosts_of_a_stand_in_endpoint() -> None:
    with pytest.raises(errors.PreconditionError, match="never connects"):
        AwsHost.check_network({"cloud_run_id": "r1", "cloud_endpoint_real": False})
    with pytest.raises(errors.PreconditionError):
        AwsHost.check_network({})  # no flag at all: not known to be real, so refused
    AwsHost.check_network({"cloud_endpoint_real": True})


def _run(expires: dt.datetime | None, created: dt.datetime | None = None) -> lifecycle.TaggedRun:
    return lifecycle.TaggedRun("pbsc-run-1", created or NOW - dt.timedelta(hours=1), expires, ("i-1",))


def _rec(status: str, pid: int = 1) -> records.RunRecord:
    return records.RunRecord("pbsc-run-1", "aws", "eu-west-1", "", "me@here", "", "", status=status, pid=pid)


def test_sweep_keeps_a_live_run_and_removes_gone_or_expired_ones() -> None:
    live = _run(NOW + dt.timedelta(hours=1))
    assert lifecycle.why_remove(live, _rec("up"), NOW, None) is None
    assert lifecycle.why_remove(_run(NOW - dt.timedelta(minutes=1)), _rec("up"), NOW, None) == "expired"
    assert lifecycle.why_remove(live, None, NOW, None) == "no record of the run on this machine"
    # Another owner's (a CI repository's) live run without a record here is not gone: only expiry removes it.
    assert lifecycle.why_remove(live, None, NOW, None, records_here=False) is None
    assert lifecycle.why_remove(_run(NOW), None, NOW, None, records_here=False) == "expired"
    assert lifecycle.why_remove(live, _rec("failed"), NOW, None) == "its run ended (failed)"
    assert lifecycle.why_remove(live, _rec("up"), NOW, dt.timedelta(minutes=30)) == "older than 0:30:00"
    assert lifecycle.why_remove(live, _rec("up"), NOW, dt.timedelta(hours=3)) is None
    assert lifecycle.why_remove(_run(None), _rec("up"), NOW, None) == "no readable expiry tag"


def test_sweep_removes_a_run_whose_up_was_killed(tmp_path: Path) -> None:
    dead = 2**22 + 12345  # above pid_max's default: no such process
    assert "was killed" in str(
        lifecycle.why_remove(_run(NOW + dt.timedelta(hours=1)), _rec("provisioning", dead), NOW, None)
    )


def test_resources_without_the_run_tag_are_never_grouped_into_a_run() -> None:
    listing = {
        "instances": [
            {"instance_id": "i-1", "tags": {"pbs-harness-run": "r-a", "pbs-harness-expires": "2026-11-28T04:00:00Z"}},
            {"instance_id": "i-2", "tags": {"Name": "someone else's"}},
        ],
        "security_groups": [{"group_id": "sg-1", "tags": {"pbs-harness-run": "r-a"}}],
        "key_pairs": [{"key_name": "k", "tags": {}}],
    }
    (run,) = lifecycle.group_by_run(listing)
    assert (run.run_id, run.resources, run.expires) == ("r-a", ("i-1", "sg-1"), NOW + dt.timedelta(hours=1))


@pytest.fixture
def no_api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Every playbook (so every API call) is a tripwire; fake credentials; the state root in tmp_path."""

    def tripwire(*_a: object, **_k: object) -> None:
        raise AssertionError("the refused command ran a playbook (an API call)")

    monkeypatch.setattr(deploy, "run_playbook", tripwire)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_EC2", raising=False)
    monkeypatch.setenv(records.ROOT_ENV, str(tmp_path / "cloud"))
    return tmp_path / "cloud"


UP = ["up", "--cloud", "aws", "--region", "eu-west-1", "--provision-only"]
TEST = ["test", "--cloud", "aws", "--region", "eu-west-1"]


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (
            ["up", "--cloud", "aws", "--region", "mars-north-1"],
            errors.EXIT_USAGE,
            "'mars-north-1' is not an AWS region",
        ),
        ([*UP, "--hosts", "0"], errors.EXIT_USAGE, "argument --hosts: 0 is out of range"),
        ([*UP, "--ttl", "two hours"], errors.EXIT_USAGE, "--ttl 'two hours' does not parse"),
        ([*UP, "--ttl", "5m"], errors.EXIT_USAGE, "--ttl 5m is out of range"),
        ([*UP, "--image", "ami-xyz"], errors.EXIT_USAGE, "'ami-xyz' is neither an AMI id"),
        ([*UP, "--instance-type", "huge"], errors.EXIT_USAGE, "'huge' is not an EC2 instance type"),
        (["up", "--cloud", "gcp", "--region", "x"], errors.EXIT_USAGE, "--cloud 'gcp' is not a cloud"),
        (["up", "--image", "ami-12345678"], errors.EXIT_USAGE, "--image ami-12345678 is a cloud image"),
        (["sweep", "--region", "eu-west-1", "--older-than", "old"], errors.EXIT_USAGE, "--older-than 'old'"),
        (["down", "--run", "pbsc-none-1"], errors.EXIT_USAGE, "no record of cloud run pbsc-none-1"),
        # `test --cloud` (create, deploy, test, remove): the same checks, and its own, before any API call.
        ([*TEST[:3], "--region", "mars-north-1"], errors.EXIT_USAGE, "'mars-north-1' is not an AWS region"),
        ([*TEST, "--hosts", "0"], errors.EXIT_USAGE, "argument --hosts: 0 is out of range"),
        ([*TEST, "--ttl", "5x"], errors.EXIT_USAGE, "--ttl '5x' does not parse"),
        ([*TEST, "-i", "inventory/local"], errors.EXIT_USAGE, "--cloud creates the cluster it tests"),
        ([*TEST, "--collect-only"], errors.EXIT_USAGE, "would create VMs only to list tests"),
        ([*TEST, "--no-such-pytest-option"], errors.EXIT_USAGE, "pytest refused the command line"),
        ([*TEST, "-m", "smok"], errors.EXIT_USAGE, "smok is not a marker the suites register"),
    ],
)
def test_bad_input_is_refused_before_any_api_call(
    argv: list[str], code: int, says: str, no_api: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out = run_cli(argv, capsys)
    assert_refused(rc, out, code, says)
    assert not no_api.exists(), "nothing is saved for a refused run"


def test_no_region_is_refused(
    no_api: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    rc, out = run_cli(["up", "--cloud", "aws", "--provision-only"], capsys)
    assert_refused(rc, out, errors.EXIT_USAGE, "no region given", "--region R", "AWS_REGION or AWS_DEFAULT_REGION")
    rc, out = run_cli(["sweep"], capsys)
    assert_refused(rc, out, errors.EXIT_USAGE, "no region given", "AWS_REGION or AWS_DEFAULT_REGION")


def test_no_credentials_is_refused_without_asking_the_metadata_service(
    no_api: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # also set by the kind itself: never 169.254.169.254
    rc, out = run_cli(UP, capsys)
    assert_refused(rc, out, errors.EXIT_PRECONDITION, "no AWS credentials found", "AWS_ACCESS_KEY_ID")


def test_a_stand_in_endpoint_needs_provision_only(
    no_api: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    rc, out = run_cli(["up", "--cloud", "aws", "--region", "eu-west-1"], capsys)
    assert_refused(rc, out, errors.EXIT_USAGE, "is not AWS's", "never connects", "--provision-only")


class OtherCloud(AwsHost):
    """A second cloud kind, registered for one test: its own region variable, image ids and request check."""

    NAME = "othercloud"
    REGION_ENVS = ("OTHERCLOUD_REGION",)

    @classmethod
    def is_image_id(cls, value: str) -> bool:
        return value.startswith("img-")

    @classmethod
    def check_request(cls, req) -> None:
        raise errors.UsageError(f"othercloud judged region {req.region} image {req.image}", "nothing to fix")


def test_the_cloud_parts_come_from_the_kind_not_from_aws_names(
    no_api: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The region's variables, what an image id looks like and the default cloud of `sweep` are the registry's
    kinds' (issue #32: nothing outside the kind's module branches on "aws")."""
    monkeypatch.setitem(hosts.KINDS, OtherCloud.NAME, f"{__name__}.OtherCloud")
    monkeypatch.setenv("OTHERCLOUD_REGION", "moon-1")
    rc, out = run_cli(["up", "--cloud", "othercloud", "--image", "img-7", "--provision-only"], capsys)
    assert_refused(rc, out, errors.EXIT_USAGE, "othercloud judged region moon-1 image img-7")
    monkeypatch.delenv("OTHERCLOUD_REGION")
    rc, out = run_cli(["up", "--cloud", "othercloud", "--provision-only"], capsys)
    assert_refused(rc, out, errors.EXIT_USAGE, "no region given", "set OTHERCLOUD_REGION")
    # With two cloud kinds `sweep` cannot guess which one is meant.
    rc, out = run_cli(["sweep", "--region", "eu-west-1"], capsys)
    assert_refused(rc, out, errors.EXIT_USAGE, "no --cloud given", "aws, othercloud")


def test_no_aws_name_is_used_outside_the_aws_kind() -> None:
    """No string constant "aws", AWS_* or ami- in pbs_harness/ outside hosts/aws.py and the registry's line
    (help texts may name it; they are not constants equal to it)."""
    root = Path(__file__).resolve().parents[2] / "pbs_harness"
    allowed = {root / "hosts" / "aws.py", root / "hosts" / "__init__.py"}
    found = []
    for path in sorted(root.rglob("*.py")):
        if path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
                if text.lower() == "aws" or text.startswith(("AWS_", "ami-")):
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {text!r}")
    assert found == []


def test_deploy_verify_and_test_of_a_stand_in_run_are_refused_before_any_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """README: with the inventory of a run made at a stand-in endpoint, `deploy`, `verify` and `test -i` exit 3
    before any connection (its addresses are fake). FAKED: the inventory, as provision.yml writes it for moto."""
    from pbs_harness.remote import reachability

    inventory = tmp_path / "inventory"
    (inventory / "group_vars" / "all").mkdir(parents=True)
    (inventory / "hosts.yml").write_text(
        "all:\n  children:\n    pbs_server:\n      hosts:\n        pbsc01:\n    pbs_moms:\n      hosts:\n"
        "        pbsc01:\n          ansible_host: 54.214.0.1\n          cloud_instance_id: i-0123456789abcdef0\n"
    )
    (inventory / "group_vars" / "all" / "cloud.yml").write_text(
        "pbs_harness_host_kind: aws\ncloud_run_id: pbsc-run-1\ncloud_endpoint_url: http://127.0.0.1:9\n"
        "cloud_endpoint_real: false\n"
    )
    monkeypatch.setattr(reachability, "probe", tripwire("connect to a host"))
    monkeypatch.setattr(deploy, "run_playbook", tripwire("run a playbook"))
    for verb in (["deploy"], ["verify"], ["test", "-m", "smoke"]):
        rc, out = run_cli([verb[0], "-i", str(inventory), *verb[1:]], capsys)
        assert_refused(rc, out, errors.EXIT_PRECONDITION, "not AWS's", "never connects")
