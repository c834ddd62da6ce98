"""Run by test_harness.py in a child pytest after another child was killed: the session's baseline
(made at its start) is the declared state, with nothing left to clean."""

import pytest

from pbs_harness.suite import baseline as baseline_mod

pytestmark = pytest.mark.acceptance


def test_the_session_starts_at_the_declared_baseline(pbs, baseline) -> None:
    assert baseline.declared is not None, "the baseline is a snapshot, not the declared state"
    assert baseline_mod.dirty(baseline) == []
    assert baseline_mod.diff(baseline, baseline_mod.take(pbs)) == []
