"""PBS status reads: JSON parsed once; a cut output is an error (the transport waits for EOF, so
a cut output means a transport bug that must show), a failing status is {} or CommandError."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pbs_harness.pbs.jobs import Jobs
from pbs_harness.pbs.nodes import Nodes
from pbs_harness.remote.transport import CommandError, CommandResult

FULL = json.dumps({"nodes": {"pbsh02": {"state": "maintenance", "maintenance_jobs": "1.pbsh01"}}})


@dataclass
class ScriptedHost:
    """Returns the scripted (rc, stdout) answers in order, then repeats the last one."""

    answers: list[tuple[int, str]]
    name: str = "pbsh01"
    calls: list[str] = field(default_factory=list)

    def run(self, cmd, *, user=None, timeout=120, stdin=None) -> CommandResult:
        self.calls.append(cmd)
        rc, out = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return CommandResult(self.name, cmd, rc, out, "")


@dataclass
class FakeCluster:
    client: ScriptedHost
    prefix: Path = Path("/opt/pbs")


def test_cut_output_is_an_error_not_a_retry() -> None:
    host = ScriptedHost([(0, FULL[:40]), (0, FULL)])
    with pytest.raises(json.JSONDecodeError):
        Nodes(FakeCluster(host)).all()  # type: ignore[arg-type]
    assert len(host.calls) == 1


def test_whole_output_is_parsed() -> None:
    host = ScriptedHost([(0, FULL)])
    assert Nodes(FakeCluster(host)).all()["pbsh02"]["maintenance_jobs"] == "1.pbsh01"  # type: ignore[arg-type]


def test_failing_status_is_not_retried() -> None:
    host = ScriptedHost([(153, "")])
    assert Jobs(FakeCluster(host)).status("9.pbsh01") == {}  # type: ignore[arg-type]
    assert len(host.calls) == 1
    with pytest.raises(CommandError):
        Nodes(FakeCluster(host)).all()  # type: ignore[arg-type]
