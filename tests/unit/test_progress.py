"""The progress plugin (pbs_harness.suite.progress): a line per finished test, a summary per suite, one
line per skip reason. Each case runs a child pytest session (pytester, in a subprocess so the
harness plugin's signal handlers stay there) on small tests that pass, fail, skip and xfail;
no cluster is involved."""

from __future__ import annotations

import re

import pytest

PLUGINS = ("-p", "pbs_harness.suite.plugin", "-p", "pbs_harness.suite.progress", "-p", "no:cacheprovider")

SMOKE_TESTS = """
import pytest

pytestmark = pytest.mark.smoke

def test_passes():
    pass

def test_fails():
    assert False

@pytest.mark.xfail(reason="known defect")
def test_known():
    assert False

@pytest.mark.parametrize("n", [1, 2])
def test_no_cluster(n):
    pytest.skip("no cluster here")
"""

OTHER_TESTS = """
import pytest

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown broke")

def test_other_skip():
    pytest.skip("another reason")

def test_teardown_breaks(broken_teardown):
    pass
"""


@pytest.fixture
def run(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    # An empty state dir: the harness plugin's header must not read this machine's cluster.
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    pytester.makepyfile(test_smokes=SMOKE_TESTS, test_other=OTHER_TESTS)

    def run(*args: str) -> str:
        result = pytester.runpytest_subprocess(*PLUGINS, *args, timeout=120)
        return result.stdout.str()

    return run


def test_a_line_per_test_as_it_finishes(run) -> None:
    out = run("-rs")
    lines = [ln for ln in out.splitlines() if ln.startswith("[")]
    assert [re.sub(r" \d+\.\ds", " T", ln) for ln in lines] == [
        "[1/7] other test_other_skip SKIPPED T (another reason)",
        "[2/7] other test_teardown_breaks PASSED + ERROR T",
        "[3/7] smoke test_passes PASSED T",
        "[4/7] smoke test_fails FAILED T",
        "[5/7] smoke test_known XFAIL T (known defect)",
        "[6/7] smoke test_no_cluster[1] SKIPPED T (no cluster here)",
        "[7/7] smoke test_no_cluster[2] SKIPPED T (no cluster here)",
    ], out
    # pytest's own per-test characters are replaced, not doubled.
    assert "test_smokes.py ." not in out, out


def test_a_summary_per_suite_and_a_line_per_skip_reason(run) -> None:
    out = run("-ra")  # what pyproject.toml's addopts give
    assert re.search(r"^other  1 passed, 1 error, 1 skipped in \d+\.\ds$", out, re.M), out
    assert re.search(r"^smoke  1 passed, 1 failed, 1 xfailed, 2 skipped in \d+\.\ds$", out, re.M), out
    assert re.search(r"^   2 x no cluster here$", out, re.M), out
    assert re.search(r"^   1 x another reason$", out, re.M), out
    # -ra's per-location SKIPPED lines are replaced by the lines per reason; the others stay.
    assert "SKIPPED [" not in out, out
    assert "FAILED test_smokes.py::test_fails" in out, out
    assert "XFAIL test_smokes.py::test_known - known defect" in out, out
    assert "1 failed, 2 passed, 3 skipped, 1 xfailed, 1 error" in out, out


def test_quiet_keeps_the_dots_and_the_summaries(run) -> None:
    out = run("-q")
    assert not [ln for ln in out.splitlines() if ln.startswith("[")], out
    assert re.search(r"^s\.E\.Fxss", out, re.M), out
    assert re.search(r"^   2 x no cluster here$", out, re.M), out
    assert re.search(r"^smoke  1 passed, 1 failed", out, re.M), out
