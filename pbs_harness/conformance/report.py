"""The conformance report: every catalogue entry with a status, its tests and observed differences.

Status of an interface:
  pass         every test tagged with it ran and passed
  fail         a tagged test failed (or errored in setup/teardown)
  xfail        a tagged test is a known failure of OpenPBS (xfail with the observed output)
  incomplete   some tagged tests passed, others did not run in this run
  skipped      the tagged tests ran but were skipped (the reason is shown)
  not run      tests exist but none ran in this run
  not covered  no test is tagged with it
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pbs_harness.conformance import clusters, tags
from pbs_harness.conformance.catalogue import Catalogue, Interface

STATUS_ORDER = ("fail", "xfail", "incomplete", "skipped", "not run", "not covered", "pass")
COLOURS = {
    "pass": "#1a7f37",
    "fail": "#cf222e",
    "xfail": "#bc4c00",
    "incomplete": "#9a6700",
    "skipped": "#6e7781",
    "not run": "#6e7781",
    "not covered": "#8250df",
}


@dataclass
class InterfaceResult:
    interface: Interface
    status: str
    tests: list[dict[str, Any]] = field(default_factory=list)
    untested: list[str] = field(default_factory=list)  # tagged tests that did not run
    differences: list[dict[str, str]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.interface.id


def _status(ran: list[dict[str, Any]], tagged: list[str]) -> str:
    if not ran:
        return "not run" if tagged else "not covered"
    outcomes = {t["outcome"] for t in ran}
    if outcomes & {"failed", "error", "xpassed"}:
        return "fail"
    if "xfailed" in outcomes:
        return "xfail"
    if outcomes == {"skipped"}:
        return "skipped"
    ran_ids = {_short(t["nodeid"]) for t in ran}
    if any(t not in ran_ids for t in tagged) or "skipped" in outcomes:
        return "incomplete"
    return "pass"


def _short(nodeid: str) -> str:
    """`ptl_tests/test_x.py::test_y[param]` -> `ptl_tests/test_x.py::test_y` (the tag scan's form)."""
    return nodeid.split("[", 1)[0]


def build(cat: Catalogue, results: dict[str, Any], test_dir: Path) -> list[InterfaceResult]:
    tagged = tags.scan(test_dir)
    tests = results.get("tests", [])
    out = []
    for iface in cat:
        ran = [t for t in tests if iface.id in t.get("specs", [])]
        ran_ids = {_short(t["nodeid"]) for t in ran}
        out.append(
            InterfaceResult(
                interface=iface,
                status=_status(ran, tagged.get(iface.id, [])),
                tests=ran,
                untested=[t for t in tagged.get(iface.id, []) if t not in ran_ids],
                differences=[d for t in tests for d in t.get("differences", []) if d.get("spec") == iface.id],
            )
        )
    return out


def counts(rows: list[InterfaceResult]) -> dict[str, int]:
    return {s: sum(r.status == s for r in rows) for s in STATUS_ORDER if any(r.status == s for r in rows)}


def header(results: dict[str, Any]) -> dict[str, Any]:
    env = results.get("environment", {})
    return {
        "openpbs_version": env.get("pbs_version", "unknown (no test reached the cluster)"),
        "openpbs_build": env.get("build", "unknown"),
        "inventory": env.get("inventory", "unknown"),
        "server": env.get("server", "unknown"),
        "hosts": env.get("hosts", []),
        "clusters": [
            {
                "name": e.get("cluster", e.get("server", "?")),
                "openpbs_version": clusters.version_of(e),
                "openpbs_build": e.get("build", "unknown"),
                "server": e.get("server", "unknown"),
                "inventory": e.get("inventory", "unknown"),
                "hosts": e.get("hosts", []),
            }
            for e in clusters.environments(results)
        ],
        "started": results.get("started", ""),
        "finished": results.get("finished", ""),
        "known_defects": known_defects(results),
    }


def known_defects(results: dict[str, Any]) -> dict[str, int]:
    """How often this run met a known OpenPBS race (pbs_harness.defect_retry): attempts that met it,
    tests that did, and of those how many then passed on a fresh job or met it on every attempt."""
    hit = [t for t in results.get("tests", []) if t.get("known_defects")]
    again = [t for t in hit if t.get("outcome") == "xfailed"]
    return {
        "attempts": sum(len(t["known_defects"]) for t in hit) + len(again),
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
        f"fresh job: {k['then_passed']} then passed, {k['every_attempt']} met it on every attempt (xfail)"
    ]


@dataclass
class Verdict:
    """The statuses of one OpenPBS version's clusters (a run of one version has one verdict)."""

    version: str
    clusters: list[str]
    rows: list[InterfaceResult]


def write_json(path: Path, cat: Catalogue, verdicts: list[Verdict], results: dict[str, Any]) -> None:
    data: dict[str, Any] = {"header": header(results)}
    if len(verdicts) == 1:
        data |= {
            "counts": counts(verdicts[0].rows),
            "interfaces": [{"id": r.id, **asdict(r)} for r in verdicts[0].rows],
        }
    else:  # never one verdict over several OpenPBS versions
        data["side_by_side"] = [
            {
                "openpbs_version": v.version,
                "clusters": v.clusters,
                "counts": counts(v.rows),
                "interfaces": [{"id": r.id, **asdict(r)} for r in v.rows],
            }
            for v in verdicts
        ]
    path.write_text(json.dumps(data, indent=2) + "\n")


def _cluster_lines(h: dict[str, Any]) -> list[str]:
    """One line per cluster of a parallel run (a serial run's one cluster is the Cluster line)."""
    if len(h["clusters"]) < 2:
        return []
    return [
        f"- Cluster {c['name']}: OpenPBS **{c['openpbs_version']}**, server `{c['server']}`, inventory "
        f"`{c['inventory']}`, hosts {', '.join(c['hosts']) or '-'}"
        for c in h["clusters"]
    ]


def _versions_note(verdicts: list[Verdict]) -> list[str]:
    if len(verdicts) < 2:
        return []
    listed = "; ".join(f"{v.version} on {', '.join(v.clusters) or 'no cluster'}" for v in verdicts)
    return [f"- **Several OpenPBS versions** ({listed}): one verdict per version, side by side, never merged"]


def _test_label(test: dict[str, Any], several: bool) -> str:
    on = f" on {test['cluster']}" if several and test.get("cluster") else ""
    return f"{test['nodeid'].split('::')[-1]}{on}"


def write_markdown(path: Path, cat: Catalogue, verdicts: list[Verdict], results: dict[str, Any]) -> None:
    h = header(results)
    several = len(h["clusters"]) > 1
    lines = [
        "# OpenPBS conformance report",
        "",
        f"- OpenPBS: **{h['openpbs_version']}** ({h['openpbs_build']})"
        if len(verdicts) == 1
        else "- OpenPBS: several versions, see each cluster",
        *(_cluster_lines(h) or [
            f"- Cluster: inventory `{h['inventory']}`, server `{h['server']}`, hosts {', '.join(h['hosts']) or '-'}"
        ]),
        *_versions_note(verdicts),
        f"- Run: {h['started']} to {h['finished']}",
        *known_defects_line(h),
        *(f"- Status counts{f' ({v.version})' if len(verdicts) > 1 else ''}: "
          + ", ".join(f"{k}: {val}" for k, val in counts(v.rows).items()) for v in verdicts),
        "",
    ]  # fmt: skip
    titles = ["status | tests"] if len(verdicts) == 1 else [f"OpenPBS {v.version}" for v in verdicts]
    for key, feature in cat.features.items():
        lines += [
            f"## {feature.title}",
            "",
            f"| id | interface | {' | '.join(titles)} | differences |",
            "|---|---|" + "---|" * (len(titles) + (1 if len(verdicts) == 1 else 0)) + "---|",
        ]
        for index, r in enumerate(verdicts[0].rows):
            if r.interface.feature != key:
                continue
            cells = []
            for v in verdicts:
                row = v.rows[index]
                tests = "<br>".join(f"{_test_label(t, several)}: {t['outcome']}" for t in row.tests)
                tests += "".join(f"<br>{t.split('::')[-1]}: not run" for t in row.untested)
                cells.append(f"{row.status} | {tests or '-'}" if len(verdicts) == 1 else f"**{row.status}**<br>{tests}")
            diffs = "<br>".join(
                f"spec: {d['spec_says']} / OpenPBS: {d['openpbs_does']}" for d in _differences(verdicts, index)
            )
            lines.append(f"| {r.id} | {r.interface.title} | {' | '.join(cells)} | {diffs or '-'} |")
        lines.append("")
    path.write_text("\n".join(lines).replace("\n\n\n", "\n\n"))


CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#1f2328;max-width:1200px}
h1{margin-bottom:.2rem} .meta{color:#57606a;margin:.1rem 0}
table{border-collapse:collapse;width:100%;margin:1rem 0 2rem}
th,td{border:1px solid #d0d7de;padding:.4rem .6rem;vertical-align:top;text-align:left;font-size:.92rem}
th{background:#f6f8fa} .badge{color:#fff;border-radius:1rem;padding:.1rem .6rem;font-weight:600;white-space:nowrap}
.summary{color:#57606a;font-size:.85rem} .diff{background:#fff8c5;padding:.2rem .4rem;margin:.2rem 0}
code{font-size:.85rem} .counts span{margin-right:1rem}
"""


def _badge(status: str) -> str:
    return f'<span class="badge" style="background:{COLOURS[status]}">{html.escape(status)}</span>'


def _differences(verdicts: list[Verdict], index: int) -> list[dict[str, str]]:
    return [d for v in verdicts for d in v.rows[index].differences]


def write_html(path: Path, cat: Catalogue, verdicts: list[Verdict], results: dict[str, Any]) -> None:
    h = header(results)
    e = html.escape
    several = len(h["clusters"]) > 1
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>OpenPBS conformance report</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>OpenPBS conformance report</h1>",
        f"<p class='meta'>OpenPBS <b>{e(str(h['openpbs_version']))}</b>"
        f" &middot; build {e(str(h['openpbs_build']))}</p>",
        *(
            [f"<p class='meta'>{e(line.removeprefix('- ')).replace('**', '')}</p>" for line in _cluster_lines(h)]
            or [
                f"<p class='meta'>Cluster: inventory <code>{e(str(h['inventory']))}</code>,"
                f" server <code>{e(str(h['server']))}</code>, hosts {e(', '.join(h['hosts']) or '-')}</p>"
            ]
        ),
        *(
            f"<p class='meta'><b>{e(line.removeprefix('- ').replace('**', ''))}</b></p>"
            for line in _versions_note(verdicts)
        ),
        f"<p class='meta'>Run: {e(h['started'])} &rarr; {e(h['finished'])}</p>",
        *(f"<p class='meta'><b>{e(line.removeprefix('- '))}</b></p>" for line in known_defects_line(h)),
    ]
    for v in verdicts:
        title = f"OpenPBS {e(v.version)}: " if len(verdicts) > 1 else ""
        parts.append(
            f"<p class='counts'>{title}"
            + "".join(f"<span>{_badge(k)} {n}</span>" for k, n in counts(v.rows).items())
            + "</p>"
        )
    heads = (
        "<th>status</th><th>tests</th>"
        if len(verdicts) == 1
        else "".join(f"<th>OpenPBS {e(v.version)}</th>" for v in verdicts)
    )
    for key, feature in cat.features.items():
        parts.append(f"<h2>{e(feature.title)}</h2><p class='meta'>spec: <code>{e(feature.spec)}</code></p>")
        parts.append(f"<table><tr><th>id</th><th>interface</th>{heads}<th>differences</th></tr>")
        for index, r in enumerate(verdicts[0].rows):
            if r.interface.feature != key:
                continue
            cells = []
            for v in verdicts:
                row = v.rows[index]
                tests = "".join(_test_html(t, path.parent, several) for t in row.tests)
                tests += "".join(f"<div>{e(t.split('::')[-1])}: not run</div>" for t in row.untested)
                cells.append(
                    f"<td>{_badge(row.status)}</td><td>{tests or '-'}</td>"
                    if len(verdicts) == 1
                    else f"<td>{_badge(row.status)}{tests}</td>"
                )
            diffs = "".join(
                f"<div class='diff'><b>spec:</b> {e(d['spec_says'])}<br><b>OpenPBS:</b> {e(d['openpbs_does'])}"
                + (f"<br><code>{e(d['evidence'])}</code>" if d.get("evidence") else "")
                + "</div>"
                for d in _differences(verdicts, index)
            )
            notes = f"<div><i>shipped:</i> {e(r.interface.shipped_notes)}</div>" if r.interface.shipped_notes else ""
            parts.append(
                f"<tr><td><b>{e(r.id)}</b></td><td>{e(r.interface.title)}"
                f"<details class='summary'><summary>{e(r.interface.section)}: spec summary</summary>"
                f"{e(r.interface.summary)}{notes}</details></td>"
                f"{''.join(cells)}<td>{diffs or '-'}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts))


def _test_html(test: dict[str, Any], base: Path, several: bool = False) -> str:
    name = html.escape(_test_label(test, several))  # with its parameters, and its cluster in a parallel run
    line = f"<div>{name}: <b>{html.escape(test['outcome'])}</b>"
    if test.get("evidence"):
        rel = os.path.relpath(test["evidence"], base)
        line += f" (<a href='{html.escape(rel)}'>evidence</a>)"
    reason = test.get("skip_reason") or test.get("xfail_reason")
    if reason:
        line += f"<div class='summary'>{html.escape(str(reason))}</div>"
    return line + "</div>"


def verdicts(cat: Catalogue, results: dict[str, Any], test_dir: Path) -> list[Verdict]:
    """One verdict per OpenPBS version of the run's clusters (clusters.split_by_version)."""
    return [
        Verdict(version, names, build(cat, subset, test_dir))
        for version, names, subset in clusters.split_by_version(results)
    ]


def write_all(cat: Catalogue, results: dict[str, Any], test_dir: Path, out_dir: Path) -> list[Path]:
    found = verdicts(cat, results, test_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "conformance.html", out_dir / "conformance.md", out_dir / "conformance.json"]
    write_html(paths[0], cat, found, results)
    write_markdown(paths[1], cat, found, results)
    write_json(paths[2], cat, found, results)
    return paths
