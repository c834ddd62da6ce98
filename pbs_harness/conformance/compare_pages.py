"""compare.md and compare.html: the behaviour diff of two builds (pbs_harness.conformance.compare).

Header: each build by its provenance (version, source, report, run, clusters, status counts), then
the counts of what changed, the interfaces whose status changed, and per feature a row per
interface: | id | interface | A | B | changed | tests whose outcome differs | differences that
appear in B | differences that disappear |.
"""

from __future__ import annotations

import html
from pathlib import Path

from pbs_harness.conformance import catalogue
from pbs_harness.conformance.builds import Build
from pbs_harness.conformance.compare import Comparison, InterfaceChange
from pbs_harness.conformance.report_html import COLOURS, CSS

e = html.escape
TITLE = "OpenPBS behaviour diff"


def badge(status: str, label: str | None = None) -> str:
    """A status as the conformance report's coloured badge (grey for one it does not know, e.g. "absent")."""
    return f'<span class="badge" style="background:{COLOURS.get(status, "#6e7781")}">{e(label or status)}</span>'


def feature_titles() -> dict[str, str]:
    """Feature key -> title, from this checkout's catalogue (reports name their features by key)."""
    return {key: f.title for key, f in catalogue.load().features.items()}


def build_facts(build: Build) -> list[tuple[str, str]]:
    """(what, value) lines naming one build."""
    counts = ", ".join(f"{k}: {n}" for k, n in build.counts.items()) or "-"
    return [
        ("OpenPBS", build.name),
        ("source", build.source),
        ("report", str(build.path)),
        ("run", build.run),
        ("clusters", ", ".join(build.clusters) or "-"),
        ("status counts", counts),
    ]


def _by_feature(rows: list[InterfaceChange]) -> dict[str, list[InterfaceChange]]:
    found: dict[str, list[InterfaceChange]] = {}
    for row in rows:
        found.setdefault(row.feature, []).append(row)
    return found


def _diff_text(d: dict[str, str]) -> str:
    return f"spec: {d.get('spec_says', '')} / OpenPBS: {d.get('openpbs_does', '')}"


def write_markdown(path: Path, comparison: Comparison) -> None:
    a, b = comparison.a, comparison.b
    lines = [f"# {TITLE}", "", "| | A | B |", "|---|---|---|"]
    lines += [
        f"| {what} | {md_cell(x)} | {md_cell(y)} |"
        for (what, x), (_, y) in zip(build_facts(a), build_facts(b), strict=True)
    ]
    lines += ["", "- " + ", ".join(f"{k}: {n}" for k, n in comparison.summary().items()), ""]
    changed = [r for r in comparison.rows if r.status_changed]
    lines += ["## Interfaces whose status differs", ""]
    if changed:
        lines += ["| id | interface | A | B |", "|---|---|---|---|"]
        lines += [f"| {r.id} | {md_cell(r.title)} | {md_cell(r.a)} | {md_cell(r.b)} |" for r in changed]
    else:
        lines.append("None: every interface has the same status in both builds.")
    lines.append("")
    titles = feature_titles()
    for feature, rows in _by_feature(comparison.rows).items():
        lines += [
            f"## {titles.get(feature, feature)}",
            "",
            "| id | interface | A | B | changed | tests whose outcome differs (A → B) | differences that appear in B "
            "| differences that disappear |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            tests = "<br>".join(f"{md_cell(t.name)}: {t.a} → {t.b}" for t in r.tests) or "-"
            appeared = "<br>".join(md_cell(_diff_text(d)) for d in r.appeared) or "-"
            gone = "<br>".join(md_cell(_diff_text(d)) for d in r.disappeared) or "-"
            status_b = f"**{md_cell(r.b)}**" if r.status_changed else md_cell(r.b)
            cells = [r.id, md_cell(r.title), md_cell(r.a), status_b, r.what_changed, tests, appeared, gone]
            lines.append(f"| {' | '.join(cells)} |")
        lines.append("")
    path.write_text("\n".join(lines))


def md_cell(text: str) -> str:
    """A table cell's text: no line breaks, no column separators."""
    return " ".join(str(text).split()).replace("|", "\\|")


def write_html(path: Path, comparison: Comparison) -> None:
    a, b = comparison.a, comparison.b
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{TITLE}</title>",
        f"<style>{CSS} .changed td{{background:#fff8c5}}</style></head><body>",
        f"<h1>{TITLE}</h1>",
        "<table><tr><th></th><th>A</th><th>B</th></tr>",
        *(
            f"<tr><th>{e(what)}</th><td>{e(x)}</td><td>{e(y)}</td></tr>"
            for (what, x), (_, y) in zip(build_facts(a), build_facts(b), strict=True)
        ),
        "</table>",
        "<p class='counts'>" + "".join(f"<span>{e(k)}: <b>{n}</b></span>" for k, n in comparison.summary().items()),
        "</p>",
    ]
    titles = feature_titles()
    for feature, rows in _by_feature(comparison.rows).items():
        parts.append(f"<h2>{e(titles.get(feature, feature))}</h2>")
        parts.append(
            "<table><tr><th>id</th><th>interface</th><th>A</th><th>B</th><th>changed</th>"
            "<th>tests whose outcome differs (A &rarr; B)</th><th>differences that appear in B</th>"
            "<th>differences that disappear</th></tr>"
        )
        for r in rows:
            tests = "".join(f"<div>{e(t.name)}: <b>{e(t.a)}</b> &rarr; <b>{e(t.b)}</b></div>" for t in r.tests)
            appeared = "".join(_diff_html(d) for d in r.appeared)
            gone = "".join(_diff_html(d) for d in r.disappeared)
            parts.append(
                f"<tr{' class=changed' if r.changed else ''}><td><b>{e(r.id)}</b></td><td>{e(r.title)}</td>"
                f"<td>{badge(r.a_status, r.a)}</td><td>{badge(r.b_status, r.b)}</td><td>{e(r.what_changed)}</td>"
                f"<td>{tests or '-'}</td><td>{appeared or '-'}</td><td>{gone or '-'}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts))


def _diff_html(d: dict[str, str]) -> str:
    evidence = f"<br><code>{e(str(d['evidence']))}</code>" if d.get("evidence") else ""
    return (
        f"<div class='diff'><b>spec:</b> {e(str(d.get('spec_says', '')))}<br>"
        f"<b>OpenPBS:</b> {e(str(d.get('openpbs_does', '')))}{evidence}</div>"
    )
