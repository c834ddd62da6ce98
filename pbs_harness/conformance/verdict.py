"""The verdicts of a run: one per OpenPBS version, a row per catalogue interface with its status,
the outcomes of its tests, its guards, its tests and the differences they recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pbs_harness.conformance import clusters, guards, tags
from pbs_harness.conformance.catalogue import Catalogue, Interface
from pbs_harness.conformance.status import STATUS_ORDER, Status, decide, outcome_counts
from pbs_harness.conformance.tags import short


@dataclass
class InterfaceResult:
    interface: Interface
    status: str
    tests: list[dict[str, Any]] = field(default_factory=list)
    untested: list[str] = field(default_factory=list)  # tagged tests that did not run
    differences: list[dict[str, str]] = field(default_factory=list)
    known_bugs: int = 0  # tagged tests that xfailed while the interface passed (each pins one OpenPBS bug)
    outcomes: dict[str, int] = field(default_factory=dict)  # passed/failed/xfailed/skipped of the tagged tests
    guards: list[str] = field(default_factory=list)  # test ids ("path::test") that guard the interface
    weakly_guarded: str | None = None  # why, when no ordinary test guards it

    @property
    def id(self) -> str:
        return self.interface.id

    @property
    def label(self) -> str:
        return Status(self.status, self.known_bugs).label

    def guarded_by(self, test: dict[str, Any]) -> bool:
        return guards.guards_test(self.id, test, self.guards)


@dataclass
class Verdict:
    """The statuses of one OpenPBS build's clusters (a run of one build has one verdict)."""

    version: str  # the build's name: its pbs_version, and its source when another build shares the version
    clusters: list[str]
    rows: list[InterfaceResult]
    source: dict[str, Any] | None = None  # its provenance as recorded (pbs_harness.conformance.provenance)


def run_guards(results: dict[str, Any]) -> dict[str, list[str]]:
    """{interface id: [test ids]} of the guards the run's tests carried (their results' "guards")."""
    found: dict[str, list[str]] = {}
    for test in results.get("tests", []):
        for ident in test.get("guards", []):
            if short(test["nodeid"]) not in found.setdefault(ident, []):
                found[ident].append(short(test["nodeid"]))
    return found


def build(
    cat: Catalogue, results: dict[str, Any], test_dir: Path, ran_guards: dict[str, list[str]] | None = None
) -> list[InterfaceResult]:
    """The rows of one verdict. An interface's guards are those the suites under test_dir declare
    plus those the run's tests carried (`ran_guards`, by default read from `results`): a results
    file of an older checkout still finds its guards."""
    tagged = tags.scan(test_dir)
    declared = guards.declared(test_dir)
    expected_failures = set(tags.marked(test_dir, "xfail"))
    ran_guards = run_guards(results) if ran_guards is None else ran_guards
    tests = results.get("tests", [])
    out = []
    for iface in cat:
        ran = [t for t in tests if iface.id in t.get("specs", [])]
        ran_ids = {short(t["nodeid"]) for t in ran}
        guarding = list(dict.fromkeys([*declared.get(iface.id, []), *ran_guards.get(iface.id, [])]))
        if guarding:
            status = decide(ran, [t for t in ran if guards.guards_test(iface.id, t, guarding)], guarding)
        else:  # nobody guards it: every tagged test decides (and the row says weakly guarded)
            status = decide(ran, ran, {*tagged.get(iface.id, []), *ran_ids})
        out.append(
            InterfaceResult(
                interface=iface,
                status=status.name,
                tests=ran,
                untested=[t for t in tagged.get(iface.id, []) if t not in ran_ids],
                differences=[d for t in tests for d in t.get("differences", []) if d.get("spec") == iface.id],
                known_bugs=_known_bugs(status, ran),
                outcomes=outcome_counts(ran),
                guards=guarding,
                weakly_guarded=guards.weakness(iface.id, guarding, expected_failures),
            )
        )
    return out


def _known_bugs(status: Status, ran: list[dict[str, Any]]) -> int:
    """The xfails shown next to a pass: every tagged test that xfailed, guard or not. Only guards
    decide the status, but a label must not say plain "pass" above a test that pinned an OpenPBS bug
    of the interface (#35: AS-3 "6 passed, 1 xfailed" read "pass" while others read "pass (1 known bug)")."""
    if status.name not in ("pass", "incomplete"):
        return status.known_bugs
    return max(status.known_bugs, sum(t["outcome"] == "xfailed" for t in ran))


def verdicts(cat: Catalogue, results: dict[str, Any], test_dir: Path) -> list[Verdict]:
    """One verdict per OpenPBS build of the run's clusters (clusters.split_by_version); the
    guards the run's tests carried count for every build."""
    ran_guards = run_guards(results)
    return [
        Verdict(version, names, build(cat, subset, test_dir, ran_guards), clusters.source_of_clusters(results, names))
        for version, names, subset in clusters.split_by_version(results)
    ]


def counts(rows: list[InterfaceResult]) -> dict[str, int]:
    return {s: sum(r.status == s for r in rows) for s in STATUS_ORDER if any(r.status == s for r in rows)}


def known_bugs(rows: list[InterfaceResult]) -> dict[str, int]:
    """{interface id: known bugs} of the interfaces whose guards pinned an OpenPBS bug next to passes."""
    return {r.id: r.known_bugs for r in rows if r.known_bugs}


def weakly_guarded(rows: list[InterfaceResult]) -> dict[str, str]:
    """{interface id: why} of the interfaces no ordinary test guards."""
    return {r.id: r.weakly_guarded for r in rows if r.weakly_guarded}
