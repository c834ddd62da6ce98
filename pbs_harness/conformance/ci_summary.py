"""The short markdown summary of a run for a CI job page: GitHub's job summary ($GITHUB_STEP_SUMMARY,
appended to when set) and GitLab's job log (printed when GITLAB_CI is set). About 20 lines: the
verdict, what changed since the previous run (new failures, fixed, flaky: 3 named each), a row per
feature, the failed tests, and where the full reports are."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from pbs_harness.conformance import headline
from pbs_harness.conformance.history import Trend
from pbs_harness.conformance.report_markdown import feature_table, trend_lines

MAX_FAILED = 8  # failed tests listed by name; the report lists them all


def markdown(
    head: headline.Headline, results: dict[str, Any], reports: str = "reports/", trend: Trend | None = None
) -> str:
    lines = [f"### OpenPBS conformance: {head.state}", "", head.line(), "", *trend_lines(trend, limit=3)]
    lines += [*feature_table(head, link=False), ""]
    if head.failed_tests:
        lines.append(f"**Failed tests ({len(head.failed_tests)}):**")
        lines += [f"- `{n}`" for n in head.failed_tests[:MAX_FAILED]]
        if len(head.failed_tests) > MAX_FAILED:
            lines.append(f"- … and {len(head.failed_tests) - MAX_FAILED} more (see conformance.html)")
        lines.append("")
    lines.append(
        f"Run {results.get('started', '?')} to {results.get('finished', '?')}. Full reports in `{reports}`:"
        " conformance.html (verdict per interface, evidence), timeline.html, acceptance.html, junit.xml."
    )
    return "\n".join(lines) + "\n"


def publish(text: str, environ: dict[str, str] | None = None) -> list[str]:
    """Append to $GITHUB_STEP_SUMMARY and print for GitLab when their variables are set; says where."""
    env = os.environ if environ is None else environ
    where = []
    target = env.get("GITHUB_STEP_SUMMARY")
    if target:
        with Path(target).open("a") as out:
            out.write(text)
        where.append(target)
    if env.get("GITLAB_CI"):
        sys.stdout.write(text)
        where.append("the job log")
    return where
