"""The conformance report of a run: conformance.html, .md and .json, every catalogue interface with
its verdict, one per OpenPBS build (version and source) of the run's clusters
(clusters.split_by_version). Two builds' reports are compared by pbs_harness.conformance.compare.

Per interface:
  status     decided by the tests that guard it (pbs_harness.conformance.status): pass, fail,
             xfail, incomplete, skipped, not in this release, not run, not covered; guards that
             xfailed while others passed are OpenPBS bugs pinned in one scenario, shown as
             "pass (1 known bug)"
  outcomes   how many of the tests tagged with it passed, failed, xfailed, were skipped and were
             skipped as not in this release (pbs_harness.suite.release_features)
  tests      each tagged test with its outcome ("[guard]" when it guards the interface), its
             evidence folder and its skip/xfail reason; tagged tests that did not run
  guards     the tests whose own assertions would catch a regression (count and names), or
             "weakly guarded" and why (pbs_harness.conformance.guards)
  differences  "spec says X, OpenPBS does Y" as the tests recorded them, with the evidence
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pbs_harness.conformance import headline
from pbs_harness.conformance.catalogue import Catalogue
from pbs_harness.conformance.history import Trend
from pbs_harness.conformance.report_html import write_html
from pbs_harness.conformance.report_markdown import write_markdown
from pbs_harness.conformance.report_text import header
from pbs_harness.conformance.verdict import (
    InterfaceResult,
    Verdict,
    build,
    counts,
    known_bugs,
    verdicts,
    weakly_guarded,
)

__all__ = ["InterfaceResult", "Verdict", "build", "verdicts", "write_all", "write_json"]


def _interfaces(rows: list[InterfaceResult]) -> list[dict[str, Any]]:
    return [{"id": r.id, "label": r.label, **asdict(r)} for r in rows]


def _summary(rows: list[InterfaceResult]) -> dict[str, Any]:
    return {"counts": counts(rows), "known_bugs": known_bugs(rows), "weakly_guarded": weakly_guarded(rows)}


def write_json(
    path: Path, cat: Catalogue, found: list[Verdict], results: dict[str, Any], trend: Trend | None = None
) -> None:
    data: dict[str, Any] = {"verdict": headline.of(cat, found, results).line(), "header": header(results)}
    if trend is not None:
        data["since_previous"] = trend.as_json()
    if len(found) == 1:
        data |= {**_summary(found[0].rows), "interfaces": _interfaces(found[0].rows)}
    else:  # never one verdict over several OpenPBS builds
        data["side_by_side"] = [
            {
                "openpbs_version": v.version,
                "provenance": v.source,
                "clusters": v.clusters,
                **_summary(v.rows),
                "interfaces": _interfaces(v.rows),
            }
            for v in found
        ]
    path.write_text(json.dumps(data, indent=2) + "\n")


def headline_of(cat: Catalogue, results: dict[str, Any], test_dir: Path) -> headline.Headline:
    """The run's one-line verdict and its rows per feature (what the report's first screen says)."""
    return headline.of(cat, verdicts(cat, results, test_dir), results)


def write_all(
    cat: Catalogue, results: dict[str, Any], test_dir: Path, out_dir: Path, trend: Trend | None = None
) -> list[Path]:
    """The three reports; `trend` (pbs_harness.conformance.history): what changed since the previous run."""
    found = verdicts(cat, results, test_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "conformance.html", out_dir / "conformance.md", out_dir / "conformance.json"]
    write_html(paths[0], cat, found, results, trend)
    write_markdown(paths[1], cat, found, results, trend)
    write_json(paths[2], cat, found, results, trend)
    return paths
