"""Server.stop waits for the old daemon to exit; Server.restart waits for the vnodes to report (no
remote hosts: a scripted fake)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pbs_harness.common.waits import WaitTimeout
from pbs_harness.pbs.nodes import nodes_up
from pbs_harness.pbs.server import Server
from pbs_harness.remote.transport import CommandError, CommandResult


@dataclass
class ScriptedHost:
    """Answers pgrep with the next scripted exit code; every other command succeeds."""

    name: str = "srv"
    pgrep_rcs: list[int] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def run(self, cmd, *, user=None, timeout=120, stdin=None) -> CommandResult:
        text = cmd if isinstance(cmd, str) else " ".join(cmd)
        self.log.append(text)
        rc = self.pgrep_rcs.pop(0) if text.startswith("pgrep") else 0
        return CommandResult(self.name, text, rc, "", "")


@dataclass
class FakeCluster:
    server: ScriptedHost
    client: ScriptedHost
    prefix: Path = Path("/opt/pbs")


def test_stop_waits_until_pbs_server_has_exited() -> None:
    host = ScriptedHost(pgrep_rcs=[0, 0, 1])
    res = Server(FakeCluster(host, host), host).stop(timeout=10)  # type: ignore[arg-type]
    assert res.ok
    assert host.log[0] == "/opt/pbs/bin/qterm -t quick"
    assert host.log[1:] == ["pgrep -x pbs_server.bin"] * 3


def test_stop_times_out_when_the_daemon_never_exits() -> None:
    host = ScriptedHost(pgrep_rcs=[0] * 1000)
    with pytest.raises(WaitTimeout, match=r"pbs_server\.bin exited"):
        Server(FakeCluster(host, host), host).stop(timeout=0.5)  # type: ignore[arg-type]


@dataclass
class RestartHost(ScriptedHost):
    """pgrep: the old daemon is gone at once; pbsnodes: the scripted answers in turn (the last repeats)."""

    pbsnodes: list[dict] = field(default_factory=list)
    qterm_rc: int = 0

    def run(self, cmd, *, user=None, timeout=120, stdin=None) -> CommandResult:
        text = cmd if isinstance(cmd, str) else " ".join(cmd)
        self.log.append(text)
        if text.startswith("pgrep"):
            return CommandResult(self.name, text, 1, "", "")
        if "qterm" in text:
            return CommandResult(self.name, text, self.qterm_rc, "", "" if self.qterm_rc == 0 else "no server")
        if "pbsnodes" in text:
            nodes = self.pbsnodes.pop(0) if len(self.pbsnodes) > 1 else self.pbsnodes[0]
            return CommandResult(self.name, text, 0, json.dumps({"nodes": nodes}), "")
        return CommandResult(self.name, text, 0, "", "")

    def check(self, cmd, **kwargs) -> CommandResult:
        res = self.run(cmd, **kwargs)
        assert res.ok, res
        return res


DOWN = {"n1": {"state": "free"}, "n2": {"state": "down,offline"}}
UNKNOWN = {"n1": {"state": "state-unknown,down"}, "n2": {"state": "free"}}
UP = {"n1": {"state": "free"}, "n2": {"state": "job-busy"}}


def test_restart_waits_until_every_vnode_reported_and_returns_them() -> None:
    host = RestartHost(pbsnodes=[{}, UNKNOWN, DOWN, UP])
    nodes = Server(FakeCluster(host, host), host).restart(timeout=10)  # type: ignore[arg-type]
    assert nodes == UP
    assert host.log[:3] == ["/opt/pbs/bin/qterm -t quick", "pgrep -x pbs_server.bin", "/opt/pbs/sbin/pbs_server"]
    assert host.log.count("/opt/pbs/bin/pbsnodes -av -F json") == 4
    assert not any("qmgr" in line for line in host.log)


def test_restart_immediate_then_a_scheduling_cycle() -> None:
    host = RestartHost(pbsnodes=[UP])
    Server(FakeCluster(host, host), host).restart("immediate", timeout=10, schedule=True)  # type: ignore[arg-type]
    assert host.log[0] == "/opt/pbs/bin/qterm -t immediate"
    assert host.log[-1] == "/opt/pbs/bin/qmgr -c 'set server scheduling=True'"


def test_restart_stops_at_a_refused_qterm() -> None:
    host = RestartHost(pbsnodes=[UP], qterm_rc=1)
    with pytest.raises(CommandError, match="no server"):
        Server(FakeCluster(host, host), host).restart(timeout=10)  # type: ignore[arg-type]
    assert host.log == ["/opt/pbs/bin/qterm -t quick"]  # nothing started


def test_restart_times_out_while_a_vnode_stays_down() -> None:
    host = RestartHost(pbsnodes=[DOWN])
    with pytest.raises(WaitTimeout, match="every vnode reported"):
        Server(FakeCluster(host, host), host).restart(timeout=0.5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("nodes", "up"),
    [({}, False), (UP, True), (DOWN, False), (UNKNOWN, False), ({"n1": {"state": "offline"}}, True)],
    ids=["none", "up", "down", "state-unknown", "offline"],
)
def test_nodes_up(nodes: dict, up: bool) -> None:
    assert nodes_up(nodes) is up
