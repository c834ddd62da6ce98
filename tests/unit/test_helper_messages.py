"""Every helper that picks evidence fails, on purpose here, with a message naming what it expected
and what it found: never a bare AssertionError, an IndexError, a ValueError, a KeyError or a
StopIteration (issue 25). The helpers run as the suites import them, without pytest's assertion
rewriting (that is registered by ptl_tests/conftest.py, not loaded here), so what is checked is the
helpers' own messages.

FAKED: hosts whose `run` returns fixed accounting or log text (`FakeHost`), `pbs` objects built from
SimpleNamespace; the evidence they hold is shaped as OpenPBS 23.06 writes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from pbs_harness.common.waits import WaitTimeout
from pbs_harness.pbs.base import parse_json
from pbs_harness.pbs.evidence import pick
from pbs_harness.pbs.evidence.accounting import AccountingReader, parse_line
from pbs_harness.pbs.evidence.logs import LogReader
from pbs_harness.pbs.jobs import Jobs
from pbs_harness.pbs.resv import parse_rstat
from ptl_tests import jobscripts
from ptl_tests.ramp_down.assignment import Assignment, assert_job_matches, unchanged
from ptl_tests.ramp_down_helpers import TaskEnvReport
from ptl_tests.reliable_startup.jobs import assert_reach
from ptl_tests.reliable_startup_helpers import assert_assignment, chunks_of, expected_prune
from ptl_tests.resv_reconfirm_helpers import Resv, check_y, confirmations, retry_epoch

SINCE = datetime(2026, 11, 25, 10, 0, 0)
CONFIRM = (
    "11/25/2026 10:00:05;Y;R7.sh01;requestor=Scheduler@sh01 start=1795600000 end=1795600900 "
    "nodes=(sh02:ncpus=2)+(sh03:ncpus=2)"
)


@dataclass
class FakeHost:
    """FAKE RemoteHost: `run` answers every command with `text` (as `cat` of a log or accounting file)."""

    text: str
    name: str = "sh01"

    def run(self, command, **kwargs):
        return SimpleNamespace(stdout=self.text, stderr="", ok=True, rc=0)


def failure(call) -> str:
    """The message `call` fails with; anything but MissingEvidence or a messaged AssertionError fails the test."""
    with pytest.raises(AssertionError) as info:
        call()
    message = str(info.value)
    assert message.strip(), f"{call} failed with a bare {type(info.value).__name__}"
    return message


# --- pbs_harness.pbs.evidence.pick -----------------------------------------------------------------


def test_pick_names_what_was_expected_and_what_the_list_held() -> None:
    assert failure(lambda: pick.one([], "one 'e' record of 12.sh01")) == (
        "expected one 'e' record of 12.sh01 (1), found 0: nothing"
    )
    assert (
        failure(lambda: pick.exactly(["a", "b", "c"], 2, "two chunks")) == "expected two chunks (2), found 3: a; b; c"
    )
    assert failure(lambda: pick.first([], "a released sister")) == "expected a released sister, found nothing"
    assert failure(lambda: pick.last([], "a 'Y' record of R7")) == "expected a 'Y' record of R7, found nothing"
    assert failure(lambda: pick.nth(["sh01"], 1, "a sister in exec_vnode")) == (
        "expected a sister in exec_vnode (item 1), found 1: sh01"
    )
    assert failure(lambda: pick.field({"a": 1}, "after", "the job's out file")) == (
        "expected after in the job's out file, found a=1"
    )
    assert failure(lambda: pick.group(re.search("cput=(\\S+)", "mem=1kb"), 1, "cput=", "mem=1kb")) == (
        "expected cput= in 'mem=1kb'"
    )


def test_pbs_objects_name_themselves_when_an_attribute_is_missing() -> None:
    qstat = parse_json('{"Jobs": {"12.sh01": {"job_state": "Q", "Resource_List": {"ncpus": 2}}}}')
    job = qstat["Jobs"]["12.sh01"]
    assert failure(lambda: job["exec_vnode"]) == "expected exec_vnode in job 12.sh01, found job_state='Q', " + (
        "Resource_List={'ncpus': 2}"
    )
    assert failure(lambda: job["Resource_List"]["mem"]) == "expected mem in Resource_List of job 12.sh01, found ncpus=2"
    assert job.get("exec_vnode") is None  # .get and `in` work as for a dict
    nodes = parse_json('{"nodes": {"sh02": {"state": "free"}}}')
    assert failure(lambda: nodes["nodes"]["sh02"]["comment"]) == "expected comment in vnode sh02, found state='free'"
    resv = parse_rstat("Resv ID: R7.sh01\nreserve_state = RESV_DEGRADED\n")["R7.sh01"]
    assert failure(lambda: resv["resv_nodes"]) == (
        "expected resv_nodes in reservation R7.sh01 (pbs_rstat -F), found reserve_state='RESV_DEGRADED'"
    )
    record = parse_line(CONFIRM)
    assert record is not None
    assert failure(lambda: record.fields["count"]).startswith(
        f"expected count in the 'Y' record of R7.sh01 ({CONFIRM})"
    )


# --- accounting and logs -----------------------------------------------------------------------


def test_accounting_expect_names_the_records_it_wanted_and_those_it_found() -> None:
    text = "11/25/2026 10:00:09;u;12.sh01;user=u1 exec_vnode=(sh02:ncpus=2)\n"
    reader = AccountingReader(FakeHost(text), "/var/spool/pbs")
    assert failure(lambda: reader.expect("12.sh01", "uc", SINCE, timeout=0.01)) == (
        "expected accounting records 'u', 'c' of 12.sh01 in that order since 10:00:00, found: "
        "11/25/2026 10:00:09;u;12.sh01;user=u1 exec_vnode=(sh02:ncpus=2)"
    )
    two_u = text + text.replace("10:00:09", "10:00:10")
    message = failure(lambda: AccountingReader(FakeHost(two_u), "/x").expect("12.sh01", "uc", SINCE, timeout=0.01))
    assert message.count(";u;12.sh01;") == 2  # the wrong order is shown, not unpacked into u and c


def test_log_reader_absent_and_expect_say_which_line() -> None:
    line = "11/25/2026 10:00:01.000000;0100;pbs_mom;Job;12.sh01;DELETE_JOB2 received"
    mom = LogReader(FakeHost(line + "\n", "sh03"), "/var/spool/pbs", "mom")
    assert failure(lambda: mom.absent("DELETE_JOB2", SINCE)) == f"unexpected mom log line(s) on sh03: ['{line}']"
    with pytest.raises(WaitTimeout, match=r"mom log line /IM_EXEC_PROLOGUE/ on sh03"):
        mom.expect("IM_EXEC_PROLOGUE", SINCE, timeout=0.01)


# --- resv_reconfirm ------------------------------------------------------------------------------


def resv() -> Resv:
    return Resv("R7.sh01", 1795600000, 1795600900, "R7", SINCE)


def test_a_missing_reconfirmation_record_fails_naming_the_confirmation_it_found() -> None:
    cluster = SimpleNamespace(server=FakeHost(CONFIRM + "\n"), pbs_home="/var/spool/pbs")
    assert failure(lambda: confirmations(cluster, resv(), timeout=0.01)) == (
        f"expected a 'Y' record for the reconfirmation of R7.sh01, found only the confirmation at 10:00:05: {CONFIRM}"
    )
    nothing = SimpleNamespace(server=FakeHost(""), pbs_home="/var/spool/pbs")
    assert failure(lambda: confirmations(nothing, resv(), timeout=0.01)) == (
        "expected two 'Y' records of R7.sh01 since 10:00:00 (its confirmation and its reconfirmation), found 0: none"
    )


def test_a_y_record_with_other_fields_and_a_reservation_without_reserve_retry() -> None:
    record = parse_line(CONFIRM)
    message = failure(lambda: check_y(record, "sh01", resv(), "(sh02:ncpus=2)"))
    assert message.startswith("'Y' record of R7.sh01: expected fields {'requestor': 'Scheduler@sh01', ")
    assert CONFIRM in message
    status = parse_rstat("Resv ID: R7.sh01\nreserve_state = RESV_CONFIRMED\n")["R7.sh01"]
    assert failure(lambda: retry_epoch(status)) == (
        "expected reserve_retry in the reservation's pbs_rstat -F, found reserve_state='RESV_CONFIRMED'"
    )


# --- reliable_startup ----------------------------------------------------------------------------

NAMES = {"sh01": "sh01", "sh02": "sh02", "sh03": "sh03"}
REPORT = """== nodefile
sh01
sh02
== pbsdsh
0 rc=0
== tmrsh
sh01 rc=0
sh02 rc=0
sh03 rc=1 pbs_tmrsh: host "sh03" is not a node in job <12.sh01>
== tasks
pbsdsh-0 sh01
tmrsh-sh01 sh01
tmrsh-sh02 sh02
== end
"""


def test_assert_reach_says_what_the_job_reached() -> None:
    assert failure(lambda: assert_reach(REPORT, "12.sh01", ["sh01"], NAMES)) == (
        "$PBS_NODEFILE of 12.sh01: expected the kept hosts ['sh01'], found ['sh01', 'sh02']"
    )
    assert failure(
        lambda: assert_reach(REPORT.replace("sh03 rc=1", "sh04 rc=1"), "12.sh01", ["sh01", "sh02"], NAMES)
    ) == (
        "expected sh03 in the job's '== tmrsh' section (pbs_tmrsh sh03), found sh01='rc=0', sh02='rc=0', "
        "sh04='rc=1 pbs_tmrsh: host \"sh03\" is not a node in job <12.sh01>'"
    )
    released_reached = REPORT.replace('sh03 rc=1 pbs_tmrsh: host "sh03" is not a node in job <12.sh01>', "sh03 rc=0")
    assert failure(lambda: assert_reach(released_reached, "12.sh01", ["sh01", "sh02"], NAMES)) == (
        "pbs_tmrsh sh03 (released): expected 'host \"sh03\" is not a node in job <12.sh01>', found 'rc=0'"
    )


def test_a_report_without_its_section() -> None:
    assert failure(lambda: jobscripts.section("== nodefile\nsh01\n", "tasks")) == (
        "expected a '== tasks' section in the job's output, found: '== nodefile\\nsh01\\n'"
    )
    assert failure(lambda: jobscripts.section("== nodefile\nsh01\n", "nodefile")) == (
        "expected the job's '== nodefile' section to end with a '== ' line, found: '== nodefile\\nsh01\\n'"
    )


EXEC_VNODE = "(sh01:ncpus=2:mem=2097152kb)+(sh02:ncpus=2:mem=2097152kb)"


def test_assert_assignment_and_expected_prune() -> None:
    job = {
        "exec_vnode": EXEC_VNODE,
        "exec_host": "sh01/0*2+sh02/0*2",
        "schedselect": "1:ncpus=2:mem=2gb+1:ncpus=2:mem=2gb",
        "Resource_List": {"select": "1:ncpus=2:mem=2gb+1:ncpus=2:mem=2gb", "ncpus": 4, "mem": "4gb", "nodect": 2},
    }
    expected = chunks_of("(sh01:ncpus=2:mem=2097152kb)")
    assert failure(lambda: assert_assignment(job, expected, "ncpus=2:mem=2gb")).startswith(
        f"exec_vnode {EXEC_VNODE}: expected ((Slice(vnode='sh01', ncpus=2, mem_kb=2097152),),)"
    )
    assert failure(lambda: expected_prune("", "ncpus=1")) == "expected chunks in the job's exec_vnode, found ''"


# --- ramp_down -------------------------------------------------------------------------------


def test_assert_job_matches_and_unchanged() -> None:
    job = parse_json(
        '{"Jobs": {"12.sh01": {"exec_vnode": "(sh01:ncpus=1)+(sh02:ncpus=2)", "exec_host": "sh01/0+sh02/0*2", '
        '"schedselect": "1:ncpus=1+1:ncpus=2", "Resource_List": {"ncpus": 3, "nodect": 2, '
        '"select": "1:ncpus=1+1:ncpus=2"}}}}'
    )["Jobs"]["12.sh01"]
    only_primary = Assignment.of("(sh01:ncpus=1)")
    assert failure(lambda: assert_job_matches(job, only_primary)).startswith(
        "exec_vnode (sh01:ncpus=1)+(sh02:ncpus=2): expected Assignment("
    )
    assert_job_matches(job, Assignment.of(job["exec_vnode"]))  # what the job holds passes
    pbs = SimpleNamespace(jobs=Jobs(SimpleNamespace(prefix=Path("/opt/pbs")), FakeHost('{"Jobs": {}}')))
    assert failure(lambda: unchanged(pbs, "12.sh01", job)) == (
        "expected exec_vnode in job 12.sh01 (qstat knows no such job), found nothing"
    )


def test_task_records_skip_lines_that_are_not_records() -> None:
    assert TaskEnvReport.records(["before sh01 1", "before", "after sh02 3", "done"], "before") == [("sh01", "1")]
