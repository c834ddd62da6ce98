"""Render reports/conformance.html in headless Chromium and save a screenshot (reports/conformance.png).

Checks that the page renders (Chromium exits 0 and the PNG is a non-trivial image) and that the
HTML names every catalogue entry. Needs Debian's `chromium`; exits 2 with a message without it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pbs_harness.conformance import catalogue  # noqa: E402 - after sys.path setup

# Flags for a closed network: no background fetches, no first-run, fresh profile.
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
]  # fmt: skip


def main() -> int:
    page = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "reports" / "conformance.html"
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("chromium not found: apt-get install -y chromium")
        return 2
    if not page.exists():
        print(f"{page} not found: run `pbs-harness report` first")
        return 2
    text = page.read_text()
    missing = [i for i in catalogue.load().ids() if f"<b>{i}</b>" not in text]
    if missing:
        print(f"report lacks catalogue entries: {missing}")
        return 1
    png = page.with_suffix(".png")
    with tempfile.TemporaryDirectory() as profile:
        argv = [browser, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={png}", "--window-size=1280,2400"]
        proc = subprocess.run(
            [*argv, page.resolve().as_uri()], capture_output=True, text=True, timeout=120, check=False
        )
    if proc.returncode != 0 or not png.exists() or png.stat().st_size < 10_000:
        print(f"rendering failed (rc={proc.returncode}): {proc.stderr[-800:]}")
        return 1
    print(f"rendered {page} -> {png} ({png.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
