"""Which tests go to which cluster: units that stay together, handed out longest first.

A unit is what one worker runs from start to end, in collection order:
- the tests sharing an `xdist_group` marker (any module): tests that must see each other's state
  on one cluster declare it;
- otherwise a single test. Every test starts from the cluster's baseline and restores it (the
  plugin checks), so any test may run on any cluster; module-scoped fixtures are set up once per
  worker that runs a test of the module (they hold per-cluster things: roles, custom resources,
  a purge at module end), which costs a little setup and keeps nothing from working.

Units are handed out longest first by the durations of the last run (durations.py), each to the
first worker that is about to run out of work (list scheduling, longest processing time first).
A test without a recorded duration counts as the median of the recorded ones.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from pbs_harness.suite.parallel.durations import name_of

DEFAULT_SECONDS = 30.0  # a test's expected duration when no run recorded any
GROUP_MARK = "xdist_group"


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def group_of(item: pytest.Item) -> str | None:
    """The item's xdist_group name (xdist's own marker, `pytest.mark.xdist_group("name")`), or None."""
    mark = item.get_closest_marker(GROUP_MARK)
    if mark is None:
        return None
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


def unit_of(nodeid: str, group: str | None) -> str:
    return f"group {group}" if group else nodeid


def units(items: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """nodeid -> unit, for (nodeid, group) pairs."""
    return {nodeid: unit_of(nodeid, group) for nodeid, group in items}


def typical_of(durations: Mapping[str, float]) -> float:
    """The median recorded duration (bare-name aliases left out), or DEFAULT_SECONDS."""
    recorded = [s for n, s in durations.items() if not n.startswith("::")]
    return statistics.median(recorded) if recorded else DEFAULT_SECONDS


def expected(nodeids: Iterable[str], durations: Mapping[str, float], typical: float | None = None) -> float:
    """Expected seconds of these tests: recorded durations (by node id, else by the test's bare name
    when `durations.with_names` added it), the median of all recorded for the others."""
    typical = typical_of(durations) if typical is None else typical
    return sum(durations.get(n, durations.get(name_of(n), typical)) for n in nodeids)


def longest_first(work: Mapping[str, Iterable[str]], durations: Mapping[str, float]) -> list[str]:
    """Unit names, longest expected first (ties: the order given)."""
    order = list(work)
    typical = typical_of(durations)
    return sorted(order, key=lambda unit: (-expected(work[unit], durations, typical), order.index(unit)))


def plan(work: Mapping[str, list[str]], durations: Mapping[str, float], workers: int) -> list[list[str]]:
    """What each worker would run if every test took its expected time (for the bench and tests):
    units longest first, each to the worker that is free first."""
    loads = [0.0] * workers
    out: list[list[str]] = [[] for _ in range(workers)]
    for unit in longest_first(work, durations):
        k = loads.index(min(loads))
        out[k].append(unit)
        loads[k] += expected(work[unit], durations)
    return out


# --- the side channel: workers say what they collected, the controller reads it --------------------


def write_collection(run_dir: Path, workerid: str, items: list[pytest.Item], suite_of: Any) -> None:
    data = {i.nodeid: {"unit": unit_of(i.nodeid, group_of(i)), "suite": suite_of(i)} for i in items}
    tmp = run_dir / f"collection-{workerid}.tmp"
    tmp.write_text(json.dumps(data))
    tmp.replace(run_dir / f"collection-{workerid}.json")


def read_collection(run_dir: Path, workerid: str) -> dict[str, dict[str, str]]:
    try:
        return json.loads((run_dir / f"collection-{workerid}.json").read_text())
    except (OSError, ValueError):
        return {}


def make_scheduler(config: pytest.Config, log: Any, durations: Mapping[str, float], run_dir: Path) -> Any:
    """The xdist scheduler of a parallel run (xdist is imported only here: serial runs need none of it)."""
    from xdist.scheduler import LoadScopeScheduling

    class LongestFirstScheduling(LoadScopeScheduling):
        """xdist's loadscope with our units, the longest unit next, and a unit committed to a worker
        only when it is about to start its current unit's last test (not two tests before)."""

        unit_by_id: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if not self.unit_by_id and self.registered_collections:  # again while nothing was read
                first = next(iter(self.registered_collections))
                found = read_collection(run_dir, first.gateway.id)
                self.unit_by_id = {n: entry["unit"] for n, entry in found.items()}
            return (self.unit_by_id or {}).get(nodeid) or nodeid

        def _assign_work_unit(self, node: Any) -> None:
            work = {unit: list(tests) for unit, tests in self.workqueue.items()}
            self.workqueue.move_to_end(longest_first(work, durations)[0], last=False)
            super()._assign_work_unit(node)

        def _reschedule(self, node: Any) -> None:
            if node.shutting_down:
                return
            if self.workqueue and self._pending_of(self.assigned_work[node]) > 1:
                return
            super()._reschedule(node)

    return LongestFirstScheduling(config, log)
