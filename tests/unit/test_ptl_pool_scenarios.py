"""bench-ptl on several clusters and over the same scenarios (pbs_harness.ptl.pool, .scenarios), and PTL
for hosts with roots of their own (pbs_harness.ptl.site, SystemHost.put_tree).

Faked: the part runners are plain functions (no PTL, no cluster), the JUnit file and PTL outcomes are texts
shaped like pytest's and PTL's, and the system host's root is a temporary directory. What it proves: every
part runs exactly once whichever cluster is free, a cluster that fails stops taking parts while the others
finish, Ctrl-C stops every cluster; the same-scenario sums pair each PTL test with the tests its row names,
each of ours counted once; PTL is copied into a host with its own root at the same path."""

from __future__ import annotations

import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from pbs_harness.ptl import pool, report, scenarios, selection
from pbs_harness.ptl.results import Outcome

FILE = selection.PtlFile("ramp_down", "functional/pbs_node_rampdown.py", "TestPbsNodeRampDown")


def _group(n: int, moms: int = 3) -> selection.Group:
    return selection.Group(FILE, moms, tuple(f"test_{i}" for i in range(n)))


def test_groups_are_cut_into_parts_of_at_most_the_size_in_file_order() -> None:
    parts = pool.parts([_group(7), _group(2, moms=5)], 3)
    assert [p.group.tests for p in parts] == [
        ("test_0", "test_1", "test_2"), ("test_3", "test_4", "test_5"), ("test_6",), ("test_0", "test_1")]  # fmt: skip
    assert [(p.index, p.of) for p in parts] == [(1, 3), (2, 3), (3, 3), (1, 1)]
    assert parts[0].label == "pbs_node_rampdown-3moms part 1/3"
    assert parts[3].label == "pbs_node_rampdown-5moms"
    assert [p.group.tests for p in pool.parts([_group(7)], 0)] == [_group(7).tests]  # 0: whole groups


def _runner(cluster: str, seen: list[tuple[str, str]], delay: float = 0.01) -> pool.Runner:
    def run(part: pool.Part, stop) -> pool.PartResult:
        seen.append((cluster, part.label))
        time.sleep(delay)
        return pool.PartResult(
            part, cluster, 0, delay, [Outcome(FILE.test_class, t, "PASS", "", 1.0) for t in part.group.tests]
        )

    return run


def test_every_part_runs_once_on_whichever_cluster_is_free() -> None:
    work = pool.parts([_group(10)], 2)
    seen: list[tuple[str, str]] = []
    done = pool.share_out(work, {"a": _runner("a", seen), "b": _runner("b", seen)})
    assert sorted(label for _, label in seen) == sorted(p.label for p in work)
    assert len(done) == len(work)
    assert {r.cluster for r in done} == {"a", "b"}
    assert sum(len(r.outcomes) for r in done) == 10


def test_a_cluster_that_fails_takes_no_more_parts_and_the_others_finish() -> None:
    work = pool.parts([_group(8)], 1)
    seen: list[tuple[str, str]] = []

    def broken(part: pool.Part, stop) -> pool.PartResult:
        raise RuntimeError("ssh: connect to host ba01 refused")

    done = pool.share_out(work, {"a": _runner("a", seen), "b": broken})
    failed = [r for r in done if r.error]
    assert [(r.cluster, r.rc, r.outcomes) for r in failed] == [("b", None, [])]  # recorded, never run again
    assert "refused" in failed[0].error
    assert len([r for r in done if not r.error]) == 7  # every other part ran, on "a"


def test_an_interrupt_stops_every_cluster() -> None:
    """Ctrl-C (a simulated SIGINT in the main thread) ends share_out and every runner sees stop. The SIGINT
    handler is Python's own for the test: interrupt_main does nothing when a handler that does not raise
    (or SIG_IGN) is in place, and a runner that never sees stop then hung the test until its timeout
    (fresh clone's make test, 29 Nov); a runner gives up after 60 s instead."""
    work = pool.parts([_group(4)], 1)
    started = threading.Event()
    stopped: list[bool] = []

    def slow(part: pool.Part, stop) -> pool.PartResult:
        started.set()
        deadline = time.monotonic() + 60
        while not stop():
            assert time.monotonic() < deadline, "the interrupt never reached share_out"
            time.sleep(0.01)
        stopped.append(True)
        return pool.PartResult(part, "a", None, 0.0)

    def interrupt_soon() -> None:
        started.wait(5)
        import _thread

        _thread.interrupt_main()

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt_soon, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            pool.share_out(work, {"a": slow, "b": slow})
    finally:
        signal.signal(signal.SIGINT, previous)
    assert stopped  # the runners saw stop and returned


DOC = """
| PTL test | our test(s) | note |
|---|---|---|
| test_release_one | `test_release_a_sister`, `test_release_keeps_totals` | |
| test_release_two | `test_release_a_sister` | |
| test_release_cray | - | not ported: Cray only |
| test_release_gone | `test_not_in_our_run` | |
"""

JUNIT = """<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="ptl_tests.ramp_down.test_release" name="test_release_a_sister[one]" time="10.5"/>
<testcase classname="ptl_tests.ramp_down.test_release" name="test_release_a_sister[two]" time="9.5"/>
<testcase classname="ptl_tests.ramp_down.test_release" name="test_release_keeps_totals" time="30">
<skipped type="pytest.xfail" message="bug"/></testcase>
<testcase classname="ptl_tests.ramp_down.test_release" name="test_unrelated" time="99"/>
</testsuite></testsuites>"""


def test_same_scenarios_pair_each_ptl_test_with_the_tests_its_row_names_each_counted_once() -> None:
    ptl = [
        Outcome("T", "test_release_one", "PASS", "", 100.0),
        Outcome("T", "test_release_two", "FAIL", "x", 50.0),
        Outcome("T", "test_release_cray", "SKIP", "", 5.0),
        Outcome("T", "test_release_gone", "PASS", "", 20.0),
    ]
    ours = scenarios.our_cases(JUNIT)
    assert [(c.name, c.outcome) for c in ours][2] == ("test_release_keeps_totals", "xfailed")
    got = scenarios.pair("ramp_down", ptl, DOC, ours)
    assert got.ptl_paired == ["test_release_one", "test_release_two", "test_release_gone"]
    assert got.ptl_seconds == 170.0
    assert got.ptl_unpaired == ["test_release_cray"]  # a reason, no test of ours
    # test_release_a_sister once (both parameters: 20 s) though two rows name it; test_unrelated left out
    assert got.ours_paired == ["test_release_a_sister", "test_release_keeps_totals"]
    assert got.ours_seconds == 50.0
    assert got.ours_missing == ["test_not_in_our_run"]
    assert got.ratio == 3.4
    assert scenarios.overall({"ramp_down": got}) == {
        "ptl_tests": 3, "ptl_seconds": 170.0, "ours_tests": 2, "ours_seconds": 50.0, "ratio": 3.4}  # fmt: skip
    md = report.markdown([], {}, {"date": "x"}, {"ramp_down": got})
    assert "ratio PTL/ours **3.4**" in md
    assert "| ramp_down | 3 | 170 s (2.8 min) | 2 | 50 s (0.8 min) | 3.4 |" in md


def test_a_system_host_takes_a_copy_at_the_same_path_links_kept(tmp_path: Path, monkeypatch) -> None:
    from pbs_harness.hosts.system import SystemHost

    root = tmp_path / "hostroot"
    src = tmp_path / "state" / "ptl"
    (src / "venv" / "bin").mkdir(parents=True)
    (src / "venv" / "bin" / "pbs_benchpress").write_text("#!/x/python\n")
    (src / "venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    host = SystemHost.__new__(SystemHost)  # no cluster: only the copy is under test
    monkeypatch.setattr(SystemHost, "own_root", lambda self: root)
    (root / str(src).lstrip("/") / "stale").mkdir(parents=True)
    sock = socket.socket(socket.AF_UNIX)  # e.g. an SSH ControlMaster socket: not copied
    sock.bind(str(src / "cm-123"))
    host.put_tree(src)
    inside = root / str(src).lstrip("/")
    assert (inside / "venv/bin/pbs_benchpress").read_text() == "#!/x/python\n"
    assert str((inside / "venv/bin/python").readlink()) == "/usr/bin/python3"  # still a link
    assert not (inside / "stale").exists()  # replaced, not merged
    assert not (inside / "cm-123").exists()
    sock.close()
    host.remove_tree(src)
    assert not inside.exists()
    with pytest.raises(ValueError, match="absolute"):
        host.put_tree(Path("relative/dir"))


ROWS_DOC = """
| PTL | ours |
|---|---|
| t1, t2 | RS-B: see section below |

| # | PTL test | counterpart / reason |
|---|---|---|
| 1 | test_stageout_true | `test_stageout[qsub-true]` |
| 2 | test_stageout_false | `[qsub-false]` |
| 3 | test_stageout_default | `...[unset]` |
| 4 | test_cray | not ported: Cray only |

| PTL | ours |
|---|---|
| t1 | `test_failed_begin[begin-reject / begin-exception]` |
"""

ROWS_JUNIT = """<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="c" name="test_stageout[qsub-true]" time="10"/>
<testcase classname="c" name="test_stageout[qsub-false]" time="20"/>
<testcase classname="c" name="test_stageout[unset]" time="30"/>
<testcase classname="c" name="test_stageout[qalter-true]" time="40"/>
<testcase classname="c" name="test_failed_begin[begin-reject]" time="5"/>
<testcase classname="c" name="test_failed_begin[begin-exception]" time="6"/>
</testsuite></testsuites>"""


def test_rows_that_give_only_a_parameter_pair_that_parameter_of_the_test_named_above() -> None:
    """The suites' tables list one test's parameters on rows of their own (`[qsub-false]`, `...[unset]`),
    and reliable_startup's PTL tests appear in a summary table before the detailed one: the pairing takes
    the parameter a row names, the test named above it, and the union over tables; an id our run does not
    have (words) pairs every parameter."""
    names = ("test_stageout_true", "test_stageout_false", "test_stageout_default", "test_cray", "test_t1", "test_t2")
    ptl = [Outcome("T", n, "PASS", "", 100.0) for n in names]
    got = scenarios.pair("f", ptl, ROWS_DOC, scenarios.our_cases(ROWS_JUNIT))
    assert got.ptl_paired == ["test_stageout_true", "test_stageout_false", "test_stageout_default", "test_t1"]
    assert got.ptl_unpaired == ["test_cray", "test_t2"]
    # 10 + 20 + 30 of test_stageout ([qalter-true] is no PTL test's), and both of test_failed_begin's (5 + 6)
    assert got.ours_seconds == 71.0
    assert got.ours_paired == ["test_stageout", "test_failed_begin"]
