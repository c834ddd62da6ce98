"""Server.stop waits for the old daemon to exit (no remote hosts: a scripted fake)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pbs_harness.pbs.server import Server
from pbs_harness.transport import CommandResult
from pbs_harness.waits import WaitTimeout


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
