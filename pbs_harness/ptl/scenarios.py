"""PTL and our suites over the same scenarios: the headline of bench-ptl (issue #30).

A whole suite's wall time on either side includes tests the other side does not have (53 of our
reliable-startup tests against PTL's 21), so it is no comparison of the two frameworks. Here each PTL
test that ran is paired with the tests of ours its row in docs/suites/<feature>.md names (the "PTL
scenario" tables, pbs_harness.ptl.mapping), and the two sides are summed over those pairs only:

- PTL: each paired PTL test's own duration (PTL's JSON results: set-up, test and tear-down);
- ours: each of our tests named by a paired row, counted once however many rows name it, with its own
  duration (pytest's JUnit `time`: set-up, call and tear-down; every parameter of it), taken from the
  run of our suites on the same cluster(s).

Both are per-test durations, so the figure does not depend on how many clusters ran each side at once.
A PTL test whose row names none of ours (a reason instead) is left out and counted apart, as is one of
ours that did not run.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pbs_harness.ptl import mapping
from pbs_harness.ptl.results import Outcome


@dataclass(frozen=True)
class OurCase:
    name: str  # the test function (parameters stripped)
    seconds: float
    outcome: str  # passed, failed, xfailed, skipped
    param: str = ""  # the parameter id in brackets, e.g. "[qsub-true]", or ""


def our_cases(junit_xml: str) -> list[OurCase]:
    """Every testcase of a pytest JUnit file, by function name, with its time and outcome."""
    root = ET.fromstring(junit_xml)  # noqa: S314 - our own pytest's file
    out = []
    for case in root.iter("testcase"):
        kids = {child.tag: child for child in case}
        if "failure" in kids or "error" in kids:
            outcome = "failed"
        elif "skipped" in kids:
            outcome = "xfailed" if kids["skipped"].get("type") == "pytest.xfail" else "skipped"
        else:
            outcome = "passed"
        full = case.get("name", "")
        name = full.split("[", 1)[0]
        out.append(OurCase(name, float(case.get("time") or 0), outcome, full[len(name) :]))
    return out


@dataclass
class FeatureScenarios:
    feature: str
    ptl_paired: list[str] = field(default_factory=list)  # PTL tests that ran and have a counterpart of ours
    ptl_seconds: float = 0.0
    ours_paired: list[str] = field(default_factory=list)  # our tests named by those rows that ran
    ours_seconds: float = 0.0
    ptl_unpaired: list[str] = field(default_factory=list)  # ran, but the row names none of ours (a reason)
    ours_missing: list[str] = field(default_factory=list)  # named by a paired row, not in our run

    @property
    def ratio(self) -> float | None:
        return round(self.ptl_seconds / self.ours_seconds, 2) if self.ours_seconds > 0 else None


def pair(feature: str, ptl: Iterable[Outcome], doc_markdown: str, ours: Iterable[OurCase]) -> FeatureScenarios:
    """The same-scenario sums of one feature: PTL outcomes that ran, the feature's mapping doc, our cases.

    A row naming `test_x[id]` pairs that parameter of ours; `test_x`, or an id our run does not have (a row
    describing it in words), pairs every parameter of test_x. Each case of ours counts once."""
    rows = mapping.counterparts(doc_markdown)
    by_name: dict[str, list[OurCase]] = {}
    for case in ours:
        by_name.setdefault(case.name, []).append(case)
    result = FeatureScenarios(feature)
    chosen: dict[tuple[str, str], OurCase] = {}
    named: dict[str, None] = {}
    for outcome in ptl:
        cases = rows.get(outcome.test, [])
        if not cases:
            result.ptl_unpaired.append(outcome.test)
            continue
        result.ptl_paired.append(outcome.test)
        result.ptl_seconds += outcome.seconds
        for case in cases:
            name, param = case.split("[", 1)[0], case[len(case.split("[", 1)[0]) :]
            named[name] = None
            mine = by_name.get(name, [])
            exact = [c for c in mine if param and c.param == param]
            for c in exact or mine:
                chosen[(c.name, c.param)] = c
    for name in named:
        if name in by_name:
            result.ours_paired.append(name)
        else:
            result.ours_missing.append(name)
    result.ours_seconds = round(sum(c.seconds for c in chosen.values()), 1)
    result.ptl_seconds = round(result.ptl_seconds, 1)
    return result


def overall(per_feature: Mapping[str, FeatureScenarios]) -> dict[str, float | int | None]:
    ptl = sum(f.ptl_seconds for f in per_feature.values() if f.ratio is not None)
    ours = sum(f.ours_seconds for f in per_feature.values() if f.ratio is not None)
    return {
        "ptl_tests": sum(len(f.ptl_paired) for f in per_feature.values()),
        "ptl_seconds": round(ptl, 1),
        "ours_tests": sum(len(f.ours_paired) for f in per_feature.values()),
        "ours_seconds": round(ours, 1),
        "ratio": round(ptl / ours, 2) if ours > 0 else None,
    }
