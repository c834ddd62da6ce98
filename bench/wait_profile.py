"""pytest plugin for bench/bench_parallel.py: what each test waits on.

Every `wait_until` of the harness (job states, log lines, node states, reservations: everything the
suites wait for goes through it) is timed with its description; each test's JUnit record gets a
property `waits`: the three longest kinds of wait (numbers blanked, so that job ids group) and their
seconds. Loaded with `-p wait_profile` and bench/ on PYTHONPATH; it changes no test's behaviour.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from pbs_harness.common import waits

ORIGINAL = waits.wait_until
CURRENT: list[tuple[str, float]] = []


def timed_wait_until(*args: Any, **kwargs: Any) -> Any:
    __tracebackhide__ = True
    start = time.monotonic()
    try:
        return ORIGINAL(*args, **kwargs)
    finally:
        CURRENT.append((str(kwargs.get("describe", "?")), time.monotonic() - start))


def summary(records: list[tuple[str, float]], top: int = 3) -> list[tuple[str, float]]:
    by_kind: Counter[str] = Counter()
    for describe, seconds in records:
        by_kind[re.sub(r"\d+", "N", describe)[:90]] += seconds
    return [(kind, round(seconds, 1)) for kind, seconds in by_kind.most_common(top)]


def pytest_collection_finish(session: pytest.Session) -> None:
    # The modules that imported wait_until by name (pbs_harness.pbs.*, evidence.logs, the suites).
    for module in list(sys.modules.values()):
        if getattr(module, "wait_until", None) is ORIGINAL:
            module.wait_until = timed_wait_until


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    if call.when == "setup":
        CURRENT.clear()
    if call.when == "teardown":
        item.user_properties.append(("waits", json.dumps(summary(CURRENT))))
    return (yield)
