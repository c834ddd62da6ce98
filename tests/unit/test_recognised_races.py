"""The suites' recognition of intermittent OpenPBS races fires only on the exact evidence.

Fakes: the Kit's log readers (lists of parsed log lines) and `pbs.jobs.status` (a dict), and
`defect_retry.met` (records the diagnosis instead of ending the test). No OpenPBS, no cluster."""

from __future__ import annotations

import re
from datetime import datetime
from types import SimpleNamespace

import pytest

from pbs_harness.evidence.logs import parse_line
from ptl_tests import reliable_startup_helpers as helpers

SINCE = datetime(2026, 11, 22, 23, 7, 0)
OBIT_SENT = "11/22/2026 23:07:09;0100;pbs_mom;Job;45.s01;Obit sent"
OBIT_RECEIVED = "11/22/2026 23:07:09;0080;Server@s01;Job;45.s01;Obit received momhop:1 serverhop:1 state:R substate:41"


class FakeLog:
    def __init__(self, *raw: str) -> None:
        self.lines = [parse_line(r) for r in raw]

    def matching(self, pattern: str, since: datetime):
        return [ln for ln in self.lines if ln.time >= since.replace(microsecond=0) and re.search(pattern, ln.raw)]


def kit(mom: FakeLog, server: FakeLog, state: str, substate: int) -> SimpleNamespace:
    status = {"job_state": state, "substate": substate}
    jobs = SimpleNamespace(status=lambda job_id: status)
    return SimpleNamespace(mom=mom, server_log=server, since=SINCE, pbs=SimpleNamespace(jobs=jobs))


@pytest.fixture
def met(monkeypatch) -> list[str]:
    seen: list[str] = []
    monkeypatch.setattr(helpers.defect_retry, "met", lambda request, diagnosis: seen.append(diagnosis))
    return seen


def test_lost_obit_recognised_on_its_evidence(met) -> None:
    helpers.met_lost_obit(kit(FakeLog(OBIT_SENT), FakeLog(), "R", helpers.PRERUN), None, "45.s01")
    (diagnosis,) = met
    assert diagnosis.startswith(helpers.LOST_OBIT)
    assert OBIT_SENT in diagnosis


@pytest.mark.parametrize(
    ("mom", "server", "state", "substate"),
    [
        pytest.param((OBIT_SENT,), (OBIT_RECEIVED,), "R", 41, id="the server received it"),
        pytest.param((), (), "R", 41, id="no obit sent"),
        pytest.param((OBIT_SENT,), (), "Q", 10, id="the job moved on"),
        pytest.param((OBIT_SENT,), (), "R", 42, id="the job runs"),
    ],
)
def test_lost_obit_not_recognised_otherwise(met, mom, server, state, substate) -> None:
    helpers.met_lost_obit(kit(FakeLog(*mom), FakeLog(*server), state, substate), None, "45.s01")
    assert met == []
