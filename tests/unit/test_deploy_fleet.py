"""deploy_fleet (pbs_harness/deploy/cluster.py): the order of a fleet's deploys, and a failure's reasons in the
closing lines. deploy_cluster is faked (it records when it ran and says what a real one says); what this
proves: clusters sharing /etc never create accounts at once, and the tail of the output names why a
cluster failed (CI keeps only the tail)."""

from __future__ import annotations

import threading
import time

import pytest

from pbs_harness.common import errors
from pbs_harness.deploy import cluster as deploy
from pbs_harness.deploy.cluster import Options


@pytest.fixture
def fake_deploys(monkeypatch):
    """deploy_cluster replaced: cluster 'b' fails the way a useradd lock race does; the others pass."""
    spans: dict[str, tuple[float, float]] = {}
    lock = threading.Lock()

    def fake(inventory, options, say=print, label=""):
        start = time.monotonic()
        say("  task: openpbs_common : Users | Create or fix the accounts that differ, with fixed UIDs")
        time.sleep(0.2)
        with lock:
            spans[label] = (start, time.monotonic())
        if label == "b":
            say('  failed: [b02] (item=pbsuser1) => {"msg": "useradd: cannot lock /etc/passwd; try again later."}')
            raise errors.HarnessError("site.yml failed (rc=2) on: b02", "read reports/deploy/b/ansible-site.log")
        return errors.EXIT_OK

    monkeypatch.setattr(deploy, "deploy_cluster", fake)
    return spans


CLUSTERS = [("a", "inv-a"), ("b", "inv-b"), ("c", "inv-c")]
OPTIONS = Options(connect_timeout=10)


def test_clusters_sharing_etc_deploy_the_first_alone(fake_deploys, monkeypatch):
    monkeypatch.setattr(deploy, "shares_etc", lambda inventory: True)
    deploy.deploy_fleet(CLUSTERS, OPTIONS, print)
    first_end = fake_deploys["a"][1]
    assert all(fake_deploys[name][0] >= first_end for name in ("b", "c"))


def test_clusters_of_their_own_deploy_at_once(fake_deploys, monkeypatch):
    monkeypatch.setattr(deploy, "shares_etc", lambda inventory: False)
    deploy.deploy_fleet(CLUSTERS, OPTIONS, print)
    assert fake_deploys["b"][0] < fake_deploys["a"][1]


def test_the_closing_lines_say_why_a_cluster_failed(fake_deploys, monkeypatch, capsys):
    monkeypatch.setattr(deploy, "shares_etc", lambda inventory: False)
    rc = deploy.deploy_fleet(CLUSTERS, OPTIONS, print)
    assert rc == errors.EXIT_FAILED
    out = capsys.readouterr().out.splitlines()
    closing = next(i for i, line in enumerate(out) if "deploy failed on: b (exit 1)" in line)
    tail = "\n".join(out[closing + 1 :])
    assert "  b: failed: [b02] (item=pbsuser1)" in tail
    assert "cannot lock /etc/passwd" in tail
    assert "  b: error: site.yml failed (rc=2) on: b02" in tail


@pytest.mark.parametrize(
    "line",
    [
        "  fatal: [x01]: FAILED! => {}",
        "error: the hosts did not answer",
        "idempotence gate: x02 changed=1: openpbs_common : Names | write",
        "idempotence gate FAILED: a second deploy changed 1 host(s) (log: l)",
        "verify: checks failed (pytest rc=1)",
        "  x03 | UNREACHABLE! => {}",
    ],
)
def test_failure_lines(line):
    assert deploy.is_failure_line(line)


@pytest.mark.parametrize(
    "line",
    [
        "  task: openpbs_common : Users | Find out which accounts differ",
        "  x01  ok=3 changed=0 failed=0",
        "idempotence gate: second deploy in 30.1s, changed=0 on all 6 hosts",
        "verify: all checks passed",
    ],
)
def test_progress_lines_are_not_failures(line):
    assert not deploy.is_failure_line(line)


def test_shares_etc_reads_the_inventory(tmp_path):
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n  children:\n    pbs_server:\n      hosts:\n        x01:\n          openpbs_common_shared_etc: true\n"
        "    pbs_moms:\n      hosts:\n        x01: {}\n"
    )
    assert deploy.shares_etc(str(inv)) is True
    assert deploy.shares_etc(str(tmp_path / "absent.yml")) is False


def test_a_cluster_whose_deploy_crashed_is_a_failed_cluster(monkeypatch, capsys):
    """A deploy raising something other than a HarnessError (a bug of ours) used to leave no code, and the
    fleet said every cluster was deployed and verified."""

    def fake(inventory, options, say=print, label=""):
        if label == "b":
            raise KeyError("recap")
        return errors.EXIT_OK

    monkeypatch.setattr(deploy, "deploy_cluster", fake)
    monkeypatch.setattr(deploy, "shares_etc", lambda inventory: False)
    assert deploy.deploy_fleet(CLUSTERS, OPTIONS, print) == errors.EXIT_FAILED
    out = capsys.readouterr().out
    assert "deploy failed on: b (exit 1)" in out
    assert "  b: error: the deploy stopped on an unexpected KeyError: 'recap'" in out
    assert "deployed and verified" not in out


def test_a_long_error_keeps_its_log_path_in_the_closing_lines(monkeypatch, capsys):
    def fake(inventory, options, say=print, label=""):
        raise errors.HarnessError("site.yml failed (rc=2) on: a01: " + "x" * 600, "full output: reports/deploy/a/x.log")

    monkeypatch.setattr(deploy, "deploy_cluster", fake)
    monkeypatch.setattr(deploy, "shares_etc", lambda inventory: False)
    deploy.deploy_fleet(CLUSTERS[:1], OPTIONS, print)
    tail = capsys.readouterr().out.split("deploy failed on: a (exit 1)")[1]
    assert "  a: fix: full output: reports/deploy/a/x.log" in tail
