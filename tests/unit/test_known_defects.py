"""Known-defect diagnosis: the /proc reader of job starters, the half-read signature, and the
plugin turning a diagnosed timeout into another attempt on a fresh job, and a race met on every
attempt into a failure (a possible regression, never an xfail).

The /proc test makes two real local processes named pbs_mom (via /proc/self/comm), the child
blocked in read(2) with 7 of 8 bytes of a size already read — the kernel state the defect leaves;
no PBS is involved. Only the child writes to stdout (one write), and both run in their own
process group, killed whole when the test ends. The plugin test runs a child pytest session whose conftest replaces the
`cluster` and `harness_test` fixtures and `defects.diagnose` with stand-ins.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pytest

from pbs_harness.common import project
from pbs_harness.pbs.evidence import starters
from pbs_harness.suite import defects

BLOCKED_STARTER = r"""
import os, signal, sys
def name(n):
    with open("/proc/self/comm", "w") as fh:
        fh.write(n)
name("pbs_mom")
r, w = os.pipe()
os.write(w, b"pbsh04\0")          # a host name where a size_t was expected
pid = os.fork()
if pid == 0:
    signal.alarm(120)             # never outlive the test, whatever becomes of it
    name("pbs_mom")
    got = os.read(r, 8)           # 7 bytes: readpipe() then asks for the 8th
    # The only writer of stdout, one write: "<pid> <bytes read>".
    os.write(1, f"{os.getpid()} {len(got)}\n".encode())
    os.read(r, 8 - len(got))      # blocks: the writer stays open
    os._exit(0)
# A starter's parent is pbs_mom: stay until the test closes stdin, then end the child.
sys.stdin.buffer.read()
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
"""


def _line_within(stream: IO[bytes], seconds: float) -> bytes:
    """One line from a child's stdout, or b"" when none comes in time (the child failed early)."""
    ready, _, _ = select.select([stream], [], [], seconds)
    return stream.readline() if ready else b""


def test_proc_reader_sees_a_starter_blocked_in_a_half_read_size() -> None:
    # Own process group: the finally below ends the parent and its blocked child together.
    proc = subprocess.Popen(
        [sys.executable, "-c", BLOCKED_STARTER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        line = _line_within(proc.stdout, 10)
        assert line, f"the forked stand-in never reported its read (parent exit status {proc.poll()})"
        child, got = map(int, line.split())
        assert got == 7
        # The child reported before its second read(2): wait until the kernel shows it there.
        deadline = time.monotonic() + 10
        found: list[dict] = []
        while time.monotonic() < deadline:
            out = subprocess.run(
                [sys.executable, "-c", starters._SCRIPT], capture_output=True, text=True, check=True, timeout=30
            )
            found = [s for s in json.loads(out.stdout) if s["pid"] == child]
            if found and found[0].get("read_count") == 1:
                break
            time.sleep(0.05)
        assert found, "the blocked child was not listed as a starter"
        starter = starters.Starter(**found[0])
        assert starter.blocked_reading_pipe, starter
        assert starter.read_count == 1, starter
        assert starter.age is not None, starter
        assert 0 <= starter.age < 30, starter  # forked by this test
        assert starters.stuck_reading_failed_host_names([starter]) == [starter]
    finally:
        # Closing stdin makes the parent end and reap its child; the group kill is for whatever of
        # the group did not (pids are handed out in sequence, so the group id is not reused yet).
        proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()


@pytest.mark.parametrize(
    ("target", "count", "is_defect"),
    [
        ("pipe:[1]", 1, True),
        ("pipe:[1]", 7, True),
        ("pipe:[1]", 8, False),  # nothing read yet: an ordinary wait
        ("pipe:[1]", 4, True),
        ("pipe:[1]", 256, False),  # the longest name and its NUL: an ordinary wait
        ("pipe:[1]", 0x36326961, True),  # seen with host ci268fc03: "ci26" taken as a size, 2 bytes read
        ("socket:[1]", 1, False),
        (None, None, False),  # not in read(2) at all
    ],
)
def test_stuck_starter_signature(target: str | None, count: int | None, is_defect: bool) -> None:
    s = starters.Starter(1, 2, "pipe_read", "0", 5 if target else None, target, count)
    assert bool(starters.stuck_reading_failed_host_names([s])) is is_defect


CHILD_CONFTEST = """
import pytest
from pbs_harness.suite import defects

from pbs_harness.suite import plugin

defects.diagnose = lambda cluster, before: "FAKE DEFECT seen" if cluster == "stuck" else None

@pytest.fixture
def harness_test(request):
    request.node.stash[plugin.JOBS_BEFORE_KEY] = frozenset()
    yield None

@pytest.fixture(scope="session")
def release_checked():
    return None

@pytest.fixture(params=["stuck", "healthy"])
def cluster(request):
    return request.param
"""

CHILD_TEST = """
from pbs_harness.common.waits import WaitTimeout

def test_wait(cluster):
    raise WaitTimeout("job 1 substate=42", 1, {"substate": 41})
"""


def test_without_retries_a_diagnosed_timeout_fails_naming_the_defect_and_others_fail(tmp_path: Path) -> None:
    out = _child_session(tmp_path, CHILD_CONFTEST, CHILD_TEST, "--defect-retries", "0")
    assert "2 failed" in out, out
    assert "xfail" not in out.lower(), out
    assert "FAILED test_child.py::test_wait[stuck]" in out, out
    assert 'the "intermittent" OpenPBS defect happened on 1 of 1 attempts' in out, out
    assert "FAKE DEFECT seen. The test's wait" in out, out
    assert "FAILED test_child.py::test_wait[healthy] - pbs_harness.common.waits.WaitTimeout" in out, out  # undiagnosed


def test_a_diagnosed_timeout_on_every_attempt_fails_as_a_possible_regression(tmp_path: Path) -> None:
    out = _child_session(tmp_path, CHILD_CONFTEST, CHILD_TEST)  # default: four attempts more
    assert "2 failed" in out, out
    assert "FAILED test_child.py::test_wait[stuck]" in out, out
    assert 'the "intermittent" OpenPBS defect happened on 5 of 5 attempts' in out, out
    assert "may be a regression" in out, out


# Faked: the diagnosis (the race is "seen" while the marker file says so) and the cluster fixture;
# real: pytest, pbs_harness.suite.plugin and pbs_harness.suite.defect_retry running a child session.
RETRY_CONFTEST = """
import os
import pytest
from pbs_harness.suite import defects

from pbs_harness.suite import plugin

defects.diagnose = lambda cluster, before: "FAKE RACE seen" if os.path.exists("race") else None
SETUPS = []

@pytest.fixture
def harness_test(request):
    request.node.stash[plugin.JOBS_BEFORE_KEY] = frozenset()
    yield None

@pytest.fixture(scope="session")
def release_checked():
    return None

@pytest.fixture
def cluster():
    SETUPS.append(1)
    yield "c"
    with open("teardowns", "a") as f:
        f.write("x")
"""

RETRY_TEST = """
import os
import time
from pbs_harness.common.waits import WaitTimeout

def test_scenario(cluster):
    attempts = int(open("attempts").read()) + 1 if os.path.exists("attempts") else 1
    open("attempts", "w").write(str(attempts))
    if os.path.exists("slow-first") and attempts == 1:
        time.sleep(1.2)  # the attempt that meets the race takes longer (its own time in its row)
    again = os.path.exists("race-always") or (attempts == 2 and os.path.exists("race-twice"))
    if os.path.exists("race") and (attempts == 1 or again):
        raise WaitTimeout("job 1 substate=42", 1, {"substate": 41})
"""


def _child_session(tmp_path: Path, conftest: str, test: str, *args: str) -> str:
    """A child pytest session over one conftest and one test module with the harness plugins;
    its terminal output. A private lock dir: the stand-in `cluster` must not wait for a real
    cluster's session lock."""
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "test_child.py").write_text(test)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-rxfP", "-p", "pbs_harness.suite.defect_retry",
         "-p", "pbs_harness.suite.plugin", "-p", "no:cacheprovider", "--junitxml", "j.xml", *args, str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(project.root()), "PBS_HARNESS_LOCK_DIR": str(tmp_path / "locks"),
             # the short summary line is cut at the terminal's width; the asserted one names a long path
             "COLUMNS": "200"},
        check=False,
        timeout=300,
    ).stdout  # fmt: skip


def _child(tmp_path: Path, *args: str) -> str:
    return _child_session(tmp_path, RETRY_CONFTEST, RETRY_TEST, *args)


def test_a_test_that_met_the_race_runs_once_more_and_its_verdict_is_the_second_attempt(tmp_path: Path) -> None:
    (tmp_path / "race").touch()
    out = _child(tmp_path, "-p", "pbs_harness.suite.progress")
    assert "1 passed" in out, out
    assert "[attempt 2: the earlier one met a known OpenPBS race, see its evidence]" in out, out
    assert (tmp_path / "attempts").read_text() == "2"
    assert (tmp_path / "teardowns").read_text() == "xx"  # the first attempt's fixtures were torn down
    junit = (tmp_path / "j.xml").read_text()
    assert 'name="known_defect" value="attempt 1: FAKE RACE seen"' in junit, junit


def test_three_attempts_that_all_meet_the_race_fail(tmp_path: Path) -> None:
    (tmp_path / "race").touch()
    (tmp_path / "race-always").touch()
    out = _child(
        tmp_path, "-p", "pbs_harness.conformance.recorder", "--results-json", "results.json", "--defect-retries", "2"
    )
    assert "1 failed" in out, out
    assert "xfail" not in out.lower(), out
    said = 'the "intermittent" OpenPBS defect happened on 3 of 3 attempts (each on a fresh job), so it may be a'
    assert said in out, out
    assert "FAKE RACE seen" in out, out
    assert (tmp_path / "attempts").read_text() == "3"
    assert (tmp_path / "teardowns").read_text() == "xxx"  # every attempt's fixtures torn down
    junit = (tmp_path / "j.xml").read_text()
    assert 'value="attempt 1: FAKE RACE seen"' in junit, junit
    assert 'value="attempt 2: FAKE RACE seen"' in junit, junit
    (test,) = json.loads((tmp_path / "results.json").read_text())["tests"]
    assert test["outcome"] == "failed", test
    assert test["defect_every_attempt"] == 3, test
    assert test["known_defects"] == ["attempt 1: FAKE RACE seen", "attempt 2: FAKE RACE seen"], test


def test_one_attempt_that_meets_the_race_then_a_pass_is_a_pass_with_the_attempt_reported(tmp_path: Path) -> None:
    (tmp_path / "race").touch()
    out = _child(tmp_path, "-p", "pbs_harness.conformance.recorder", "--results-json", "results.json")
    assert "1 passed" in out, out
    assert (tmp_path / "attempts").read_text() == "2"
    (test,) = json.loads((tmp_path / "results.json").read_text())["tests"]
    assert test["outcome"] == "passed", test
    assert test["known_defects"] == ["attempt 1: FAKE RACE seen"], test
    assert "defect_every_attempt" not in test, test


def test_a_race_met_twice_then_not_is_the_third_attempts_verdict(tmp_path: Path) -> None:
    (tmp_path / "race").touch()
    (tmp_path / "race-twice").touch()
    out = _child(tmp_path)
    assert "1 passed" in out, out
    assert (tmp_path / "attempts").read_text() == "3"
    assert (tmp_path / "teardowns").read_text() == "xxx"


def test_with_one_retry_a_race_met_on_both_attempts_fails_saying_two(tmp_path: Path) -> None:
    (tmp_path / "race").touch()
    (tmp_path / "race-always").touch()
    out = _child(tmp_path, "--defect-retries", "1")
    assert "1 failed" in out, out
    assert "happened on 2 of 2 attempts" in out, out


def test_a_race_met_by_an_attempt_whose_teardown_failed_is_no_xfail(tmp_path: Path) -> None:
    """No fair next attempt when the cluster is not back at its baseline: the attempt that met the
    race is the last one, so it fails (and its teardown is an error) instead of ending as an xfail."""
    (tmp_path / "race").touch()
    conftest = RETRY_CONFTEST + "    if os.path.exists('bad-teardown'):\n        raise RuntimeError('leaked')\n"
    (tmp_path / "bad-teardown").touch()
    out = _child_session(tmp_path, conftest, RETRY_TEST)
    assert "1 failed, 1 error" in out, out
    assert "happened on 1 of 1 attempts" in out, out
    assert (tmp_path / "attempts").read_text() == "1"


def test_without_the_race_or_with_retries_off_a_test_runs_once(tmp_path: Path) -> None:
    out = _child(tmp_path)
    assert "1 passed" in out, out
    assert (tmp_path / "attempts").read_text() == "1"
    (tmp_path / "attempts").unlink()
    (tmp_path / "race").touch()
    out = _child(tmp_path, "--defect-retries", "0")
    assert "1 failed" in out, out  # with no attempt more, the one attempt was every attempt
    assert "happened on 1 of 1 attempts" in out, out
    assert (tmp_path / "attempts").read_text() == "1"


class _Ran:
    def __init__(self, stdout: str) -> None:
        self.stdout = stdout


class _Host:
    """Faked: a host that answers `qstat -t -w` and the spool grep with fixed text."""

    def __init__(self, name: str, answer: str) -> None:
        self.name, self.answer = name, answer

    def run(self, cmd: object, timeout: float) -> _Ran:
        return _Ran(self.answer)


class _Cluster:
    pbs_home = Path("/var/spool/pbs")

    def __init__(self, listed: str, spooled: str) -> None:
        self.server = _Host("s01", listed)
        self.moms = [_Host("s06", spooled)]

    def bin(self, name: str) -> str:
        return f"/opt/pbs/bin/{name}"


def test_tm_init_failure_is_diagnosed_only_for_a_job_the_server_still_has() -> None:
    listed = "Job id Name\n---\n41.s01 sleepers pbsuser1 0 R workq\n"
    now = _Cluster(listed, "/var/spool/pbs/spool/41.s01.OU\n")
    said = defects._tm_init_enoevent(now, frozenset())
    assert said is not None
    assert said.startswith(defects.TM_INIT_ENOEVENT)
    assert "Observed on s06: `tm_init failed, rc = unknown (17001)` in the output of 41.s01" in said
    stale = _Cluster(listed, "/var/spool/pbs/spool/7.s01.OU\n")  # an old job's spool file
    assert defects._tm_init_enoevent(stale, frozenset()) is None
    # 41.s01 was there when the test started: another test's job, no diagnosis of this one's wait
    assert defects._tm_init_enoevent(now, frozenset({"41.s01"})) is None


STUCK = [{"pid": 9, "ppid": 8, "wchan": "anon_pipe_read", "syscall": "0", "read_fd": 33,
          "read_target": "pipe:[1]", "read_count": 1}]  # fmt: skip


class _StarterHost:
    """Faked: a mom host whose job starters (the /proc reader's JSON) are given."""

    def __init__(self, name: str, found: list[dict]) -> None:
        self.name, self.found = name, found

    def check(self, cmd: object, timeout: float) -> _Ran:
        return _Ran(json.dumps(self.found))


def test_a_stuck_starter_counts_only_on_the_primary_of_a_job_waiting_in_substate_41() -> None:
    cluster = _Cluster("", "")
    jobs = {
        "Jobs": {"5.s01": {"substate": 41, "exec_host": "s06/0+s02/0"}, "6.s01": {"substate": 42, "exec_host": "s03/0"}}
    }
    cluster.server = _Host("s01", json.dumps(jobs))
    cluster.moms = [_StarterHost("s03", STUCK), _StarterHost("s06", STUCK)]
    said = defects._stuck_starter(cluster, frozenset())
    assert said is not None
    assert "Observed on s06, primary of 5.s01 (substate 41): starter pid 9" in said
    # 5.s01 was there when the test started: not the test's own job, so no diagnosis
    assert defects._stuck_starter(cluster, frozenset({"5.s01"})) is None
    cluster.moms = [_StarterHost("s03", STUCK)]  # stuck, but its job (6) runs: a leftover starter
    assert defects._stuck_starter(cluster, frozenset()) is None


def test_a_timeout_is_diagnosed_only_with_the_jobs_the_test_started_with(tmp_path: Path) -> None:
    """Without the list of jobs taken when the test started, the diagnosis is not even asked: the
    timeout stays a failure."""
    conftest = CHILD_CONFTEST.replace("    request.node.stash[plugin.JOBS_BEFORE_KEY] = frozenset()\n", "")
    out = _child_session(tmp_path, conftest, CHILD_TEST, "--defect-retries", "0")
    assert "2 failed" in out, out
    assert "FAKE DEFECT" not in out, out
    assert "intermittent" not in out, out


MET_TEST = """
import os
from pbs_harness.suite import defect_retry

def test_scenario(cluster, request):
    attempts = int(open("attempts").read()) + 1 if os.path.exists("attempts") else 1
    open("attempts", "w").write(str(attempts))
    if attempts == 1:
        defect_retry.met(request, "FAKE SIGNATURE seen by the test")
"""


def test_a_race_the_test_itself_recognises_is_retried_like_a_diagnosed_one(tmp_path: Path) -> None:
    out = _child_session(tmp_path, RETRY_CONFTEST, MET_TEST)
    assert "1 passed" in out, out
    assert (tmp_path / "attempts").read_text() == "2"
    assert 'value="attempt 1: FAKE SIGNATURE seen by the test"' in (tmp_path / "j.xml").read_text()


def test_the_report_header_counts_attempts_and_tests_that_met_a_race_every_time() -> None:
    from pbs_harness.conformance import report_text

    results = {
        "tests": [
            {"outcome": "passed", "known_defects": ["attempt 1: R"]},  # then passed
            {"outcome": "failed", "known_defects": ["attempt 1: R", "attempt 2: R"], "defect_every_attempt": 3},
            {"outcome": "failed", "known_defects": ["attempt 1: R"]},  # met once, then failed otherwise
            {"outcome": "passed"},
        ]
    }
    counts = report_text.known_defects(results)
    assert counts == {"attempts": 1 + 3 + 1, "tests": 3, "then_passed": 1, "every_attempt": 1}
    (line,) = report_text.known_defects_line({"known_defects": counts})
    assert line.endswith("1 then passed, 1 met it on every attempt (failed: a possible regression)"), line


def test_a_retried_attempt_is_a_rerun_row_of_its_own_in_every_report(tmp_path: Path) -> None:
    """#35: pytest-html showed "Passed" with the final attempt's time and hid the attempt that met the
    race. Now the attempt is one report of outcome "rerun": a row of its own in pytest-html with its
    diagnosis, counted by the terminal, its time in JUnit's testcase and in the results' duration."""
    (tmp_path / "race").touch()
    (tmp_path / "slow-first").touch()
    out = _child(
        tmp_path,
        "-p", "pbs_harness.conformance.recorder", "--results-json", "results.json",
        "--html", "report.html", "--self-contained-html",
    )  # fmt: skip
    assert "1 passed, 1 rerun" in out, out
    page = (tmp_path / "report.html").read_text()
    assert "attempt 1 met a known OpenPBS race and the scenario ran again on a fresh job: FAKE RACE seen" in page
    assert '<span class="rerun">1 Reruns</span>' in page
    rows = re.findall(r'"result": "(\w+)", "testId": "[^"]+", "duration": "([^"]+)"', html.unescape(page))
    assert rows[0] == ("Rerun", "00:00:01"), rows  # its own time, not the passing attempt's
    assert rows[1][0] == "Passed", rows
    assert rows[1][1].endswith(" ms"), rows
    (test,) = json.loads((tmp_path / "results.json").read_text())["tests"]
    assert test["outcome"] == "passed", test
    junit = (tmp_path / "j.xml").read_text()
    assert junit.count("<testcase ") == 1, junit  # one testcase, not one per attempt


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0.3204, "320 ms"), (59.6, "00:01:00"), (95.2, "00:01:35"), (3599.7, "01:00:00")]
)
def test_pytest_html_durations_round_the_whole_time(seconds: float, shown: str) -> None:
    """pytest-html 4.2 printed 00:00:60 for a 59.6 s test (#35)."""
    from pbs_harness.suite.parallel.binding import html_duration

    assert html_duration(seconds) == shown


def test_a_stuck_starter_older_than_the_attempt_is_not_its_diagnosis() -> None:
    # Faked: the host's /proc (the script's output). Real: the signature and the age rule that keeps a
    # starter left by an earlier attempt's job from ending a later attempt early.
    stuck = {"pid": 9, "ppid": 1, "wchan": "pipe_read", "syscall": "0", "read_fd": 33,
             "read_target": "pipe:[7]", "read_count": 1714710881}  # fmt: skip
    assert defects.stuck_starter_on(_StarterHost("pbshx01", [{**stuck, "age": 40.0}]), younger_than=30) is None
    seen = defects.stuck_starter_on(_StarterHost("pbshx01", [{**stuck, "age": 12.0}]), younger_than=30)
    assert seen is not None
    assert seen.startswith(defects.STARTER_HALF_READ), seen
    assert "Observed on pbshx01: starter pid 9 (parent 1) in pipe_read, forked 12s ago" in seen, seen
    waiting = _StarterHost("pbshx01", [{**stuck, "age": 12.0, "read_count": 8}])  # an ordinary wait for a size
    assert defects.stuck_starter_on(waiting, younger_than=30) is None
