"""Tests a release lacks a feature for (pbs_harness.suite.release_features): the probes' readings of
qmgr, the requires_feature marker, the skip it turns into, and the status "not in this release".

MASTER_EVENTS is qmgr's real answer on a cluster of master (cd7ab5e). OLD_EVENTS is SYNTHETIC:
the v22.05.11 message as its source builds it (src/lib/Libutil/hook.c: no postqueuejob, and no
comma between resv_confirm and resv_begin). The end-to-end tests run a child pytest session whose
`pbs` fixture is a FAKE (FakeServer below: canned qmgr answers, a version, and whether
PREFIX/bin/<program> is executable; no cluster) and whose `baseline` and `harness_test` do nothing;
the plugin (its session-start check of the probes against the version included), the recorder and
the report are the real ones.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pbs_harness.conformance import catalogue, report
from pbs_harness.conformance.status import NOT_IN_RELEASE, decide
from pbs_harness.suite.release_features import (
    FEATURES,
    ProbeError,
    attribute_known,
    disagreements,
    expected,
    hook_events,
    marker_problem,
    reason,
    release,
)

MASTER_EVENTS = (
    "qmgr obj=pbsh_probe1 svr=default: invalid argument (pbsh_no_such_event) to event. Should be one or more of: "
    "queuejob,postqueuejob,modifyjob,modifyvnode,management,resvsub,modifyresv,movejob,jobobit,runjob,provision,"
    "periodic,resv_confirm,resv_begin,resv_end,execjob_begin,execjob_prologue,execjob_epilogue,execjob_preterm,"
    "execjob_end,exechost_periodic,execjob_launch,exechost_startup,execjob_attach,execjob_resize,execjob_abort,"
    'execjob_postsuspend,execjob_preresume or "" for no event\nqmgr: hook error returned from server\n'
)
OLD_EVENTS = MASTER_EVENTS.replace("postqueuejob,", "").replace("resv_confirm,resv_begin", "resv_confirmresv_begin")


def test_the_hook_events_qmgr_lists() -> None:
    events = hook_events(MASTER_EVENTS)
    assert len(events) == 28
    assert {"postqueuejob", "execjob_resize"} <= set(events)
    old = hook_events(OLD_EVENTS)
    assert "postqueuejob" not in old
    assert "execjob_resize" in old
    with pytest.raises(ProbeError, match="names no list of hook events"):
        hook_events("qmgr: cannot connect to server mx01 (errno=111)")


def test_a_server_attribute_is_known_unknown_or_undecided() -> None:
    assert attribute_known(0, "", "reserve_retry_time") is True
    undefined = "qmgr obj= svr=default: Undefined attribute \nqmgr: Error (15002) returned from server\n"
    assert attribute_known(1, undefined, "x") is False
    with pytest.raises(ProbeError, match="could not tell whether the server knows x"):
        attribute_known(1, "qmgr: cannot connect to server", "x")


def test_versions_and_the_source_reading() -> None:
    assert release("23.06.06") == (23, 6, 6)
    assert release("unknown") == ()
    new = FEATURES["postqueuejob_hook_event"]
    assert expected(new, "23.06.06")
    assert not expected(new, "22.05.11")
    assert expected(FEATURES["execjob_resize_hook_event"], "22.05.11")
    assert reason(new, "22.05.11") == (
        "not in this release (OpenPBS 22.05.11 on this cluster has no postqueuejob hook event, "
        "which OpenPBS has since 23.06)"
    )


def test_the_marker_names_known_features() -> None:
    assert marker_problem(("reserve_retry_time",)) is None
    assert "unknown features ['reserve_retry_cutoff']" in (marker_problem(("reserve_retry_cutoff",)) or "")
    assert "unknown features (none)" in (marker_problem(()) or "")


def _t(name: str, outcome: str, *, absent: bool = False) -> dict:
    return {"nodeid": f"ptl_tests/t.py::{name}", "outcome": outcome, **({"not_in_release": True} if absent else {})}


def test_the_status_of_an_interface_a_release_lacks() -> None:
    gone = _t("test_a", "skipped", absent=True)
    ok, other = _t("test_b", "passed"), _t("test_c", "passed")
    guards = {"ptl_tests/t.py::test_a", "ptl_tests/t.py::test_b"}
    # Every guard that ran was skipped as not in this release; a passing non-guard does not change it.
    assert decide([gone, other], [gone], {"ptl_tests/t.py::test_a"}).name == NOT_IN_RELEASE
    # One guard not in the release, the other passed: what the release has works.
    assert decide([gone, ok], [gone, ok], guards).label == "pass"
    # A red test is never hidden.
    assert decide([gone, _t("test_c", "failed")], [gone], {"ptl_tests/t.py::test_a"}).name == "fail"
    # A guard that did not run at all still makes it incomplete.
    assert decide([gone], [gone], guards).name == NOT_IN_RELEASE
    assert decide([gone, ok], [gone, ok], {*guards, "ptl_tests/t.py::test_d"}).name == "incomplete"
    # An ordinary skip is not a release skip.
    assert decide([_t("test_a", "skipped")], [_t("test_a", "skipped")], {"ptl_tests/t.py::test_a"}).name == "skipped"


CHILD_CONFTEST = '''
"""FAKE pbs: qmgr answers as a server of {version} would (its hook events; every server attribute
known), PREFIX/bin holds {programs}; no cluster is reached. baseline and harness_test do nothing."""
import pytest
from pathlib import Path
from types import SimpleNamespace

EVENTS = {events!r}
PROGRAMS = {programs!r}


class FakeServer:
    def qmgr(self, directive, *, user=None, check=False):
        if directive.startswith("set hook"):
            return SimpleNamespace(rc=32, ok=False, stdout="", stderr=EVENTS)
        return SimpleNamespace(rc=0, ok=True, stdout="", stderr="")

    def status(self):
        return {{"pbs_version": {version!r}}}


class FakeHost:
    def run(self, cmd, **kwargs):
        return SimpleNamespace(rc=0 if Path(cmd[-1]).name in PROGRAMS else 1)


@pytest.fixture(scope="session")
def pbs():
    cluster = SimpleNamespace(server=FakeHost(), prefix=Path("/opt/pbs"))
    return SimpleNamespace(server=FakeServer(), cluster=cluster)


@pytest.fixture(scope="session")
def baseline():
    return None


@pytest.fixture
def harness_test():
    yield None
'''


def _conftest(version: str, events: str, programs: tuple[str, ...] = ("pbs_release_nodes",)) -> str:
    return textwrap.dedent(CHILD_CONFTEST.format(version=version, events=events, programs=programs))


CHILD_TESTS = """
import pytest


@pytest.mark.spec("RJS-9")
@pytest.mark.guards("RJS-9")
@pytest.mark.requires_feature("postqueuejob_hook_event")
def test_needs_the_new_event(pbs):
    raise AssertionError("must not run on a release without the event")


@pytest.mark.spec("RJS-9")
@pytest.mark.requires_feature("execjob_resize_hook_event")
def test_needs_an_old_event(pbs):
    pass
"""
PLUGINS = ("-p", "pbs_harness.suite.plugin", "-p", "pbs_harness.conformance.recorder", "-p", "no:cacheprovider")


def test_a_missing_feature_is_a_release_skip_in_the_results_and_the_report(
    pytester: pytest.Pytester, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch
) -> None:
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    pytester.makeconftest(_conftest("22.05.11", OLD_EVENTS))
    pytester.makepyfile(test_release=CHILD_TESTS)
    results = tmp_path / "results.json"
    run = pytester.runpytest_subprocess(*PLUGINS, "--results-json", str(results), "-rs", timeout=120)
    run.assert_outcomes(passed=1, skipped=1)
    run.stdout.fnmatch_lines(["*not in this release (OpenPBS 22.05.11 on this cluster has no postqueuejob hook event*"])
    tests = {t["nodeid"].split("::")[-1]: t for t in json.loads(results.read_text())["tests"]}
    assert tests["test_needs_the_new_event"]["not_in_release"] is True
    assert tests["test_needs_the_new_event"]["outcome"] == "skipped"
    assert "not_in_release" not in tests["test_needs_an_old_event"]
    data = json.loads(results.read_text())
    rows = {r.id: r for r in report.build(catalogue.load(), data, pytester.path)}
    assert rows["RJS-9"].status == NOT_IN_RELEASE
    assert rows["RJS-9"].outcomes[NOT_IN_RELEASE] == 1


def test_a_marker_naming_no_feature_stops_collection(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(
        test_bad="import pytest\n\n@pytest.mark.requires_feature('teleport')\ndef test_x(pbs):\n    pass\n"
    )
    run = pytester.runpytest_subprocess(*PLUGINS, "--results-json", str(tmp_path / "r.json"), timeout=120)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    assert "requires_feature names unknown features ['teleport']" in run.stderr.str()


SMOKE_TEST = """
import pytest


@pytest.mark.smoke
def test_smoke(pbs):
    pass
"""


def test_a_probe_that_says_a_release_lacks_what_its_version_has_fails_the_run(
    pytester: pytest.Pytester, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch
) -> None:
    """A 23.06.06 build whose pbs_release_nodes is not executable (a build that broke the probe's own
    command): every cluster test fails naming the disagreement, also those without the marker and
    with -m selecting no harness test; nothing is skipped as "not in this release"."""
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    pytester.makeconftest(_conftest("23.06.06", MASTER_EVENTS, programs=()))
    pytester.makepyfile(test_release=CHILD_TESTS, test_smoke=SMOKE_TEST)
    run = pytester.runpytest_subprocess(*PLUGINS, "--results-json", str(tmp_path / "r.json"), timeout=120)
    run.assert_outcomes(errors=3)
    out = run.stdout.str()
    assert "not in this release (" not in out, out
    said = (
        "the probe of the pbs_release_nodes command (command 'pbs_release_nodes') says OpenPBS 23.06.06 lacks it, "
        "but OpenPBS has it in every release the harness knows"
    )
    assert said in " ".join(out.split()), out
    run = pytester.runpytest_subprocess(
        *PLUGINS, "-m", "smoke", "--results-json", str(tmp_path / "r.json"), timeout=120
    )
    run.assert_outcomes(errors=1)


def test_probes_that_agree_with_the_version_let_the_run_go_on(
    pytester: pytest.Pytester, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch
) -> None:
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    pytester.makeconftest(_conftest("23.06.06", MASTER_EVENTS))
    pytester.makepyfile(test_smoke=SMOKE_TEST)
    run = pytester.runpytest_subprocess(*PLUGINS, "--results-json", str(tmp_path / "r.json"), timeout=120)
    run.assert_outcomes(passed=1)


def test_what_the_probes_found_against_the_version() -> None:
    every = {name: True for name in FEATURES}
    assert disagreements(every, "23.06.06") == []
    assert disagreements({**every, "postqueuejob_hook_event": False}, "22.05.11") == []
    (said,) = disagreements({**every, "reserve_retry_time": False}, "23.06.06")
    assert "server attribute reserve_retry_time" in said, said
    assert "NOT skipped" in said, said
    (said,) = disagreements(every, "22.05.11")  # postqueuejob found where the source reading has none
    assert "only since 23.06" in said, said
    (said,) = disagreements(every, "unknown")
    assert "is no release number" in said, said
