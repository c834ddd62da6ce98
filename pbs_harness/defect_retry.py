"""One more attempt, on a fresh job, for a test that met a known OpenPBS race (pbs_harness.defects).

A test whose wait timed out because of a diagnosed race (the job starter stuck reading failed host
names) says nothing about the behaviour it was written for. So its whole scenario runs once more:
function-scoped fixtures are torn down (the stuck job deleted, faults healed, baseline checked)
and set up again, then the test body runs on a new job. The interface still gets a verdict; the
run keeps both attempts: the first attempt's evidence folder (`...-attempt1`), a `known_defect`
property on the test's reports, and the count in the conformance report's header. Meeting the
race on every attempt (three by default) is an xfail naming it and saying so; the report's header
counts such tests. It is not made a failure: the job-array test meets the starter race on attempt
after attempt (in 3 of the 4 runs where it met it at all), so a failure there would turn runs red
for a known race, not for a regression (docs/test-core.md, "A race met on every attempt").
A test without a diagnosed defect runs exactly once, as pytest would run it.
"""

from __future__ import annotations

from typing import NoReturn

import pytest
from _pytest.runner import call_and_report

DEFECT_KEY = pytest.StashKey[str]()
ATTEMPT_KEY = pytest.StashKey[int]()
PROPERTY = "known_defect"  # user property: "attempt N: <diagnosis>", one per attempt that met it and was retried
EVERY_ATTEMPT = "known_defect_every_attempt"  # user property: N, when all N attempts met it (an xfail)
# Attempts more for a test that met a race: most tests pass on the second attempt; the job-array test
# (two subjobs, each started with a failed sister) often meets the starter race twice in a row.
DEFAULT_RETRIES = 2


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("pbs-harness").addoption(
        "--defect-retries",
        type=int,
        default=DEFAULT_RETRIES,
        help=(
            "attempts more, each on a fresh job, for a test that met a known OpenPBS race; met on every "
            f"attempt it is an xfail saying so (default {DEFAULT_RETRIES}; 0: none)"
        ),
    )


def attempt_of(item: pytest.Item) -> int:
    """The attempt of `item` now running (1 for a test that met no known defect)."""
    return item.stash.get(ATTEMPT_KEY, 1)


def met(request: pytest.FixtureRequest, diagnosis: str) -> NoReturn:
    """A test saw a known intermittent OpenPBS race by its exact signature: record it (the protocol
    runs the scenario again on a fresh job) and end this attempt (`end_attempt`)."""
    end_attempt(request.node, diagnosis)


def end_attempt(item: pytest.Item, diagnosis: str, detail: str = "") -> NoReturn:
    """End an attempt that met a known race as an xfail naming it (another attempt follows while
    retries are left); on the last of several attempts it says that every attempt met it."""
    item.stash[DEFECT_KEY] = diagnosis
    attempt = attempt_of(item)
    retries = item.config.getoption("--defect-retries", 0) or 0
    if attempt > 1 and attempt > retries:
        item.user_properties.append((EVERY_ATTEMPT, attempt))
        pytest.xfail(f"{diagnosis} (met on every one of {attempt} attempts, each on a fresh job){detail}")
    pytest.xfail(f"{diagnosis}{detail}")


def uses_cluster(item: pytest.Item) -> bool:
    """Whether the test touches a cluster (asks for one of the cluster fixtures)."""
    return bool({"cluster", "pbs", "nemesis"} & set(getattr(item, "fixturenames", ())))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    retries = item.config.getoption("--defect-retries", 0) or 0
    if retries <= 0 or not uses_cluster(item):
        return None  # pytest's own protocol
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    attempt = 1
    while True:
        item.stash[ATTEMPT_KEY] = attempt
        reports, again = _attempt(item, nextitem, may_retry=attempt <= retries)
        if not again:
            break
        item.user_properties.append((PROPERTY, f"attempt {attempt}: {item.stash[DEFECT_KEY]}"))
        del item.stash[DEFECT_KEY]
        attempt += 1
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def _attempt(item: pytest.Item, nextitem: pytest.Item | None, may_retry: bool) -> tuple[list[pytest.TestReport], bool]:
    """Setup, call and teardown of one attempt, unlogged (as pytest's runtestprotocol does them);
    whether to run another one. Before another attempt only the test's own (function-scoped)
    fixtures are torn down: teardown is told the next node is the test's parent (its module or
    class), so those stay set up for the same item's next attempt."""
    if hasattr(item, "_request") and not item._request:
        item._initrequest()
    reports = [call_and_report(item, "setup", log=False)]
    if reports[0].passed:
        reports.append(call_and_report(item, "call", log=False))
    again = may_retry and DEFECT_KEY in item.stash and not (item.session.shouldfail or item.session.shouldstop)
    follow = item.parent if again else (None if item.session.shouldfail or item.session.shouldstop else nextitem)
    reports.append(call_and_report(item, "teardown", log=False, nextitem=follow))
    if hasattr(item, "_request"):
        item._request = False
        item.funcargs = None
    if again and reports[-1].failed:
        again = False  # the cluster is not back at its baseline: no fair second attempt; report this one
    return reports, again
