"""Bad input through the CLI: clear message on stderr, meaningful exit code, nothing touched.

Subnet and inventory checks here feed canned `ip -j` output / listings (fakes of the system
tools), so they run on any machine and never create a namespace.
"""

import json

import pytest

from pbs_harness import cli, errors, shell
from pbs_harness.localcluster import network, preflight
from pbs_harness.localcluster.spec import ClusterSpec


def fake_ip(addrs: list, routes: list):
    def check(argv, **_: object) -> str:
        if argv[:4] == ["ip", "-j", "-4", "addr"]:
            return json.dumps(addrs)
        if argv[:4] == ["ip", "-j", "-4", "route"]:
            return json.dumps(routes)
        raise AssertionError(f"unexpected command {argv}")

    return check


def test_subnet_in_use_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    addrs = [{"ifname": "eth1", "addr_info": [{"local": "10.71.0.7", "prefixlen": 24}]}]
    monkeypatch.setattr(shell, "check", fake_ip(addrs, []))
    with pytest.raises(errors.PreconditionError, match=r"10.71.0.0/24 is already in use.*eth1") as err:
        preflight.check_subnet(ClusterSpec(), ours=False)
    assert "--subnet" in err.value.hint


def test_overlapping_route_counts_and_our_bridge_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    addrs = [{"ifname": "pbsh-br0", "addr_info": [{"local": "10.71.0.1", "prefixlen": 24}]}]
    routes = [{"dst": "10.71.0.0/16", "dev": "tun0"}, {"dst": "10.71.0.0/24", "dev": "pbsh-br0"}]
    monkeypatch.setattr(shell, "check", fake_ip(addrs, routes))
    assert network.subnet_conflicts(ClusterSpec()) == ["route 10.71.0.0/16 via tun0"]


def test_cli_bad_host_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["cluster", "up", "--hosts", "0"]) == errors.EXIT_PRECONDITION
    assert "--hosts 0 is out of range" in capsys.readouterr().err


def test_cli_missing_inventory(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["deploy", "-i", "/nonexistent/inventory"]) == errors.EXIT_PRECONDITION
    err = capsys.readouterr().err
    assert "inventory /nonexistent/inventory does not exist" in err
    assert "fix:" in err


def test_cli_usage_error_exits_2() -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["cluster", "explode"])
    assert exc.value.code == errors.EXIT_USAGE


def test_unknown_options_go_to_pytest_only_for_test(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(cli, "cmd_test", lambda args: seen.append(args.pytest_args) or 0)
    assert cli.main(["test", "-q", "-k", "smoke"]) == 0
    assert seen == [["-q", "-k", "smoke"]]
    with pytest.raises(SystemExit) as exc:
        cli.main(["deploy", "--bogus"])
    assert exc.value.code == errors.EXIT_USAGE
