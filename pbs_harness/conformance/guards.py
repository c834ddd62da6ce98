"""Which tests guard which spec interface, and whether an interface is only weakly guarded.

A test guards an interface when its own assertions would fail if OpenPBS stopped doing what the
interface promises: an exact job or node state, a log line, a parsed accounting record compared with
the job. It declares so with `@pytest.mark.guards("RJS-1", ...)`, a subset of its `spec` ids (spec:
the test exercises the interface; guards: it would catch a regression of it). A test that only
waits for something, reads back an attribute it set, or checks the absence of an error guards
nothing. An interface is "weakly guarded" when no test guards it or every guard is an expected
failure as a whole (strict xfail on the test): then no assertion of the suites stands between a
regression and a green run.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from pbs_harness.conformance import tags

MARKER = "guards"

# Interfaces no test guards yet, each with why (the report shows it next to "weakly guarded").
# tests/unit/test_guards.py fails for an unguarded interface missing here, and for an entry here
# that has a guard by now. Empty: every catalogue interface has at least one guard.
UNGUARDED: dict[str, str] = {
    "RV-9": "every guard is a strict xfail of one OpenPBS bug; test_a_running_reservation_in_conflict_is_not_"
    "reconfirmed still fails on any other assertion (raises=KeptHostCpusLeak: only its leak check's "
    "finding of the kept host's cpus is expected, issue #30)",
}

NO_GUARD = "no test asserts it directly: its tests only wait, read back what they set, or xfail"
ONLY_XFAIL = "every guard is an expected failure (xfail) as a whole"


def declared(test_dir: Path) -> dict[str, list[str]]:
    """{interface id: [test ids that declare a guard of it]} from the suites' source."""
    return tags.scan(test_dir, MARKER)


def guards_test(interface: str, test: dict[str, Any], guard_tests: Collection[str]) -> bool:
    """Whether a test of the run guards the interface: by the guards it carried (a parameter may
    guard what another parameter of the same test does not), else (a results file written before
    guards existed) by its test id among the declared guards."""
    if "guards" in test:
        return interface in test["guards"]
    return tags.short(test["nodeid"]) in guard_tests


def weakness(interface: str, guard_tests: Collection[str], expected_failures: Collection[str]) -> str | None:
    """Why the interface is weakly guarded, or None when at least one guard is an ordinary test."""
    if not guard_tests:
        return UNGUARDED.get(interface, NO_GUARD)
    if all(t in expected_failures for t in guard_tests):
        return ONLY_XFAIL
    return None


def marker_problem(spec_ids: Collection[str], guard_ids: Collection[str], known: Collection[str]) -> str | None:
    """What is wrong with one test's guards marker, or None: every id must be a catalogue entry
    the test is also tagged with (a test guards only what it exercises)."""
    unknown = sorted(set(guard_ids) - set(known))
    if unknown:
        return f"guards marker names unknown catalogue entries {unknown}"
    untagged = sorted(set(guard_ids) - set(spec_ids))
    if untagged:
        return f"guards marker names {untagged}, which its spec marker does not: add them to spec(...) too"
    return None


def untagged_guards(specs: Mapping[str, list[str]], guards: Mapping[str, list[str]]) -> list[str]:
    """ "<test> guards <id>" for each guard a test declares without the spec tag (static form of marker_problem)."""
    return [f"{t} guards {i}" for i, tests in guards.items() for t in tests if t not in specs.get(i, [])]
