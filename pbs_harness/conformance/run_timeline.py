"""timeline.html: the run as a Gantt chart (#35, after Allure's timeline and Jepsen's fault bands): a
lane per cluster, a bar per test from its start to its end coloured by outcome, the faults it
injected as red bands over its bar. Plain HTML and SVG: no script, nothing fetched.

Reads results.json's per-test `started`, `finished`, `cluster` and `faults` (the recorder writes
them); a results file of an older harness has no times, and the page says so.
"""

from __future__ import annotations

import html
from datetime import datetime
from pathlib import Path
from typing import Any

from pbs_harness.conformance.results import evidence_href

OUTCOME_COLOURS = {
    "passed": "#2da44e",
    "xfailed": "#bf8700",
    "skipped": "#8c959f",
    "failed": "#cf222e",
    "error": "#cf222e",
    "xpassed": "#cf222e",
}
FAULT_COLOUR = "#ff000055"
WIDTH, LANE, LEFT, TOP = 1300, 46, 90, 30
e = html.escape


def _when(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def _timed(results: dict[str, Any]) -> list[tuple[datetime, datetime, dict[str, Any]]]:
    out = []
    for test in results.get("tests", []):
        start, end = _when(test.get("started")), _when(test.get("finished"))
        if start and end:
            out.append((start, end, test))
    return sorted(out, key=lambda x: x[0])


def svg(results: dict[str, Any], base: Path) -> str:
    """The chart; `base` is the folder of the page (evidence links are relative to it)."""
    timed = _timed(results)
    if not timed:
        return ""
    t0 = min(s for s, _, _ in timed)
    t1 = max(f for _, f, _ in timed)
    span = max((t1 - t0).total_seconds(), 1.0)
    lanes = list(dict.fromkeys(str(t.get("cluster") or "-") for _, _, t in timed))
    scale = (WIDTH - LEFT - 10) / span

    def x(when: datetime) -> float:
        return LEFT + (when - t0).total_seconds() * scale

    height = TOP + LANE * len(lanes) + 10
    parts = [f"<svg id='gantt' xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {WIDTH} {height}' width='100%'>"]
    step = next(s for s in (30, 60, 120, 300, 600, 900, 1800, 3600, 7200) if span / s <= 14)
    tick = 0.0
    while tick <= span:
        at = LEFT + tick * scale
        label = datetime.fromtimestamp(t0.timestamp() + tick).strftime("%H:%M:%S")
        parts.append(
            f"<line x1='{at:.1f}' x2='{at:.1f}' y1='{TOP - 6}' y2='{height - 10}' stroke='#d0d7de'/>"
            f"<text x='{at:.1f}' y='{TOP - 10}' font-size='11' text-anchor='middle'>{label}</text>"
        )
        tick += step
    for index, lane in enumerate(lanes):
        y = TOP + index * LANE
        parts.append(f"<text x='4' y='{y + LANE / 2 + 4:.1f}' font-size='13' font-weight='600'>{e(lane)}</text>")
        for start, end, test in timed:
            if str(test.get("cluster") or "-") != lane:
                continue
            colour = OUTCOME_COLOURS.get(test["outcome"], "#8c959f")
            w = max(x(end) - x(start), 1.5)
            title = (
                f"{test['nodeid'].split('::', 1)[-1]}: {test['outcome']}, "
                f"{start:%H:%M:%S} to {end:%H:%M:%S} ({(end - start).total_seconds():.1f} s)"
            )
            bar = (
                f"<rect class='test {e(test['outcome'])}' x='{x(start):.1f}' y='{y + 4}' width='{w:.1f}' "
                f"height='{LANE - 14}' fill='{colour}' stroke='#fff' stroke-width='0.5'>"
                f"<title>{e(title)}</title></rect>"
            )
            href = evidence_href(test, base)
            parts.append(f"<a href='{e(href)}'>{bar}</a>" if href else bar)
            for fault in test.get("faults", []):
                began = _when(fault.get("started"))
                healed = _when(fault.get("healed")) or end
                if began is None:
                    continue
                words = f"fault {fault.get('kind')} on {fault.get('target')}: {began:%H:%M:%S} to {healed:%H:%M:%S}"
                parts.append(
                    f"<rect class='fault' x='{x(began):.1f}' y='{y}' width='{max(x(healed) - x(began), 2):.1f}' "
                    f"height='{LANE - 6}' fill='{FAULT_COLOUR}'><title>{e(words)}</title></rect>"
                )
    parts.append("</svg>")
    return "".join(parts)


def write(path: Path, results: dict[str, Any]) -> Path:
    chart = svg(results, path.parent)
    timed = _timed(results)
    legend = " ".join(
        f"<span style='background:{c};color:#fff;padding:0 .4rem;border-radius:.2rem'>{o}</span>"
        for o, c in OUTCOME_COLOURS.items()
        if o in ("passed", "xfailed", "failed", "skipped")
    )
    legend += f" <span style='background:{FAULT_COLOUR};padding:0 .4rem'>fault (start to heal)</span>"
    body = (
        f"<p>{len(timed)} tests on {len({t.get('cluster') for _, _, t in timed})} cluster(s), "
        f"{results.get('started', '?')} to {results.get('finished', '?')}. Hover a bar for the test; "
        f"a bar with evidence links to it.</p><p>{legend}</p>{chart}"
        if chart
        else "<p>No test in this results file has start and end times (a results file of a harness that "
        "did not record them): no timeline.</p>"
    )
    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>Run timeline</title><style>"
        "body{font-family:system-ui,sans-serif;margin:1.5rem 2rem;max-width:1340px} svg{border:1px solid #d0d7de}"
        "</style></head><body><h1>Run timeline</h1><p><a href='conformance.html'>conformance report</a></p>"
        f"{body}</body></html>"
    )
    return path
