"""PTL's own JSON results (`pbs_benchpress --db-type=json`, written by ptl_report_json.PTLJsonData)
turned into per-test outcomes and counts.

The file holds `testsuites.<Class>.testcases.<test>.results.<repeat>` with `status` (PASS, FAIL,
ERROR, SKIP, TIMEDOUT), `status_data` (the reason) and `duration` (a timedelta string such as
`0:01:02.345678`). A test PTL never reached (setUpClass failed, the run was killed) is absent: the
caller compares with what it asked for and counts those as not run.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass

# PTL's statuses, and which of our counts each one goes to. ERROR (an exception outside an assert,
# in setUp too) and TIMEDOUT are failures of the test as far as a reader of the table is concerned.
PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
STATUS_COUNT = {"PASS": PASSED, "FAIL": FAILED, "ERROR": FAILED, "TIMEDOUT": FAILED, "SKIP": SKIPPED}

_DURATION = re.compile(r"^(?:(\d+) days?, )?(\d+):(\d{2}):(\d{2}(?:\.\d+)?)$")


class ResultsError(ValueError):
    """The file is not PTL's JSON results."""


@dataclass(frozen=True)
class Outcome:
    test_class: str
    test: str
    status: str  # PTL's word
    reason: str  # status_data: the assertion or exception text, or the skip reason
    seconds: float

    @property
    def count(self) -> str:
        return STATUS_COUNT.get(self.status, FAILED)


def seconds(duration: str) -> float:
    """`0:01:02.345678` (str(timedelta)) -> 62.345678."""
    m = _DURATION.match(duration.strip())
    if not m:
        raise ResultsError(f"not a PTL duration: {duration!r}")
    days, hours, minutes, secs = m.groups()
    return int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(secs)


def parse(text: str) -> list[Outcome]:
    """Every test's outcome in a PTL JSON results file (the last repeat when a test was repeated)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"not JSON: {exc}") from exc
    suites = data.get("testsuites") if isinstance(data, dict) else None
    if not isinstance(suites, dict):
        raise ResultsError("no `testsuites` object: not PTL's JSON results")
    outcomes = []
    for class_name, suite in suites.items():
        for test, case in (suite.get("testcases") or {}).items():
            runs = case.get("results") or {}
            if not runs:
                continue
            last = runs[max(runs, key=int)]
            outcomes.append(
                Outcome(
                    class_name,
                    test,
                    str(last["status"]),
                    str(last.get("status_data", "")),
                    seconds(str(last.get("duration", "0:00:00"))),
                )
            )
    return outcomes


def counts(outcomes: list[Outcome], asked: int) -> dict[str, int]:
    """passed/failed/skipped of the outcomes, and not_run: asked for but absent from the results."""
    by = Counter(o.count for o in outcomes)
    return {
        "tests": asked,
        PASSED: by[PASSED],
        FAILED: by[FAILED],
        SKIPPED: by[SKIPPED],
        "not_run": max(0, asked - len(outcomes)),
    }
