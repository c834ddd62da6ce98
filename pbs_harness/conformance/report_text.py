"""What the markdown and HTML reports both say: the header (OpenPBS, clusters, run, counts, known
defects and bugs, weak guards) as markdown list lines, and the words of a row's cells."""

from __future__ import annotations

from typing import Any

from pbs_harness.conformance import clusters, provenance
from pbs_harness.conformance.status import OUTCOMES
from pbs_harness.conformance.verdict import InterfaceResult, Verdict, counts, known_bugs, weakly_guarded


def source_of(env: dict[str, Any]) -> provenance.Provenance:
    """The cluster's provenance; a results file of an older checkout recorded none."""
    return provenance.from_dict(env.get("provenance")) or provenance.unknown(str(env.get("pbs_version", "unknown")))


def source_line(env: dict[str, Any]) -> str:
    if not env:
        return "unknown (no test reached the cluster)"
    if env.get("provenance") is None:
        return "not recorded (a results file of a harness that did not read it)"
    return source_of(env).describe()


def header(results: dict[str, Any]) -> dict[str, Any]:
    env = results.get("environment", {})
    return {
        "openpbs_version": env.get("pbs_version", "unknown (no test reached the cluster)"),
        "openpbs_build": env.get("build", "unknown"),
        "openpbs_source": source_line(env),
        "provenance": provenance.to_dict(source_of(env)) if env.get("provenance") else None,
        "inventory": env.get("inventory", "unknown"),
        "server": env.get("server", "unknown"),
        "hosts": env.get("hosts", []),
        "clusters": [
            {
                "name": e.get("cluster", e.get("server", "?")),
                "openpbs_version": clusters.version_of(e),
                "openpbs_build": e.get("build", "unknown"),
                "openpbs_source": source_line(e),
                "provenance": provenance.to_dict(source_of(e)) if e.get("provenance") else None,
                "server": e.get("server", "unknown"),
                "inventory": e.get("inventory", "unknown"),
                "hosts": e.get("hosts", []),
            }
            for e in clusters.environments(results)
        ],
        "started": results.get("started", ""),
        "finished": results.get("finished", ""),
        "known_defects": known_defects(results),
        "baseline_repairs": baseline_repairs(results),
    }


def baseline_repairs(results: dict[str, Any]) -> list[dict[str, str]]:
    """What the harness repaired on the clusters (pbs_harness.suite.baseline): leftovers of an earlier run or
    of a server restart found at session start, and repairs after a test beyond deleting its work."""
    return [
        {"test": t["nodeid"].split("::")[-1], "cluster": t.get("cluster", ""), "repair": text}
        for t in results.get("tests", [])
        for text in t.get("baseline_repairs", [])
    ]


def repair_lines(h: dict[str, Any]) -> list[str]:
    repairs = h.get("baseline_repairs") or []
    if not repairs:
        return ["- Baseline repairs: none (every cluster was at its declared state, no test left anything to repair)"]
    title = "what the harness repaired: leftovers found at session start, repairs after a test"
    return [f"- **Baseline repairs** ({len(repairs)}): {title}"] + [
        f"  - {r['repair']} (with {r['test']}{' on ' + r['cluster'] if r['cluster'] else ''})" for r in repairs
    ]


def known_defects(results: dict[str, Any]) -> dict[str, int]:
    """How often this run met a known OpenPBS race (pbs_harness.suite.defect_retry): attempts that met it,
    tests that did, and of those how many then passed on a fresh job or met it on every attempt."""
    hit = [t for t in results.get("tests", []) if t.get("known_defects") or t.get("defect_every_attempt")]
    again = [t for t in hit if t.get("defect_every_attempt")]  # the last attempt met it too: a failure
    return {
        "attempts": sum(len(t.get("known_defects", [])) for t in hit) + len(again),
        "tests": len(hit),
        "then_passed": sum(t.get("outcome") == "passed" for t in hit),
        "every_attempt": len(again),
    }


def known_defects_line(h: dict[str, Any]) -> list[str]:
    k = h.get("known_defects") or {}
    if not k.get("tests"):
        return []
    return [
        f"- Known OpenPBS race met {k['attempts']} time(s) in {k['tests']} test(s), each run once more on a "
        f"fresh job: {k['then_passed']} then passed, {k['every_attempt']} met it on every attempt "
        "(failed: a possible regression)"
    ]


def cluster_lines(h: dict[str, Any]) -> list[str]:
    """One line per cluster of a parallel run (a serial run's one cluster is the Cluster line)."""
    if len(h["clusters"]) < 2:
        return []
    return [
        f"- Cluster {c['name']}: OpenPBS **{c['openpbs_version']}** ({c['openpbs_source']}), server `{c['server']}`, "
        f"inventory `{c['inventory']}`, hosts {', '.join(c['hosts']) or '-'}"
        for c in h["clusters"]
    ]


def versions_note(verdicts: list[Verdict]) -> list[str]:
    if len(verdicts) < 2:
        return []
    listed = "; ".join(f"{v.version} on {', '.join(v.clusters) or 'no cluster'}" for v in verdicts)
    return [f"- **Several OpenPBS builds** ({listed}): one verdict per build, side by side, never merged"]


def verdict_lines(verdicts: list[Verdict]) -> list[str]:
    """Per verdict: the status counts, and the OpenPBS bugs that guards pinned next to passes."""
    lines = []
    for v in verdicts:
        of = f" ({v.version})" if len(verdicts) > 1 else ""
        lines.append(f"- Status counts{of}: " + ", ".join(f"{k}: {n}" for k, n in counts(v.rows).items()))
        bugs = known_bugs(v.rows)
        if bugs:
            lines.append(
                f"- Known OpenPBS bugs pinned next to passes{of}: {sum(bugs.values())} xfail(s) in "
                f"{len(bugs)} interface(s) that otherwise work ({', '.join(bugs)})"
            )
    return lines


def guard_lines(rows: list[InterfaceResult]) -> list[str]:
    """Which interfaces no ordinary test guards (the guard column says why)."""
    weak = weakly_guarded(rows)
    if not weak:
        return [f"- Guards: every interface is guarded by at least one test ({len(rows)} interfaces)"]
    return [f"- **Weakly guarded** ({len(weak)} of {len(rows)} interfaces): {', '.join(weak)}"]


def name_of(test: dict[str, Any], several: bool, guard: bool = False) -> str:
    """The test's name with its parameters, "[guard]" when it guards the row's interface, and its
    cluster in a parallel run."""
    on = f" on {test['cluster']}" if several and test.get("cluster") else ""
    return f"{test['nodeid'].split('::')[-1]}{' [guard]' if guard else ''}{on}"


def outcomes_text(row: InterfaceResult) -> str:
    """ "25 passed, 2 xfailed" (the non-zero counts), or "-" when no test ran."""
    return ", ".join(f"{row.outcomes[k]} {k}" for k in OUTCOMES if row.outcomes.get(k)) or "-"


def guard_names(row: InterfaceResult) -> list[str]:
    """The guards' names without their module: `test_x` or `TestClass::test_x`."""
    return [g.split("::", 1)[-1] for g in row.guards]


def guards_title(row: InterfaceResult) -> str:
    """ "3 guards", or "weakly guarded: <why>"."""
    if row.weakly_guarded:
        return f"weakly guarded: {row.weakly_guarded}"
    return f"{len(row.guards)} guard{'s' if len(row.guards) != 1 else ''}"
