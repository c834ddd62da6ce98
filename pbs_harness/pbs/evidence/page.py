"""index.html of one evidence folder: what the test was, why the folder exists (failed, xfailed, a
retried attempt), links to every file in it, and the merged timeline as a table (plain HTML)."""

from __future__ import annotations

import html
from pathlib import Path

from pbs_harness.pbs.evidence.timeline import Entry

MAX_ROWS = 4000  # a longer timeline is in timeline.txt whole
COLOURS = {"command": "#f6f8fa", "fault": "#ffebe9", "accounting": "#ddf4ff", "server": "#fff", "sched": "#fbefff"}
e = html.escape


def write(folder: Path, nodeid: str, why: str, cluster: str, entries: list[Entry]) -> None:
    files = sorted(
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != "index.html"
    )
    links = "".join(f"<li><a href='{e(f)}'>{e(f)}</a></li>" for f in files)
    rows = "".join(
        f"<tr style='background:{COLOURS.get(x.source, '#fff')}'><td>{x.time:%H:%M:%S.%f}"[:-3]
        + f"</td><td>{e(x.source)}</td><td>{e(x.host)}</td><td><code>{e(x.text)}</code></td></tr>"
        for x in entries[:MAX_ROWS]
    )
    more = f"<p>{len(entries) - MAX_ROWS} more entries in timeline.txt</p>" if len(entries) > MAX_ROWS else ""
    folder.joinpath("index.html").write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>evidence: "
        + e(nodeid)
        + "</title><style>body{font-family:system-ui,sans-serif;margin:1.5rem;max-width:1340px}"
        "table{border-collapse:collapse;width:100%;table-layout:fixed}td,th{border:1px solid #d0d7de;"
        "padding:.2rem .4rem;font-size:.85rem;vertical-align:top;overflow-wrap:anywhere}"
        "code{white-space:pre-wrap;overflow-wrap:anywhere}</style></head><body>"
        f"<h1>{e(nodeid)}</h1><p><b>{e(why)}</b>{' on cluster ' + e(cluster) if cluster else ''}</p>"
        "<p><a href='timeline.txt'>timeline.txt</a></p>"
        f"<h2>Files</h2><ul>{links}</ul><h2>Timeline</h2><table><colgroup><col style='width:8%'>"
        "<col style='width:7%'><col style='width:8%'><col></colgroup>"
        f"<tr><th>time</th><th>source</th><th>host</th><th>event</th></tr>{rows}</table>{more}</body></html>"
    )
