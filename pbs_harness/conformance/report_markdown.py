"""conformance.md: the header, then per feature a table with a row per interface.

One OpenPBS version: | id | interface | status | outcomes | tests | guards | differences |
Several: | id | interface | OpenPBS <v> (status, tests, outcomes) ... | guards | differences |
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pbs_harness.conformance import headline
from pbs_harness.conformance import report_text as text
from pbs_harness.conformance.catalogue import Catalogue
from pbs_harness.conformance.history import Trend
from pbs_harness.conformance.verdict import InterfaceResult, Verdict


def write_markdown(
    path: Path, cat: Catalogue, verdicts: list[Verdict], results: dict[str, Any], trend: Trend | None = None
) -> None:
    h = text.header(results)
    several = len(h["clusters"]) > 1
    head = headline.of(cat, verdicts, results)
    lines = [
        "# OpenPBS conformance report",
        "",
        f"**{head.line()}**",
        "",
        *trend_lines(trend),
        *feature_table(head),
        "",
        f"- OpenPBS: **{h['openpbs_version']}** ({h['openpbs_build']})"
        if len(verdicts) == 1
        else "- OpenPBS: several builds, see each cluster",
        *([f"- Source: {h['openpbs_source']}"] if len(verdicts) == 1 else []),
        *(text.cluster_lines(h) or [
            f"- Cluster: inventory `{h['inventory']}`, server `{h['server']}`, hosts {', '.join(h['hosts']) or '-'}"
        ]),
        *text.versions_note(verdicts),
        f"- Run: {h['started']} to {h['finished']}",
        *text.known_defects_line(h),
        *text.repair_lines(h),
        *text.verdict_lines(verdicts),
        *text.guard_lines(verdicts[0].rows),
        "",
    ]  # fmt: skip
    titles = ["status | outcomes | tests"] if len(verdicts) == 1 else [f"OpenPBS {v.version}" for v in verdicts]
    columns = 3 if len(verdicts) == 1 else len(verdicts)
    for key, feature in cat.features.items():
        lines += [
            f"## {feature.title}",
            "",
            f"| id | interface | {' | '.join(titles)} | guards | differences |",
            "|---|---|" + "---|" * columns + "---|---|",
        ]
        for index, r in enumerate(verdicts[0].rows):
            if r.interface.feature != key:
                continue
            cells = [_verdict_cell(v.rows[index], several, len(verdicts) == 1) for v in verdicts]
            diffs = "<br>".join(
                f"spec: {d['spec_says']} / OpenPBS: {d['openpbs_does']}"
                for v in verdicts
                for d in v.rows[index].differences
            )
            lines.append(f"| {r.id} | {r.interface.title} | {' | '.join(cells)} | {_guards(r)} | {diffs or '-'} |")
        lines.append("")
    path.write_text("\n".join(lines).replace("\n\n\n", "\n\n"))


MAX_LISTED = 10  # tests named per kind of change; conformance.json lists them all


def trend_lines(trend: Trend | None, limit: int = MAX_LISTED) -> list[str]:
    """What changed since the previous run (pbs_harness.conformance.history), and a blank line; none
    when there is no earlier run."""
    if trend is None:
        return []
    lines = [f"**{trend.line()}**", ""]
    for title, found in (("New failures", trend.new_failures), ("Fixed", trend.fixed), ("Flaky", trend.flaky)):
        if found:
            lines.append(f"- {title}:")
            lines += [
                f"  - `{c.name}`: {c.before} -> {c.now} (over {len(c.seen)} runs: {', '.join(c.seen)})"
                for c in found[:limit]
            ]
            if len(found) > limit:
                lines.append(f"  - ... and {len(found) - limit} more (conformance.json)")
    if trend.slower:
        lines.append(
            "- Slower: " + ", ".join(f"`{s.name}` {s.median:.0f} s -> {s.now:.0f} s" for s in trend.slower[:limit])
        )
    return [*lines, ""] if len(lines) > 2 else lines


def slug(title: str) -> str:
    """The anchor GitHub and most markdown renderers give a heading."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def feature_table(head: headline.Headline, link: bool = True) -> list[str]:
    """A row per feature: its verdict (naming failed interfaces), interface counts and differences."""
    lines = [
        "| feature | verdict | interfaces | pass | fail | known bugs | other | differences |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in head.features:
        title = f"[{f.title}](#{slug(f.title)})" if link else f.title
        state = f"**FAIL: {', '.join(f.failed)}**" if f.failed else f.state
        lines.append(
            f"| {title} | {state} | {f.interfaces} | {f.passed} | {len(f.failed)} | {f.known_bugs} | {f.other} "
            f"| {f.differences} |"
        )
    return lines


def _verdict_cell(row: InterfaceResult, several: bool, alone: bool) -> str:
    """status | outcomes | tests of the one version, or one cell of a version side by side."""
    tests = "<br>".join(f"{text.name_of(t, several, row.guarded_by(t))}: {t['outcome']}" for t in row.tests)
    tests += "".join(f"<br>{t.split('::')[-1]}: not run" for t in row.untested)
    if alone:
        return f"{row.label} | {text.outcomes_text(row)} | {tests or '-'}"
    return f"**{row.label}**<br>{tests}<br>({text.outcomes_text(row)})"


def _guards(row: InterfaceResult) -> str:
    title = text.guards_title(row)
    title = f"**{title}**" if row.weakly_guarded else title
    return "<br>".join([title, *text.guard_names(row)])
