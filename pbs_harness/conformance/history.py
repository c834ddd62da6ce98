"""The run history (#35, trends between runs): `report` keeps one small JSON file per run in
reports/history/ (its verdict, test counts, builds, and per test its outcome, duration, attempts and
cluster) and says at the top of its reports what changed since the previous run:

  new failures  failed (or error, xpassed) now, not in the previous run
  fixed         failed in the previous run, passed or xfailed now
  flaky         outcome changed at least twice over the last WINDOW runs (e.g. passed, failed,
                passed): a test that goes back and forth, whatever it did this time
  other         any other change of outcome (e.g. passed -> skipped), new and gone tests
  slower        passed in both, and took SLOWER_FACTOR times the median of its earlier runs and
                SLOWER_SECONDS more

A run is known by its start time: `report` run twice on one results file rewrites the same history
file, and compares only with runs that started before it. Files that are not a run's history are
named and left out, never read as one.
"""

from __future__ import annotations

import itertools
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pbs_harness.conformance.status import FAILED

FOLDER = "history"
KEEP = 100  # runs kept; the oldest go first
WINDOW = 5  # runs (this one included) looked at for flaky tests and duration medians
SLOWER_FACTOR = 1.5
SLOWER_SECONDS = 30.0
SCHEMA = 1


def entry(results: dict[str, Any], verdict: str, state: str, counts: dict[str, int], builds: list[str]) -> dict:
    """The history record of a run, from its results and its headline."""
    return {
        "schema": SCHEMA,
        "started": str(results.get("started", "")),
        "finished": str(results.get("finished", "")),
        "verdict": verdict,
        "state": state,
        "counts": counts,
        "builds": builds,
        "tests": {
            str(t["nodeid"]): {
                "outcome": str(t.get("outcome", "?")),
                "duration": round(float(t.get("duration", 0.0)), 2),
                "attempts": 1 + len(t.get("known_defects", [])),  # each earlier attempt met a known race
                **({"cluster": str(t["cluster"])} if t.get("cluster") else {}),
            }
            for t in results.get("tests", [])
        },
    }


def file_name(started: str) -> str:
    """run-20261128T042844.json for a run started 2026-11-28T04:28:44."""
    return "run-" + "".join(c for c in started if c.isalnum()) + ".json"


def _is_entry(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and data.get("schema") == SCHEMA
        and isinstance(data.get("started"), str)
        and isinstance(data.get("tests"), dict)
    )


def load(folder: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The runs kept in `folder`, oldest first, and the files left out (each with why)."""
    runs, skipped = [], []
    for path in sorted(folder.glob("run-*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            skipped.append(f"{path.name}: not readable JSON ({exc})")
            continue
        if _is_entry(data):
            runs.append(data)
        else:
            skipped.append(f"{path.name}: not a run history file (schema {SCHEMA})")
    return sorted(runs, key=lambda r: r["started"]), skipped


def record(folder: Path, run: dict[str, Any]) -> Path:
    """Keep `run` in `folder` (the same run again replaces its file); the oldest beyond KEEP go."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(run["started"])
    path.write_text(json.dumps(run, indent=1) + "\n")
    kept = sorted(folder.glob("run-*.json"))
    for old in kept[: max(0, len(kept) - KEEP)]:
        old.unlink()
    return path


def earlier(runs: list[dict[str, Any]], started: str) -> list[dict[str, Any]]:
    return [r for r in runs if r["started"] < started]


@dataclass(frozen=True)
class Change:
    nodeid: str
    before: str  # outcome in the previous run ("absent": it did not run then)
    now: str
    seen: tuple[str, ...] = ()  # outcomes over the window, oldest first ("-": did not run)

    @property
    def name(self) -> str:
        return self.nodeid.split("::", 1)[-1]


@dataclass(frozen=True)
class Slower:
    nodeid: str
    median: float  # seconds, over the earlier runs of the window where it passed
    now: float

    @property
    def name(self) -> str:
        return self.nodeid.split("::", 1)[-1]


@dataclass
class Trend:
    previous: dict[str, str]  # started, verdict of the previous run
    runs: int  # runs of the window, this one included
    new_failures: list[Change] = field(default_factory=list)
    fixed: list[Change] = field(default_factory=list)
    flaky: list[Change] = field(default_factory=list)
    other: list[Change] = field(default_factory=list)
    new_tests: list[str] = field(default_factory=list)
    gone_tests: list[str] = field(default_factory=list)
    slower: list[Slower] = field(default_factory=list)
    seconds: tuple[float, float] = (0.0, 0.0)  # sum of test durations: previous run, this run

    def line(self) -> str:
        """One line: 'Since the previous run (started ..., FAIL): 1 new failure, 2 fixed, ...'."""
        state = self.previous["verdict"].split(" — ", 1)[0]
        parts = [
            _count(len(self.new_failures), "new failure"),
            f"{len(self.fixed)} fixed",
            f"{len(self.flaky)} flaky (over {self.runs} runs)",
            _count(len(self.other), "other change"),
            _count(len(self.slower), "slower test"),
            f"tests took {self.seconds[0]:.0f} s -> {self.seconds[1]:.0f} s",
        ]
        if self.new_tests or self.gone_tests:
            parts.append(f"{len(self.new_tests)} new, {len(self.gone_tests)} gone")
        return f"Since the previous run ({self.previous['started']}, {state}): " + ", ".join(parts)

    def as_json(self) -> dict[str, Any]:
        def changes(found: list[Change]) -> list[dict[str, Any]]:
            return [{"nodeid": c.nodeid, "before": c.before, "now": c.now, "seen": list(c.seen)} for c in found]

        return {
            "line": self.line(),
            "previous": self.previous,
            "runs": self.runs,
            "new_failures": changes(self.new_failures),
            "fixed": changes(self.fixed),
            "flaky": changes(self.flaky),
            "other": changes(self.other),
            "new_tests": self.new_tests,
            "gone_tests": self.gone_tests,
            "slower": [{"nodeid": s.nodeid, "median": s.median, "now": s.now} for s in self.slower],
            "seconds": list(self.seconds),
        }


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _changes(seen: list[str]) -> int:
    ran = [o for o in seen if o != "-"]
    return sum(a != b for a, b in itertools.pairwise(ran))


def trend(run: dict[str, Any], before: list[dict[str, Any]]) -> Trend | None:
    """What changed in `run` since the runs `before` it (oldest first); None when there is none."""
    if not before:
        return None
    prev = before[-1]
    window = [*before[-(WINDOW - 1) :], run]
    out = Trend(previous={"started": prev["started"], "verdict": str(prev.get("verdict", ""))}, runs=len(window))
    now_tests, prev_tests = run["tests"], prev["tests"]
    for nodeid, test in now_tests.items():
        now = test["outcome"]
        seen = tuple(str(r["tests"].get(nodeid, {}).get("outcome", "-")) for r in window)
        if nodeid not in prev_tests:
            out.new_tests.append(nodeid)
            continue
        before_outcome = prev_tests[nodeid]["outcome"]
        change = Change(nodeid, before_outcome, now, seen)
        if _changes(list(seen)) >= 2:
            out.flaky.append(change)
        if now == before_outcome:
            continue
        if now in FAILED and before_outcome not in FAILED:
            out.new_failures.append(change)
        elif before_outcome in FAILED and now in ("passed", "xfailed"):
            out.fixed.append(change)
        else:
            out.other.append(change)
    for nodeid, test in now_tests.items():
        if nodeid in prev_tests:
            out.slower.extend(_slower(nodeid, test, before[-(WINDOW - 1) :]))
    out.gone_tests = [n for n in prev_tests if n not in now_tests]
    out.slower.sort(key=lambda s: s.now - s.median, reverse=True)
    out.seconds = (
        round(sum(t["duration"] for t in prev_tests.values()), 1),
        round(sum(t["duration"] for t in now_tests.values()), 1),
    )
    return out


def _slower(nodeid: str, test: dict[str, Any], before: list[dict[str, Any]]) -> list[Slower]:
    if test["outcome"] != "passed":
        return []
    earlier_passes = [
        float(r["tests"][nodeid]["duration"]) for r in before if r["tests"].get(nodeid, {}).get("outcome") == "passed"
    ]
    if not earlier_passes:
        return []
    median = statistics.median(earlier_passes)
    now = float(test["duration"])
    if now >= median * SLOWER_FACTOR and now - median >= SLOWER_SECONDS:
        return [Slower(nodeid, round(median, 1), round(now, 1))]
    return []
