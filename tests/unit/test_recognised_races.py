"""The suites' recognition of intermittent OpenPBS races fires only on the exact evidence.

Fakes: the Kit's log readers (lists of parsed log lines) and `pbs.jobs.status` (a dict), and
`defect_retry.met` (records the diagnosis instead of ending the test). No OpenPBS, no cluster."""

from __future__ import annotations

import re
from datetime import datetime
from types import SimpleNamespace

import pytest

from pbs_harness.pbs.evidence.logs import parse_line
from ptl_tests import reliable_startup_helpers as helpers

SINCE = datetime(2026, 11, 22, 23, 7, 0)
OBIT_SENT = "11/22/2026 23:07:09;0100;pbs_mom;Job;45.s01;Obit sent"
OBIT_RECEIVED = "11/22/2026 23:07:09;0080;Server@s01;Job;45.s01;Obit received momhop:1 serverhop:1 state:R substate:41"


class FakeLog:
    def __init__(self, *raw: str) -> None:
        self.lines_ = [parse_line(r) for r in raw]

    def lines(self, since: datetime):
        return [ln for ln in self.lines_ if ln.time >= since.replace(microsecond=0)]

    def matching(self, pattern: str, since: datetime):
        return [ln for ln in self.lines(since) if re.search(pattern, ln.raw)]


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


# Run 11, 22 Nov (job 182): the primary knew pbshc05's prologue failed before the launch hook ran, the
# hook's vnode_list_fail held only the begin-failed pbshc03, and release_nodes kept pbshc05.
IGNORED = "11/22/2026 23:07:01;0008;pbs_mom;Job;45.s01;ignoring error from s05 as job is tolerant of node failures"
LAUNCH = [
    "11/22/2026 23:07:02;0006;pbs_python;Hook;pbs_python;launch: found vnode_list[s01]",
    "11/22/2026 23:07:02;0006;pbs_python;Hook;pbs_python;launch: found vnode_list[s05]",
    "11/22/2026 23:07:02;0006;pbs_python;Hook;pbs_python;launch: found vnode_list_fail[s03]",
]
PRUNED_KEEPING = "11/22/2026 23:07:02;0008;pbs_mom;Job;45.s01;pruned to exec_vnode=(s01:ncpus=2)+(s05:ncpus=1)"
PRUNED_WITHOUT = "11/22/2026 23:07:02;0008;pbs_mom;Job;45.s01;pruned to exec_vnode=(s01:ncpus=2)+(s04:ncpus=1)"
KNEW = helpers.IGNORING.format(host="s05")


@pytest.mark.parametrize("pruned", [PRUNED_KEEPING, PRUNED_WITHOUT], ids=["sister kept", "sister pruned"])
def test_empty_fail_list_recognised_on_its_evidence(met, pruned) -> None:
    mom = FakeLog(IGNORED, *LAUNCH, pruned)
    helpers.met_empty_fail_list(kit(mom, FakeLog(), "R", 42), None, "45.s01", "s05", knew=KNEW)
    (diagnosis,) = met
    assert diagnosis.startswith(helpers.EMPTY_FAIL_LIST)
    assert IGNORED in diagnosis


@pytest.mark.parametrize(
    "mom",
    [
        pytest.param((*LAUNCH, IGNORED, PRUNED_KEEPING), id="the primary learnt it after the launch hook ran"),
        pytest.param(
            (IGNORED, *LAUNCH, LAUNCH[0].replace("vnode_list[s01]", "vnode_list_fail[s05]"), PRUNED_KEEPING),
            id="listed",
        ),
        pytest.param((IGNORED, PRUNED_KEEPING), id="no launch hook"),
        pytest.param((IGNORED, *LAUNCH), id="not pruned"),
        pytest.param((*LAUNCH, PRUNED_KEEPING), id="the primary never said"),
    ],
)
def test_empty_fail_list_not_recognised_otherwise(met, mom) -> None:
    helpers.met_empty_fail_list(kit(FakeLog(*mom), FakeLog(), "R", 42), None, "45.s01", "s05", knew=KNEW)
    assert met == []
