"""reports/bench-ptl.json and .md: PTL's files next to our suites, with the wall-time ratio.

One JSON object per PTL file. Our suites are per feature, not per PTL file, so every file of a
feature carries its feature suite's figures (`ours_*`), and the ratio is given per feature (all its
PTL files' seconds over its suite's seconds) and for the whole run, never per file.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pbs_harness.ptl.results import Outcome
from pbs_harness.ptl.scenarios import FeatureScenarios, overall


@dataclass
class FileResult:
    feature: str
    ptl_file: str
    ptl_tests: int
    ptl_passed: int
    ptl_failed: int
    ptl_skipped: int
    ptl_seconds: float
    ptl_not_run: int = 0
    ptl_tests_in_file: int = 0  # the file's selected tests; more than ptl_tests when a sample ran
    failures: list[dict[str, str]] = field(default_factory=list)  # test, status, first line of the reason
    skips: list[dict[str, str]] = field(default_factory=list)

    @property
    def full_estimate(self) -> float:
        """Seconds the whole file would take, in proportion to the sample that ran (= ptl_seconds when whole)."""
        if not self.ptl_tests or self.ptl_tests >= self.ptl_tests_in_file:
            return self.ptl_seconds
        return round(self.ptl_seconds * self.ptl_tests_in_file / self.ptl_tests, 1)


@dataclass(frozen=True)
class SuiteResult:
    feature: str
    tests: int
    passed: int
    xfailed: int
    failed: int
    skipped: int
    seconds: float


def suite_counts(junit_xml: str) -> dict[str, int]:
    """tests/passed/xfailed/failed/skipped of a pytest JUnit file (xfails are pytest's skipped with
    type pytest.xfail; an xpass of a strict xfail is a failure)."""
    root = ET.fromstring(junit_xml)  # noqa: S314 - our own pytest's file
    counts = {"tests": 0, "passed": 0, "xfailed": 0, "failed": 0, "skipped": 0}
    for case in root.iter("testcase"):
        counts["tests"] += 1
        kids = {child.tag: child for child in case}
        if "failure" in kids or "error" in kids:
            counts["failed"] += 1
        elif "skipped" in kids:
            xfail = kids["skipped"].get("type") == "pytest.xfail"
            counts["xfailed" if xfail else "skipped"] += 1
        else:
            counts["passed"] += 1
    return counts


_RAISED = re.compile(r"^[A-Za-z_.]*(Error|Exception|Failure|Timeout)\b.*")


def first_line(text: str, width: int = 240) -> str:
    """What failed, from PTL's status_data (a traceback): the last `SomethingError: ...` line, else the
    last line (an assertEqual's diff follows its AssertionError line)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    raised = [ln for ln in lines if _RAISED.match(ln)]
    line = raised[-1] if raised else (lines[-1] if lines else "")
    return line[:width]


def file_result(
    feature: str, ptl_file: str, asked: int, outcomes: Iterable[Outcome], seconds: float, *, in_file: int = 0
) -> FileResult:
    outs = list(outcomes)
    failed = [o for o in outs if o.count == "failed"]
    skipped = [o for o in outs if o.count == "skipped"]
    return FileResult(
        feature=feature,
        ptl_file=ptl_file,
        ptl_tests=asked,
        ptl_passed=sum(o.count == "passed" for o in outs),
        ptl_failed=len(failed),
        ptl_skipped=len(skipped),
        ptl_seconds=round(seconds, 1),
        ptl_not_run=max(0, asked - len(outs)),
        ptl_tests_in_file=max(in_file, asked),
        failures=[{"test": o.test, "status": o.status, "reason": first_line(o.reason)} for o in failed],
        skips=[{"test": o.test, "reason": first_line(o.reason)} for o in skipped],
    )


def rows(files: list[FileResult], suites: dict[str, SuiteResult]) -> list[dict[str, object]]:
    out = []
    for f in files:
        s = suites.get(f.feature)
        out.append(
            {
                "feature": f.feature,
                "ptl_file": f.ptl_file,
                "ptl_tests": f.ptl_tests,
                "ptl_passed": f.ptl_passed,
                "ptl_failed": f.ptl_failed,
                "ptl_skipped": f.ptl_skipped,
                "ptl_seconds": f.ptl_seconds,
                "ours_tests": s.tests if s else None,
                "ours_passed": s.passed if s else None,
                "ours_seconds": s.seconds if s else None,
                "ptl_not_run": f.ptl_not_run,
                "ptl_tests_in_file": f.ptl_tests_in_file,
                "ptl_seconds_full_estimate": f.full_estimate,
                "ours_xfailed": s.xfailed if s else None,
                "ours_failed": s.failed if s else None,
                "ptl_failures": f.failures,
                "ptl_skips": f.skips,
            }
        )
    return out


def ratios(files: list[FileResult], suites: dict[str, SuiteResult], full: bool = False) -> dict[str, float | None]:
    """PTL seconds / ours seconds per feature and overall (features that both sides ran); with `full`,
    PTL's seconds estimated for the whole files from the sample that ran."""
    out: dict[str, float | None] = {}
    total_ptl = total_ours = 0.0
    for feature in dict.fromkeys(f.feature for f in files):
        ptl = sum(f.full_estimate if full else f.ptl_seconds for f in files if f.feature == feature)
        suite = suites.get(feature)
        if suite and suite.seconds > 0:
            out[feature] = round(ptl / suite.seconds, 2)
            total_ptl += ptl
            total_ours += suite.seconds
        else:
            out[feature] = None
    out["all"] = round(total_ptl / total_ours, 2) if total_ours else None
    return out


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.0f} s ({seconds / 60:.1f} min)"


def same_scenario_lines(paired: Mapping[str, FeatureScenarios]) -> list[str]:
    """The headline: PTL and ours over the same scenarios (pbs_harness.ptl.scenarios)."""
    total = overall(paired)
    lines = [
        "## Same scenarios (the headline)",
        "",
        f"PTL tests that ran and have a counterpart of ours, each with its own duration, against our tests their "
        f"rows name, each once with its own duration: PTL {total['ptl_tests']} tests {_minutes(total['ptl_seconds'])}, "
        f"ours {total['ours_tests']} tests {_minutes(total['ours_seconds'])}, ratio PTL/ours **{total['ratio']}**.",
        "",
        "| feature | PTL tests paired | PTL time | our tests paired | our time | ratio PTL/ours | PTL tests without "
        "a counterpart | our tests named but not run |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for f in paired.values():
        lines.append(
            f"| {f.feature} | {len(f.ptl_paired)} | {_minutes(f.ptl_seconds)} | {len(f.ours_paired)} "
            f"| {_minutes(f.ours_seconds)} | {'-' if f.ratio is None else f.ratio} "
            f"| {', '.join(f.ptl_unpaired) or '-'} | {', '.join(f.ours_missing) or '-'} |"
        )
    return [
        *lines,
        "",
        "## Whole files and whole suites (different scopes: no comparison of the frameworks)",
        "",
        "A PTL file's time is the sum of its parts' walls (what one cluster would spend on it); our suite's is its "
        "wall time on every cluster of the run at once. Neither the scopes nor the parallelism match: these rows "
        "are listed for completeness, the headline above is the comparison.",
        "",
    ]


def markdown(
    files: list[FileResult],
    suites: dict[str, SuiteResult],
    meta: dict[str, str],
    paired: Mapping[str, FeatureScenarios] | None = None,
) -> str:
    ratio, full = ratios(files, suites), ratios(files, suites, full=True)
    sampled = any(f.ptl_tests < f.ptl_tests_in_file for f in files)
    lines = [
        "# PTL side by side (`make bench-ptl`)",
        "",
        *(f"- {k}: {v}" for k, v in meta.items()),
        "",
        *(same_scenario_lines(paired) if paired else []),
        "| feature | PTL file | PTL tests run (of) | passed | failed | skipped | not run | PTL wall |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for f in files:
        lines.append(
            f"| {f.feature} | {f.ptl_file} | {f.ptl_tests} ({f.ptl_tests_in_file}) | {f.ptl_passed} | {f.ptl_failed} "
            f"| {f.ptl_skipped} | {f.ptl_not_run} | {_minutes(f.ptl_seconds)} |"
        )
    lines += [
        "",
        "| feature | PTL tests run (files) | PTL wall | our tests | passed | xfailed | failed | our wall "
        "| ratio PTL/ours | whole PTL files, estimated | ratio, estimated |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for feature in dict.fromkeys(f.feature for f in files):
        mine = [f for f in files if f.feature == feature]
        s = suites.get(feature)
        ours = (f"{s.tests} | {s.passed} | {s.xfailed} | {s.failed} | {_minutes(s.seconds)}" if s
                else "- | - | - | - | -")  # fmt: skip
        r, rf = ratio.get(feature), full.get(feature)
        lines.append(
            f"| {feature} | {sum(f.ptl_tests for f in mine)} ({len(mine)}) "
            f"| {_minutes(sum(f.ptl_seconds for f in mine))} | {ours} | {'-' if r is None else r} "
            f"| {_minutes(sum(f.full_estimate for f in mine))} | {'-' if rf is None else rf} |"
        )
    total_ours = sum(s.seconds for s in suites.values() if s.feature in ratio and ratio[s.feature] is not None)
    total_ptl = sum(f.ptl_seconds for f in files if ratio.get(f.feature) is not None)
    lines += [
        "",
        f"Whole run: PTL {_minutes(total_ptl)}, ours {_minutes(total_ours)}, ratio PTL/ours {ratio['all']}"
        + (f"; with PTL's whole files estimated from the sample (an estimate), {full['all']}." if sampled else "."),
    ]
    if sampled:
        lines += [
            "",
            "A sample ran (`--limit`): the estimate scales each file's measured wall by its selected tests over "
            "the tests that ran, set-up included; our suites always run whole.",
        ]
    failing = [(f, x) for f in files for x in f.failures]
    if failing:
        lines += [
            "",
            "## PTL failures",
            "",
            "| PTL file | test | status | last line of PTL's reason |",
            "|---|---|---|---|",
        ]
        lines += [f"| {f.ptl_file} | {x['test']} | {x['status']} | `{x['reason']}` |" for f, x in failing]
    skipping = [(f, x) for f in files for x in f.skips]
    if skipping:
        lines += ["", "## PTL skips", "", "| PTL file | test | reason |", "|---|---|---|"]
        lines += [f"| {f.ptl_file} | {x['test']} | `{x['reason']}` |" for f, x in skipping]
    lines += ["", "Analysis of the failures (environment or OpenPBS, and which side is right): docs/ptl.md.", ""]
    return "\n".join(lines)
