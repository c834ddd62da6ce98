"""pbs_harness.suite.outcome: whether a test failed, as fixtures see it in teardown (a child pytest session
with the plugin, whose fixtures write what they saw to a file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SUITE = """
import json
import pathlib

import pytest

from pbs_harness.suite import outcome

SEEN = pathlib.Path(__file__).parent / "seen.json"


@pytest.fixture
def watch(request):
    yield
    seen = json.loads(SEEN.read_text()) if SEEN.exists() else {}
    seen[request.node.name] = [outcome.call_failed(request.node), outcome.failed(request.node)]
    SEEN.write_text(json.dumps(seen))


@pytest.fixture
def broken():
    raise RuntimeError("setup fails")


def test_passes(watch):
    pass


def test_fails(watch):
    assert False


def test_setup_fails(watch, broken):
    pass
"""


def test_call_failed_and_failed_as_teardown_sees_them(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The plugin's header judges the default inventory: no cluster of this machine is looked at.
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PBS_HARNESS_INVENTORY", raising=False)
    pytester.makepyfile(test_outcomes=SUITE)
    pytester.runpytest_subprocess("-p", "pbs_harness.suite.plugin", "-p", "no:cacheprovider", timeout=120)
    seen = json.loads(Path(pytester.path / "seen.json").read_text())
    assert seen == {
        "test_passes": [False, False],
        "test_fails": [True, True],
        "test_setup_fails": [False, True],  # its body never ran
    }
