"""check=True on the client's qmgr, set and qsig: a refused command raises CommandError with its
result; without it the result comes back as it is (no remote hosts: a scripted fake)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pbs_harness.pbs.jobs import Jobs
from pbs_harness.pbs.server import Server
from pbs_harness.remote.transport import CommandError, CommandResult


@dataclass
class RefusingHost:
    """Every command exits `rc` with a qmgr-like complaint on stderr; the lines run are logged."""

    rc: int
    name: str = "client"
    log: list[str] = field(default_factory=list)

    def run(self, cmd, *, user=None, timeout=120, stdin=None) -> CommandResult:
        text = cmd if isinstance(cmd, str) else " ".join(cmd)
        self.log.append(text)
        return CommandResult(self.name, text, self.rc, "", "qmgr obj=n1 svr=default: Unknown node" if self.rc else "")


@dataclass
class FakeCluster:
    client: RefusingHost
    prefix: Path = Path("/opt/pbs")


def server(rc: int) -> tuple[Server, RefusingHost]:
    host = RefusingHost(rc)
    return Server(FakeCluster(host), host), host  # type: ignore[arg-type]


def test_unchecked_calls_hand_back_the_failed_result() -> None:
    srv, host = server(rc=1)
    assert not srv.qmgr("set node n1 state=offline").ok
    assert not srv.set({"priority": 100}, obj="node", name="n1").ok
    assert not Jobs(FakeCluster(host), host).signal("1.s", "admin-suspend").ok  # type: ignore[arg-type]
    assert host.log == [
        "/opt/pbs/bin/qmgr -c 'set node n1 state=offline'",
        "/opt/pbs/bin/qmgr -c 'set node n1 priority=100'",
        "/opt/pbs/bin/qsig -s admin-suspend 1.s",
    ]


@pytest.mark.parametrize(
    "call",
    [
        lambda srv, jobs: srv.qmgr("set node n1 state=offline", check=True),
        lambda srv, jobs: srv.set({"priority": 100}, obj="node", name="n1", check=True),
        lambda srv, jobs: jobs.signal("1.s", "admin-suspend", check=True),
    ],
    ids=["qmgr", "set", "signal"],
)
def test_checked_calls_raise_with_the_result(call) -> None:
    srv, host = server(rc=1)
    with pytest.raises(CommandError, match="Unknown node") as err:
        call(srv, Jobs(FakeCluster(host), host))  # type: ignore[arg-type]
    assert err.value.result.rc == 1


def test_checked_calls_return_the_result_when_it_succeeds() -> None:
    srv, host = server(rc=0)
    assert srv.set({"scheduling": True}, check=True).ok
    assert host.log == ["/opt/pbs/bin/qmgr -c 'set server scheduling=True'"]
