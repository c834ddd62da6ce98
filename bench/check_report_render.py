"""Render a run's reports in headless Chromium (Debian's `chromium`, no browser download) and check
what a reader sees (#35):

  - conformance.html names every catalogue entry, and its one-line verdict (#verdict) ends within
    the first 900 px of a 1400 px wide window;
  - no page is wider than the window (no horizontal scrolling) at 1400 px: conformance.html,
    timeline.html and acceptance.html when they are there;
  - every link of conformance.html and timeline.html resolves: a file that exists, an anchor the
    target has;
  - timeline.html has its Gantt chart (an <svg id='gantt'> with a bar per test).

The pages carry no script; the check measures a copy of each with a few lines of JavaScript
appended and reads the numbers back from Chromium's --dump-dom. It saves conformance.png (the first
screen) next to the report. Exit 0: all hold; 1: something does not (each problem printed);
2: Chromium or the report is missing (the message says how to get it).

Usage: python bench/check_report_render.py [reports/conformance.html]
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pbs_harness.conformance import catalogue  # noqa: E402 - after sys.path setup

WIDTH, FIRST_SCREEN = 1400, 900
# Flags for a closed network: no background fetches, no first-run, fresh profile.
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
]  # fmt: skip
MEASURE = """<script>
(function(){var v=document.getElementById('verdict'),g=document.getElementById('gantt');
var r={scrollWidth:document.documentElement.scrollWidth,innerWidth:window.innerWidth,
verdictBottom:v?v.getBoundingClientRect().bottom:null,
ganttBars:g?g.querySelectorAll('rect.test').length:null,ganttHeight:g?g.getBoundingClientRect().height:null,
wide:[].slice.call(document.querySelectorAll('table,pre,svg')).filter(function(e){
return e.getBoundingClientRect().right>window.innerWidth+1}).map(function(e){return e.tagName}).slice(0,5)};
document.body.setAttribute('data-measured',JSON.stringify(r));})();
</script>"""


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag == "a" and found.get("href"):
            self.hrefs.append(str(found["href"]))


def parse(page: Path) -> _Links:
    links = _Links()
    links.feed(page.read_text(errors="replace"))
    return links


def broken_links(page: Path) -> list[str]:
    """Links of `page` that do not resolve (only local files and anchors: the reports fetch nothing)."""
    problems = []
    own = parse(page)
    for href in own.hrefs:
        parts = urlsplit(href)
        if parts.scheme or parts.netloc:
            problems.append(f"{page.name}: link leaves the report folder: {href}")
            continue
        target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        if not target.exists():
            problems.append(f"{page.name}: link to a missing file: {href}")
        elif parts.fragment and target.suffix == ".html" and parts.fragment not in parse(target).ids:
            problems.append(f"{page.name}: link to a missing anchor: {href}")
    return problems


def measure(browser: str, page: Path) -> dict:
    """The page's layout at 1400 px, from a measuring copy of it rendered by Chromium."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = page.with_name(f".measure-{page.name}")  # beside it: its relative links and images still resolve
        text = page.read_text(errors="replace")
        copy.write_text(text.replace("</body>", MEASURE + "</body>") if "</body>" in text else text + MEASURE)
        try:
            argv = [browser, *FLAGS, f"--user-data-dir={tmp}", f"--window-size={WIDTH},{FIRST_SCREEN}", "--dump-dom"]
            proc = subprocess.run(
                [*argv, copy.resolve().as_uri()], capture_output=True, text=True, timeout=120, check=False
            )
        finally:
            copy.unlink(missing_ok=True)
    found = re.search(r"data-measured=\"([^\"]*)\"", proc.stdout)
    if proc.returncode != 0 or not found:
        raise RuntimeError(f"chromium could not render {page} (rc={proc.returncode}): {proc.stderr[-600:]}")
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def screenshot(browser: str, page: Path) -> Path:
    png = page.with_suffix(".png")
    with tempfile.TemporaryDirectory() as tmp:
        argv = [
            browser,
            *FLAGS,
            f"--user-data-dir={tmp}",
            f"--screenshot={png}",
            f"--window-size={WIDTH},{FIRST_SCREEN}",
        ]
        subprocess.run([*argv, page.resolve().as_uri()], capture_output=True, text=True, timeout=120, check=False)
    return png


def check(page: Path, browser: str) -> list[str]:
    problems = []
    text = page.read_text(errors="replace")
    missing = [i for i in catalogue.load().ids() if f"<b>{i}</b>" not in text]
    if missing:
        problems.append(f"report lacks catalogue entries: {missing}")
    pages = [page] + [page.parent / n for n in ("timeline.html", "acceptance.html") if (page.parent / n).exists()]
    for each in pages:
        got = measure(browser, each)
        if got["scrollWidth"] > got["innerWidth"] + 1:
            problems.append(
                f"{each.name}: wider than a {WIDTH} px window ({got['scrollWidth']} px; overflowing: {got['wide']})"
            )
        if each == page and (got["verdictBottom"] is None or got["verdictBottom"] > FIRST_SCREEN):
            problems.append(
                f"{each.name}: the verdict is not within the first {FIRST_SCREEN} px ({got['verdictBottom']})"
            )
        if each.name == "timeline.html" and not (got["ganttBars"] and got["ganttHeight"]):
            problems.append("timeline.html: no Gantt chart (svg#gantt with a bar per test)")
    if not (page.parent / "timeline.html").exists():
        problems.append("no timeline.html beside the report")
    for each in [page, page.parent / "timeline.html"]:
        if each.exists():
            problems += broken_links(each)
    return problems


def main() -> int:
    page = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "reports" / "conformance.html"
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("chromium not found: apt-get install -y chromium (Debian's; no browser is downloaded)")
        return 2
    if not page.exists():
        print(f"{page} not found: run `pbs-harness report` first")
        return 2
    problems = check(page, browser)
    for problem in problems:
        print(f"check_report_render: {problem}")
    if problems:
        return 1
    png = screenshot(browser, page)
    print(f"check_report_render: {page} and its timeline render at {WIDTH} px: verdict on the first screen, "
          f"no horizontal overflow, every link resolves, Gantt chart present (first screen: {png})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
