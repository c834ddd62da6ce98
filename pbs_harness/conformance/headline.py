"""The one-line verdict of a run and its row per feature: what the first screen of conformance.html,
the top of conformance.md, the console and the CI job summary say first.

  PASS — 4/4 features conform · 209 tests: 200 passed, 9 xfailed (9 known OpenPBS bugs), 0 failed
    · OpenPBS master cd7ab5e
  FAIL — 3/4 features conform, failed: RJS-5, RD-2 · 209 tests: 198 passed, 9 xfailed (...), 2 failed · OpenPBS ...

FAIL when any test failed (error and xpassed count as failed: an xpass means a pinned bug is gone
and its xfail must go) or any interface failed; NO TESTS when none ran; PASS otherwise. A feature
conforms when some interface of it was decided by a test that ran and none failed. Known OpenPBS
bugs are the distinct xfail reasons: a strict xfail names exactly one bug (docs: a parametrised
test may pin one bug in several cases).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pbs_harness.conformance import clusters
from pbs_harness.conformance.catalogue import Catalogue
from pbs_harness.conformance.status import FAILED
from pbs_harness.conformance.verdict import Verdict

NOT_RUN = ("not run", "not covered")


@dataclass(frozen=True)
class FeatureRow:
    key: str
    title: str
    state: str  # "conforms", "FAIL" or "not run"
    interfaces: int
    passed: int  # interfaces whose status is pass
    failed: list[str]  # ids of the failed interfaces
    known_bugs: int  # tests tagged with its interfaces that xfailed (each pins an OpenPBS bug)
    other: int  # interfaces neither pass nor fail (incomplete, skipped, not run, ...)
    differences: int


@dataclass(frozen=True)
class Headline:
    state: str  # PASS, FAIL or NO TESTS
    features: list[FeatureRow]
    tests: dict[str, int]  # total, passed, failed, xfailed, skipped
    known_bugs: int
    builds: list[str]
    failed_tests: list[str] = field(default_factory=list)  # node ids
    failed_outside: int = 0  # failed tests that no interface's row lists

    @property
    def conforming(self) -> int:
        return sum(f.state == "conforms" for f in self.features)

    @property
    def failed_interfaces(self) -> list[str]:
        return [i for f in self.features for i in f.failed]

    def line(self) -> str:
        """The verdict in one line (plain text: the markdown and the console print it as is)."""
        ran = [f for f in self.features if f.state != "not run"]
        features = f"{self.conforming}/{len(self.features)} features conform"
        if len(ran) < len(self.features):
            features += f" ({len(self.features) - len(ran)} not run)"
        if self.failed_interfaces:
            features += ", failed: " + ", ".join(self.failed_interfaces)
        if self.failed_outside:
            features += f" (and {self.failed_outside} failed test(s) outside the catalogue)"
        return " · ".join([f"{self.state} — {features}", self.tests_text(), self.builds_text()])

    def tests_text(self) -> str:
        t = self.tests
        bugs = f" ({self.known_bugs} known OpenPBS bug{'s' if self.known_bugs != 1 else ''})" if t["xfailed"] else ""
        skipped = f", {t['skipped']} skipped" if t["skipped"] else ""
        return f"{t['total']} tests: {t['passed']} passed, {t['xfailed']} xfailed{bugs}, {t['failed']} failed{skipped}"

    def builds_text(self) -> str:
        return "OpenPBS " + (", ".join(self.builds) or "unknown (no test reached a cluster)")


def build_name(env: dict[str, Any]) -> str:
    """ "master cd7ab5e" from openpbs-master-cd7ab5e.tar.gz, "v23.06.06 be361a1" from a tag's archive
    and its commit; the pbs_version and what is known of the source otherwise."""
    source = clusters.source_of(env)
    version = clusters.version_of(env)
    if source is None:
        return version
    commit = source.commit[:7]
    name = source.archive
    for prefix in ("openpbs-", "openpbs_"):
        name = name.removeprefix(prefix)
    for suffix in (".tar.gz", ".tgz", ".tar.xz", ".tar.bz2", ".zip", ".tar"):
        name = name.removesuffix(suffix)
    if commit and name.endswith(f"-{commit}"):
        name = name.removesuffix(f"-{commit}")
    if name:
        return f"{name} {commit}".strip()
    if commit:
        return f"{version} {commit}"
    return source.short()


def _feature_rows(cat: Catalogue, verdicts: list[Verdict]) -> list[FeatureRow]:
    out = []
    for key, feature in cat.features.items():
        rows = [r for v in verdicts for r in v.rows if r.interface.feature == key]
        failed = list(dict.fromkeys(r.id for r in rows if r.status == "fail"))
        decided = [r for r in rows if r.status not in NOT_RUN]
        state = "FAIL" if failed else ("conforms" if decided else "not run")
        out.append(
            FeatureRow(
                key=key,
                title=feature.title,
                state=state,
                interfaces=len({r.id for r in rows}),
                passed=sum(r.status == "pass" for r in rows),
                failed=failed,
                # distinct tests: one xfail tagged with three interfaces of a feature is one bug
                known_bugs=len({t["nodeid"] for r in rows for t in r.tests if t["outcome"] == "xfailed"}),
                other=sum(r.status not in ("pass", "fail") for r in rows),
                differences=sum(len(r.differences) for r in rows),
            )
        )
    return out


def test_counts(tests: list[dict[str, Any]]) -> dict[str, int]:
    outcomes = [t.get("outcome") for t in tests]
    return {
        "total": len(outcomes),
        "passed": outcomes.count("passed"),
        "failed": sum(o in FAILED for o in outcomes),
        "xfailed": outcomes.count("xfailed"),
        "skipped": outcomes.count("skipped"),
    }


def of(cat: Catalogue, verdicts: list[Verdict], results: dict[str, Any]) -> Headline:
    tests = results.get("tests", [])
    counted = test_counts(tests)
    features = _feature_rows(cat, verdicts)
    failed_tests = [t["nodeid"] for t in tests if t.get("outcome") in FAILED]
    listed = {t["nodeid"] for v in verdicts for r in v.rows if r.status == "fail" for t in r.tests}
    if counted["total"] == 0:
        state = "NO TESTS"
    elif failed_tests or any(f.failed for f in features):
        state = "FAIL"
    else:
        state = "PASS"
    reasons = {str(t.get("xfail_reason") or t["nodeid"]) for t in tests if t.get("outcome") == "xfailed"}
    return Headline(
        state=state,
        features=features,
        tests=counted,
        known_bugs=len(reasons),
        builds=list(dict.fromkeys(build_name(e) for e in clusters.environments(results))),
        failed_tests=failed_tests,
        failed_outside=sum(n not in listed for n in failed_tests),
    )
