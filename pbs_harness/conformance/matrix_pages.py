"""matrix.md and matrix.html: interfaces as rows, OpenPBS builds as columns, the status per cell
(`report --matrix A.json B.json ...`; a report of several builds gives each its own column).

The head lists each column's build by its provenance (version, source, report, run, clusters,
status counts); a row whose status is not the same in every column says so in its last column.
"""

from __future__ import annotations

import html
from pathlib import Path

from pbs_harness.conformance.builds import Build
from pbs_harness.conformance.compare_pages import badge, build_facts, feature_titles, md_cell
from pbs_harness.conformance.report_html import CSS

e = html.escape
TITLE = "OpenPBS release matrix"


def column_heads(builds: list[Build]) -> list[str]:
    """ "1: 23.06.06 @ be361a18ef", numbered: two runs of one build stay two columns."""
    return [f"{i}: {b.short}" for i, b in enumerate(builds, 1)]


def rows(builds: list[Build]) -> dict[str, list[tuple[str, str]]]:
    """{feature: [(id, title)]} over every build's interfaces, in report order."""
    found: dict[str, dict[str, str]] = {}
    for build in builds:
        for ident, row in build.interfaces.items():
            iface = row.get("interface") or {}
            feature = str(iface.get("feature") or ident.split("-", 1)[0])
            found.setdefault(feature, {}).setdefault(ident, str(iface.get("title", "")))
    return {feature: list(ids.items()) for feature, ids in found.items()}


def differs(builds: list[Build], ident: str) -> bool:
    return len({b.status(ident) for b in builds}) > 1


def write_markdown(path: Path, builds: list[Build]) -> None:
    heads = column_heads(builds)
    lines = [f"# {TITLE}", "", f"| | {' | '.join(heads)} |", "|---|" + "---|" * len(builds)]
    facts = [build_facts(b) for b in builds]
    for i, (what, _) in enumerate(facts[0]):
        lines.append(f"| {what} | {' | '.join(md_cell(f[i][1]) for f in facts)} |")
    titles = feature_titles()
    for feature, idents in rows(builds).items():
        lines += [
            "",
            f"## {titles.get(feature, feature)}",
            "",
            f"| id | interface | {' | '.join(heads)} | differs |",
            "|---|---|" + "---|" * len(builds) + "---|",
        ]
        for ident, title in idents:
            cells = " | ".join(md_cell(b.status(ident)) for b in builds)
            lines.append(f"| {ident} | {md_cell(title)} | {cells} | {'yes' if differs(builds, ident) else '-'} |")
    path.write_text("\n".join([*lines, ""]))


def write_html(path: Path, builds: list[Build]) -> None:
    heads = "".join(f"<th>{e(h)}</th>" for h in column_heads(builds))
    facts = [build_facts(b) for b in builds]
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{TITLE}</title>",
        f"<style>{CSS} .changed td{{background:#fff8c5}}</style></head><body>",
        f"<h1>{TITLE}</h1>",
        f"<table><tr><th></th>{heads}</tr>",
        *(
            f"<tr><th>{e(what)}</th>" + "".join(f"<td>{e(f[i][1])}</td>" for f in facts) + "</tr>"
            for i, (what, _) in enumerate(facts[0])
        ),
        "</table>",
    ]
    titles = feature_titles()
    for feature, idents in rows(builds).items():
        parts.append(f"<h2>{e(titles.get(feature, feature))}</h2>")
        parts.append(f"<table><tr><th>id</th><th>interface</th>{heads}<th>differs</th></tr>")
        for ident, title in idents:
            cells = "".join(f"<td>{_cell(b, ident)}</td>" for b in builds)
            diff = differs(builds, ident)
            parts.append(
                f"<tr{' class=changed' if diff else ''}><td><b>{e(ident)}</b></td><td>{e(title)}</td>{cells}"
                f"<td>{'yes' if diff else '-'}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts))


def _cell(build: Build, ident: str) -> str:
    row = build.interfaces.get(ident)
    return badge(str(row.get("status")), build.status(ident)) if row else badge("absent")
