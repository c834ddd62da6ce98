"""conformance.html: the header, the status counts as badges, then per feature a table with a row
per interface (status badge, outcomes, tests with their evidence links, guards, differences)."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from pbs_harness.conformance import report_text as text
from pbs_harness.conformance.catalogue import Catalogue
from pbs_harness.conformance.verdict import InterfaceResult, Verdict, counts

COLOURS = {
    "pass": "#1a7f37",
    "fail": "#cf222e",
    "xfail": "#bc4c00",
    "incomplete": "#9a6700",
    "skipped": "#6e7781",
    "not in this release": "#0969da",
    "not run": "#6e7781",
    "not covered": "#8250df",
}
WEAK_COLOUR = "#8250df"

CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#1f2328;max-width:1200px}
h1{margin-bottom:.2rem} .meta{color:#57606a;margin:.1rem 0}
table{border-collapse:collapse;width:100%;margin:1rem 0 2rem}
th,td{border:1px solid #d0d7de;padding:.4rem .6rem;vertical-align:top;text-align:left;font-size:.92rem}
th{background:#f6f8fa} .badge{color:#fff;border-radius:1rem;padding:.1rem .6rem;font-weight:600;white-space:nowrap}
.summary{color:#57606a;font-size:.85rem} .diff{background:#fff8c5;padding:.2rem .4rem;margin:.2rem 0}
code{font-size:.85rem} .counts span{margin-right:1rem} .outcomes{color:#57606a;font-size:.85rem;margin:.2rem 0}
"""

e = html.escape


def _badge(status: str, label: str | None = None) -> str:
    return f'<span class="badge" style="background:{COLOURS[status]}">{e(label or status)}</span>'


def _meta(line: str, bold: bool = False) -> str:
    """A markdown header line of report_text as a paragraph."""
    words = e(line.removeprefix("- ").replace("**", ""))
    return f"<p class='meta'>{f'<b>{words}</b>' if bold else words}</p>"


def write_html(path: Path, cat: Catalogue, verdicts: list[Verdict], results: dict[str, Any]) -> None:
    h = text.header(results)
    several = len(h["clusters"]) > 1
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>OpenPBS conformance report</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>OpenPBS conformance report</h1>",
        f"<p class='meta'>OpenPBS <b>{e(str(h['openpbs_version']))}</b>"
        f" &middot; build {e(str(h['openpbs_build']))}</p>",
        *([f"<p class='meta'>Source: {e(str(h['openpbs_source']))}</p>"] if len(verdicts) == 1 else []),
        *(
            [_meta(line) for line in text.cluster_lines(h)]
            or [
                f"<p class='meta'>Cluster: inventory <code>{e(str(h['inventory']))}</code>,"
                f" server <code>{e(str(h['server']))}</code>, hosts {e(', '.join(h['hosts']) or '-')}</p>"
            ]
        ),
        *(_meta(line, bold=True) for line in text.versions_note(verdicts)),
        f"<p class='meta'>Run: {e(h['started'])} &rarr; {e(h['finished'])}</p>",
        *(_meta(line, bold=True) for line in text.known_defects_line(h)),
        *(_meta(line.strip(), bold=line.startswith("- **")) for line in text.repair_lines(h)),
        *(_meta(line) for line in text.verdict_lines(verdicts) if not line.startswith("- Status counts")),
        *(_meta(line, bold=True) for line in text.guard_lines(verdicts[0].rows)),
    ]
    for v in verdicts:
        title = f"OpenPBS {e(v.version)}: " if len(verdicts) > 1 else ""
        parts.append(
            f"<p class='counts'>{title}"
            + "".join(f"<span>{_badge(k)} {n}</span>" for k, n in counts(v.rows).items())
            + "</p>"
        )
    heads = (
        "<th>status</th><th>outcomes</th><th>tests</th>"
        if len(verdicts) == 1
        else "".join(f"<th>OpenPBS {e(v.version)}</th>" for v in verdicts)
    )
    for key, feature in cat.features.items():
        parts.append(f"<h2>{e(feature.title)}</h2><p class='meta'>spec: <code>{e(feature.spec)}</code></p>")
        parts.append(f"<table><tr><th>id</th><th>interface</th>{heads}<th>guards</th><th>differences</th></tr>")
        for index, r in enumerate(verdicts[0].rows):
            if r.interface.feature != key:
                continue
            cells = "".join(_verdict_cells(v.rows[index], path.parent, several, len(verdicts) == 1) for v in verdicts)
            diffs = "".join(
                f"<div class='diff'><b>spec:</b> {e(d['spec_says'])}<br><b>OpenPBS:</b> {e(d['openpbs_does'])}"
                + (f"<br><code>{e(d['evidence'])}</code>" if d.get("evidence") else "")
                + "</div>"
                for v in verdicts
                for d in v.rows[index].differences
            )
            notes = f"<div><i>shipped:</i> {e(r.interface.shipped_notes)}</div>" if r.interface.shipped_notes else ""
            parts.append(
                f"<tr><td><b>{e(r.id)}</b></td><td>{e(r.interface.title)}"
                f"<details class='summary'><summary>{e(r.interface.section)}: spec summary</summary>"
                f"{e(r.interface.summary)}{notes}</details></td>"
                f"{cells}<td>{_guards(r)}</td><td>{diffs or '-'}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts))


def _verdict_cells(row: InterfaceResult, base: Path, several: bool, alone: bool) -> str:
    """<td>s of one version: status, outcomes, tests; side by side, one <td> with all three."""
    tests = "".join(_test_html(t, base, several, row.guarded_by(t)) for t in row.tests)
    tests += "".join(f"<div>{e(t.split('::')[-1])}: not run</div>" for t in row.untested)
    badge, outcomes = _badge(row.status, row.label), e(text.outcomes_text(row))
    if alone:
        return f"<td>{badge}</td><td>{outcomes}</td><td>{tests or '-'}</td>"
    return f"<td>{badge}<div class='outcomes'>{outcomes}</div>{tests}</td>"


def _guards(row: InterfaceResult) -> str:
    names = "".join(f"<div>{e(n)}</div>" for n in text.guard_names(row))
    if row.weakly_guarded:
        return (
            f"<span class='badge' style='background:{WEAK_COLOUR}'>weakly guarded</span>"
            f"<div class='summary'>{e(row.weakly_guarded)}</div>{names}"
        )
    return f"<details class='summary'><summary>{e(text.guards_title(row))}</summary>{names}</details>"


def _test_html(test: dict[str, Any], base: Path, several: bool = False, guard: bool = False) -> str:
    name = e(text.name_of(test, several, guard))  # with its parameters, and its cluster in a parallel run
    line = f"<div>{name}: <b>{e(test['outcome'])}</b>"
    if test.get("evidence"):
        rel = os.path.relpath(test["evidence"], base)
        line += f" (<a href='{e(rel)}'>evidence</a>)"
    reason = test.get("skip_reason") or test.get("xfail_reason")
    if reason:
        line += f"<div class='summary'>{e(str(reason))}</div>"
    return line + "</div>"
