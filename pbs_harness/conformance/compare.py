"""A behaviour diff between two OpenPBS builds' conformance reports (`report --compare A B`).

Per interface: its status in each build, the tagged tests whose outcome differs, and the
spec-vs-OpenPBS differences that appear in B or disappear from A. Differences are matched on
their words with each report's host names and job/reservation ids put aside (`<host>`, `<id>`):
two clusters name their hosts differently, and a job id is never the same twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pbs_harness.conformance.builds import Build
from pbs_harness.conformance.status import NOT_IN_RELEASE

NOT_RUN = "not run"
ABSENT = "absent"  # the report has no such interface or test (e.g. an older catalogue)


@dataclass(frozen=True)
class TestChange:
    nodeid: str
    a: str  # outcome in A: passed, failed, ..., "not in this release", "not run" or "absent"
    b: str

    @property
    def name(self) -> str:
        return self.nodeid.split("::", 1)[-1]


@dataclass
class InterfaceChange:
    id: str
    feature: str
    title: str
    a: str  # status label in A ("absent" when A has no such interface)
    b: str
    a_status: str
    b_status: str
    tests: list[TestChange] = field(default_factory=list)  # only those whose outcome differs
    appeared: list[dict[str, str]] = field(default_factory=list)  # differences in B, not in A
    disappeared: list[dict[str, str]] = field(default_factory=list)  # differences in A, not in B

    @property
    def status_changed(self) -> bool:
        return self.a != self.b

    @property
    def changed(self) -> bool:
        return self.status_changed or bool(self.tests or self.appeared or self.disappeared)

    @property
    def what_changed(self) -> str:
        """ "status, tests, differences" (the parts that differ), or "-"."""
        parts = [
            name
            for name, on in (
                ("status", self.status_changed),
                ("tests", self.tests),
                ("differences", self.appeared or self.disappeared),
            )
            if on
        ]
        return ", ".join(parts) or "-"


@dataclass
class Comparison:
    a: Build
    b: Build
    rows: list[InterfaceChange]

    def summary(self) -> dict[str, int]:
        tests = {t.nodeid for r in self.rows for t in r.tests}
        return {
            "interfaces": len(self.rows),
            "status changed": sum(r.status_changed for r in self.rows),
            "tests with another outcome": len(tests),
            "differences that appear": sum(len(r.appeared) for r in self.rows),
            "differences that disappear": sum(len(r.disappeared) for r in self.rows),
        }


def outcome_of(test: dict[str, Any]) -> str:
    return NOT_IN_RELEASE if test.get("not_in_release") else str(test.get("outcome", "?"))


def outcomes(row: dict[str, Any] | None) -> dict[str, str]:
    """{nodeid: outcome} of an interface's tagged tests in one build (those that did not run: "not run")."""
    if row is None:
        return {}
    found = {str(t): NOT_RUN for t in row.get("untested", [])}
    found.update({str(t.get("nodeid")): outcome_of(t) for t in row.get("tests", []) if isinstance(t, dict)})
    return found


def _outcome(found: dict[str, str], nodeid: str) -> str:
    """The outcome of `nodeid` in one build; a parametrized case of a test the build did not run
    (listed without its parameters) did not run either."""
    if nodeid in found:
        return found[nodeid]
    return NOT_RUN if found.get(nodeid.split("[", 1)[0]) == NOT_RUN else ABSENT


def _test_ids(*found: dict[str, str]) -> list[str]:
    """Every test of both builds, a test listed without parameters left out where its cases are listed."""
    ids = list(dict.fromkeys(n for f in found for n in f))
    cases = {n.split("[", 1)[0] for n in ids if "[" in n}
    return [n for n in ids if n not in cases]


def _placeholders(text: str, hosts: list[str]) -> str:
    for host in sorted(hosts, key=len, reverse=True):
        text = re.sub(rf"(?<![\w-]){re.escape(host)}(?![\w-])", "<host>", text)
    return re.sub(r"\b[RSM]?\d+(?:\[\d*\])?\.<host>", "<id>", text)


def _keyed(row: dict[str, Any] | None, hosts: list[str]) -> dict[tuple[str, str, str], dict[str, str]]:
    """An interface's differences by their words (hosts and ids put aside), first one kept."""
    found: dict[tuple[str, str, str], dict[str, str]] = {}
    for d in (row or {}).get("differences", []):
        if isinstance(d, dict):
            key = (
                str(d.get("spec", "")),
                _placeholders(str(d.get("spec_says", "")), hosts),
                _placeholders(str(d.get("openpbs_does", "")), hosts),
            )
            found.setdefault(key, d)
    return found


def _title(row_a: dict[str, Any] | None, row_b: dict[str, Any] | None) -> tuple[str, str]:
    iface = (row_b or row_a or {}).get("interface") or {}
    return str(iface.get("feature", "")), str(iface.get("title", ""))


def compare(a: Build, b: Build) -> Comparison:
    ids = list(dict.fromkeys([*a.interfaces, *b.interfaces]))
    rows = []
    for ident in ids:
        row_a, row_b = a.interfaces.get(ident), b.interfaces.get(ident)
        feature, title = _title(row_a, row_b)
        out_a, out_b = outcomes(row_a), outcomes(row_b)
        tests = [
            TestChange(nodeid, _outcome(out_a, nodeid), _outcome(out_b, nodeid))
            for nodeid in _test_ids(out_a, out_b)
            if _outcome(out_a, nodeid) != _outcome(out_b, nodeid)
        ]
        diffs_a, diffs_b = _keyed(row_a, a.hosts), _keyed(row_b, b.hosts)
        rows.append(
            InterfaceChange(
                id=ident,
                feature=feature or ident.split("-", 1)[0],
                title=title,
                a=a.status(ident),
                b=b.status(ident),
                a_status=str((row_a or {}).get("status", ABSENT)),
                b_status=str((row_b or {}).get("status", ABSENT)),
                tests=tests,
                appeared=[d for k, d in diffs_b.items() if k not in diffs_a],
                disappeared=[d for k, d in diffs_a.items() if k not in diffs_b],
            )
        )
    return Comparison(a, b, rows)
