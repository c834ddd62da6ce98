"""Whether a test failed, for fixtures that act on it in teardown (keep state for the evidence, collect
evidence): the reports of its phases, recorded by the plugin's pytest_runtest_makereport as pytest
makes them (pytest's own recipe, "Making test result information available in fixtures")."""

from __future__ import annotations

import pytest

REPORTS_KEY = pytest.StashKey[dict[str, pytest.TestReport]]()
# Set when the call phase failed through the leak check that follows a body that passed (pbs_harness.suite.leaks).
LEAK_FOUND_KEY = pytest.StashKey[bool]()


def record(item: pytest.Item, report: pytest.TestReport) -> None:
    """Keep the report of one phase; a setup report starts a new attempt (pbs_harness.suite.defect_retry)."""
    if report.when == "setup":
        item.stash[REPORTS_KEY] = {}
    item.stash.setdefault(REPORTS_KEY, {})[report.when] = report


def reports(item: pytest.Item) -> dict[str, pytest.TestReport]:
    """The reports of the phases made so far (setup, call), by phase."""
    return item.stash.get(REPORTS_KEY, {})


def call_failed(item: pytest.Item) -> bool:
    """Whether the test's own body (its call phase) failed."""
    call = reports(item).get("call")
    return call is not None and call.failed


def body_failed(item: pytest.Item) -> bool:
    """Whether the test's body failed: its call phase, unless only the leak check after a body that
    passed failed it (then the test's work is gone already, and nothing is left to keep for evidence)."""
    return call_failed(item) and not item.stash.get(LEAK_FOUND_KEY, False)


def failed(item: pytest.Item) -> bool:
    """Whether any phase made so far failed (its setup or its body)."""
    return any(r.failed for r in reports(item).values())


def xfailed(item: pytest.Item) -> bool:
    """Whether the test's body failed as its xfail marker expected (a known OpenPBS bug)."""
    call = reports(item).get("call")
    return call is not None and call.skipped and hasattr(call, "wasxfail")
