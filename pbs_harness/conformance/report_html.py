"""conformance.html. Its first screen (#35): the one-line verdict (pbs_harness.conformance.headline),
the failed tests, a row per feature linking to its section, and links to the run's other reports.
Then the run's details (clusters sharing a build in one provenance line), and per feature a table
with a row per interface (anchor #ID; status badge, outcomes, tests with their evidence links,
guards, differences). Tables have fixed column widths and long values wrap, so the page fits a
1400 px window."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from pbs_harness.conformance import headline
from pbs_harness.conformance import report_text as text
from pbs_harness.conformance.catalogue import Catalogue
from pbs_harness.conformance.history import Trend
from pbs_harness.conformance.results import evidence_href
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
body{font-family:system-ui,sans-serif;margin:1.5rem 2rem;color:#1f2328;max-width:1340px;overflow-wrap:anywhere}
h1{font-size:1.3rem;margin:0 0 .6rem} h2{margin-top:2rem} .meta{color:#57606a;margin:.1rem 0}
.verdict{font-size:1.25rem;font-weight:600;padding:.7rem 1rem;border-radius:.4rem;margin:.4rem 0 1rem;
  border-left:.6rem solid}
.verdict.pass{background:#dafbe1;border-color:#1a7f37} .verdict.fail{background:#ffebe9;border-color:#cf222e}
.verdict.none{background:#fff8c5;border-color:#9a6700}
.verdict .state{font-size:1.6rem;margin-right:.4rem} .verdict.fail .state{color:#cf222e}
.verdict.pass .state{color:#1a7f37}
table{border-collapse:collapse;width:100%;margin:.6rem 0 1.4rem;table-layout:fixed}
th,td{border:1px solid #d0d7de;padding:.35rem .5rem;vertical-align:top;text-align:left;font-size:.9rem;
  overflow-wrap:anywhere}
th{background:#f6f8fa} .badge{color:#fff;border-radius:1rem;padding:.1rem .6rem;font-weight:600;
  display:inline-block}
.summary{color:#57606a;font-size:.85rem} .diff{background:#fff8c5;padding:.2rem .4rem;margin:.2rem 0}
code{font-size:.82rem;white-space:pre-wrap;overflow-wrap:anywhere} .counts span{margin-right:1rem}
.outcomes{color:#57606a;font-size:.85rem;margin:.2rem 0}
table.features td,table.features th{font-size:.95rem} td.fail{color:#cf222e;font-weight:700}
td.conforms{color:#1a7f37;font-weight:700} nav{margin:.4rem 0 1rem} nav a{margin-right:1rem}
.failed-tests{color:#cf222e} .trend{margin:.2rem 0 .8rem} .trend .line{font-weight:600}
.trend .new{color:#cf222e} .trend .fixed{color:#1a7f37} .trend ul{margin:.2rem 0}
"""
# Column widths of an interface table (one build): the differences get the most room (#35).
ONE_BUILD_COLS = (5, 15, 9, 9, 24, 12, 26)

e = html.escape


def _badge(status: str, label: str | None = None) -> str:
    return f'<span class="badge" style="background:{COLOURS[status]}">{e(label or status)}</span>'


def _meta(line: str, bold: bool = False) -> str:
    """A markdown header line of report_text as a paragraph."""
    words = e(line.removeprefix("- ").replace("**", ""))
    return f"<p class='meta'>{f'<b>{words}</b>' if bold else words}</p>"


# Files of the same run next to the report, linked when they are there (pbs-harness test writes them).
RUN_FILES = (
    ("timeline.html", "run timeline"),
    ("acceptance.html", "test report (pytest-html)"),
    ("junit.xml", "junit.xml"),
    ("results.json", "results.json"),
    ("conformance.md", "conformance.md"),
    ("conformance.json", "conformance.json"),
)


def run_links(out: Path) -> list[tuple[str, str]]:
    """(href, words) of the run's other reports in `out`: the run timeline, pytest-html, JUnit, the
    verify reports of each cluster and the deploy logs."""
    found = [(name, words) for name, words in RUN_FILES if (out / name).exists() or name.startswith("conformance.")]
    verify = sorted(out.glob("verify-junit-*.xml"))
    found += [(p.name, f"verify {p.stem.removeprefix('verify-junit-')}") for p in verify]
    found += [(p.name, p.name) for p in sorted(out.glob("verify-*.html"))]
    if (out / "deploy").is_dir():
        found.append(("deploy/", "deploy logs"))
    return found


def _verdict_html(head: headline.Headline) -> str:
    kind = {"PASS": "pass", "FAIL": "fail"}.get(head.state, "none")
    rest = e(head.line().removeprefix(f"{head.state} — "))
    return f"<p id='verdict' class='verdict {kind}'><span class='state'>{e(head.state)}</span> — {rest}</p>"


def _features_table(head: headline.Headline) -> str:
    rows = "".join(
        f"<tr><td><a href='#{e(f.key)}'>{e(f.title)}</a></td><td class='{'fail' if f.failed else e(f.state)}'>"
        f"{e(f.state)}{': ' + e(', '.join(f.failed)) if f.failed else ''}</td><td>{f.interfaces}</td>"
        f"<td>{f.passed}</td><td>{len(f.failed)}</td><td>{f.known_bugs}</td><td>{f.other}</td><td>{f.differences}</td></tr>"
        for f in head.features
    )
    return (
        "<table class='features'><colgroup><col style='width:34%'><col style='width:22%'>"
        + "<col style='width:7%'>" * 5
        + "<col style='width:9%'></colgroup><tr><th>feature</th><th>verdict</th><th>interfaces</th><th>pass</th>"
        "<th>fail</th><th>known bugs</th><th>other</th><th>differences</th></tr>" + rows + "</table>"
    )


def _trend_html(trend: Trend | None) -> str:
    """What changed since the previous run (#35 trends): a line, then new failures and fixed tests named,
    flaky and slower ones folded."""
    if trend is None:
        return ""

    def items(found: list) -> str:
        return "".join(
            f"<li><code>{e(c.name)}</code>: {e(c.before)} &rarr; {e(c.now)}"
            f" <span class='summary'>(over {len(c.seen)} runs: {e(', '.join(c.seen))})</span></li>"
            for c in found
        )

    parts = [f"<div id='trend' class='trend'><div class='line'>{e(trend.line())}</div>"]
    if trend.new_failures:
        parts.append(f"<div class='new'>New failures:<ul>{items(trend.new_failures)}</ul></div>")
    if trend.fixed:
        parts.append(f"<div class='fixed'>Fixed:<ul>{items(trend.fixed)}</ul></div>")
    folded = [("Flaky", items(trend.flaky)), ("Other changes", items(trend.other))]
    folded.append(
        (
            "Slower",
            "".join(f"<li><code>{e(s.name)}</code>: {s.median:.0f} s &rarr; {s.now:.0f} s</li>" for s in trend.slower),
        )
    )
    folded.append(("New tests", "".join(f"<li><code>{e(n)}</code></li>" for n in trend.new_tests)))
    folded.append(("Gone tests", "".join(f"<li><code>{e(n)}</code></li>" for n in trend.gone_tests)))
    parts += [f"<details><summary>{title}</summary><ul>{body}</ul></details>" for title, body in folded if body]
    return "".join(parts) + "</div>"


def _failed_tests(head: headline.Headline, results: dict[str, Any], base: Path) -> str:
    if not head.failed_tests:
        return ""
    by_id = {t["nodeid"]: t for t in results.get("tests", [])}
    items = "".join(f"<li>{_test_link(by_id[n], base)}</li>" for n in head.failed_tests)
    return f"<div class='failed-tests'><b>Failed tests ({len(head.failed_tests)})</b><ul>{items}</ul></div>"


def _test_link(test: dict[str, Any], base: Path) -> str:
    words = e(test["nodeid"].split("::", 1)[-1]) + (f" on {e(test['cluster'])}" if test.get("cluster") else "")
    href = evidence_href(test, base)
    return words + (f" (<a href='{e(href)}'>evidence</a>)" if href else "")


def _provenance_html(h: dict[str, Any]) -> list[str]:
    """One line per distinct build (clusters that share a source are merged), then the clusters' table."""
    if len(h["clusters"]) < 2:
        return [
            f"<p class='meta'>Source: {e(str(h['openpbs_source']))}</p>",
            f"<p class='meta'>Cluster: inventory <code>{e(str(h['inventory']))}</code>,"
            f" server <code>{e(str(h['server']))}</code>, hosts {e(', '.join(h['hosts']) or '-')}</p>",
        ]
    builds: dict[tuple[str, str], list[str]] = {}
    for c in h["clusters"]:
        builds.setdefault((c["openpbs_version"], c["openpbs_source"]), []).append(c["name"])
    out = [
        f"<p class='meta'>OpenPBS <b>{e(version)}</b> on {e(', '.join(names))}: {e(source)}</p>"
        for (version, source), names in builds.items()
    ]
    rows = "".join(
        f"<tr><td>{e(c['name'])}</td><td><code>{e(c['server'])}</code></td><td>{e(', '.join(c['hosts']) or '-')}</td>"
        f"<td><code>{e(c['inventory'])}</code></td></tr>"
        for c in h["clusters"]
    )
    return [*out, f"<table><tr><th>cluster</th><th>server</th><th>hosts</th><th>inventory</th></tr>{rows}</table>"]


def write_html(
    path: Path, cat: Catalogue, verdicts: list[Verdict], results: dict[str, Any], trend: Trend | None = None
) -> None:
    h = text.header(results)
    head = headline.of(cat, verdicts, results)
    several = len(h["clusters"]) > 1
    links = run_links(path.parent)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>OpenPBS conformance report</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>OpenPBS conformance report</h1>",
        _verdict_html(head),
        _trend_html(trend),
        _failed_tests(head, results, path.parent),
        _features_table(head),
        "<nav>"
        + "".join(f"<a href='{e(href)}'>{e(words)}</a>" for href, words in [("#run", "run details"), *links])
        + "</nav>",
        "<h2 id='run'>Run details</h2>",
        f"<p class='meta'>OpenPBS <b>{e(str(h['openpbs_version']))}</b>"
        f" &middot; build {e(str(h['openpbs_build']))}</p>",
        *_provenance_html(h),
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
            f"<p class='counts'>{title}interfaces "
            + "".join(f"<span>{_badge(k)} {n}</span>" for k, n in counts(v.rows).items())
            + "</p>"
        )
    heads = (
        "<th>status</th><th>outcomes</th><th>tests</th>"
        if len(verdicts) == 1
        else "".join(f"<th>OpenPBS {e(v.version)}</th>" for v in verdicts)
    )
    widths = ONE_BUILD_COLS if len(verdicts) == 1 else (6, 14, *[50 // len(verdicts)] * len(verdicts), 12, 18)
    cols = "<colgroup>" + "".join(f"<col style='width:{w}%'>" for w in widths) + "</colgroup>"
    for key, feature in cat.features.items():
        parts.append(
            f"<h2 id='{e(key)}'>{e(feature.title)}</h2><p class='meta'>spec: <code>{e(feature.spec)}</code></p>"
        )
        parts.append(f"<table>{cols}<tr><th>id</th><th>interface</th>{heads}<th>guards</th><th>differences</th></tr>")
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
                f"<tr id='{e(r.id)}'><td><a href='#{e(r.id)}'><b>{e(r.id)}</b></a></td><td>{e(r.interface.title)}"
                f"<details class='summary'><summary>{e(r.interface.section)}: spec summary</summary>"
                f"{e(r.interface.summary)}{notes}</details></td>"
                f"{cells}<td>{_guards(r)}</td><td>{diffs or '-'}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    path.write_text("\n".join(p for p in parts if p))


def _verdict_cells(row: InterfaceResult, base: Path, several: bool, alone: bool) -> str:
    """<td>s of one version: status, outcomes, tests; side by side, one <td> with all three. Tests that
    did not pass stay in sight; passed ones fold into a <details>."""
    shown = [t for t in row.tests if t["outcome"] != "passed"]
    folded = [t for t in row.tests if t["outcome"] == "passed"]
    tests = "".join(_test_html(t, base, several, row.guarded_by(t)) for t in shown)
    tests += "".join(f"<div>{e(t.split('::')[-1])}: not run</div>" for t in row.untested)
    if folded:
        inner = "".join(_test_html(t, base, several, row.guarded_by(t)) for t in folded)
        tests += f"<details><summary>{len(folded)} passed</summary>{inner}</details>"
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
    href = evidence_href(test, base)
    if href:
        line += f" (<a href='{e(href)}'>evidence</a>)"
    reason = test.get("skip_reason") or test.get("xfail_reason")
    if reason:
        line += f"<div class='summary'>{e(str(reason))}</div>"
    return line + "</div>"
