"""Benchmark: local cluster up + first deploy from nothing, then a second (idempotent) deploy.

Targets (issue 2): `pbs-harness up` from nothing <= 60 s; second `deploy` <= 15 s with changed=0.
Writes reports/bench-deploy.json and prints a summary. Destroys the local cluster first.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HARNESS = [sys.executable, "-m", "pbs_harness"]
RECAP = re.compile(r"^\s+(\S+)\s+ok=\d+ changed=(\d+) failed=(\d+)", re.MULTILINE)


def timed(*args: str) -> tuple[float, str]:
    start = time.monotonic()
    proc = subprocess.run([*HARNESS, *args], cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"`pbs-harness {' '.join(args)}` failed (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return seconds, proc.stdout


def main() -> None:
    subprocess.run([*HARNESS, "down"], cwd=ROOT, check=True, capture_output=True)
    up_s, _ = timed("up", "--no-verify")
    again_s, out = timed("deploy", "--no-verify")
    changed = {host: int(c) for host, c, _failed in RECAP.findall(out)}
    result = {
        "up_from_nothing_s": round(up_s, 1),
        "second_deploy_s": round(again_s, 1),
        "second_deploy_changed": changed,
        "targets": {"up_from_nothing_s": 60, "second_deploy_s": 15, "second_deploy_changed": 0},
    }
    (ROOT / "reports").mkdir(exist_ok=True)
    (ROOT / "reports" / "bench-deploy.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    ok = up_s <= 60 and again_s <= 15 and not any(changed.values())
    print("targets met" if ok else "TARGETS MISSED")


if __name__ == "__main__":
    main()
