"""The status of one catalogue interface in one verdict, from the outcomes of a run's tests.

The tests that decide are the interface's guards (pbs_harness.conformance.guards): those whose own
assertions would fail if OpenPBS stopped doing what the interface promises. An interface nobody
guards is decided by every test tagged with it. A red test is never hidden: any tagged test that
failed makes the interface `fail`, guard or not.

  fail         a tagged test failed, errored in setup/teardown, or passed although marked xfail
  pass         every guard ran, none failed, at least one passed; guards that xfailed are pinned
               OpenPBS bugs of one scenario, counted as known bugs: "pass (1 known bug)"; a guard
               skipped as not in this release counts as neither run nor missing
  incomplete   some guards passed while others did not run or skipped (known bugs are counted
               here too), or only tests that do not guard it ran
  xfail        no guard passed and at least one is a known failure of OpenPBS
  skipped      every guard that ran was skipped (the reason is shown)
  not in this release
               every guard that ran was skipped because the OpenPBS under test lacks a feature
               it needs (pbs_harness.suite.release_features); a failed tagged test still makes it fail
  not run      tests exist but none ran in this run
  not covered  no test is tagged with the interface
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from pbs_harness.conformance.tags import short

NOT_IN_RELEASE = "not in this release"
STATUS_ORDER = ("fail", "xfail", "incomplete", "skipped", NOT_IN_RELEASE, "not run", "not covered", "pass")
# The counts shown; error and xpassed count as failed, a skip for a feature the release lacks apart.
OUTCOMES = ("passed", "failed", "xfailed", "skipped", NOT_IN_RELEASE)
FAILED = frozenset({"failed", "error", "xpassed"})


@dataclass(frozen=True)
class Status:
    name: str  # one of STATUS_ORDER
    known_bugs: int = 0  # guards that xfailed while others passed

    @property
    def label(self) -> str:
        if not self.known_bugs:
            return self.name
        return f"{self.name} ({self.known_bugs} known bug{'s' if self.known_bugs > 1 else ''})"


def outcome_counts(tests: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How many tests passed, failed, xfailed and were skipped (each key present, zeros included)."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for test in tests:
        outcome = "failed" if test["outcome"] in FAILED else test["outcome"]
        outcome = NOT_IN_RELEASE if test.get("not_in_release") else outcome
        if outcome in counts:
            counts[outcome] += 1
    return counts


def decide(ran: Sequence[dict[str, Any]], deciding: Sequence[dict[str, Any]], deciders: Collection[str]) -> Status:
    """The status from the tests tagged with the interface that ran (`ran`), those of them that
    decide (`deciding`: the guards that ran, or all of `ran` when no guard is declared) and every
    deciding test declared (`deciders`: short ids of the guards, or of all tagged tests)."""
    if not ran:
        return Status("not run" if deciders else "not covered")
    if any(t["outcome"] in FAILED for t in ran):
        return Status("fail")
    # A test skipped because the release lacks a feature it needs tests nothing this release has.
    present = [t for t in deciding if not t.get("not_in_release")]
    if deciding and not present:
        return Status(NOT_IN_RELEASE)
    return _by_guards(present, set(deciders) - {short(t["nodeid"]) for t in deciding})


def _by_guards(deciding: Sequence[dict[str, Any]], unrun: set[str]) -> Status:
    """The status from the deciding tests that ran for what this release has, none failed."""
    outcomes = [t["outcome"] for t in deciding]
    if "passed" not in outcomes:
        if "xfailed" in outcomes:
            return Status("xfail")
        # every guard that ran was skipped, or none ran (only other tagged tests did)
        return Status("skipped" if outcomes else "incomplete")
    known_bugs = outcomes.count("xfailed")
    if unrun or "skipped" in outcomes:
        return Status("incomplete", known_bugs)
    return Status("pass", known_bugs)
