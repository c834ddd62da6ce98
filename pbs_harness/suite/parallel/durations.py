"""Durations of the last run of each test (a pytest plugin), by which parallel runs order their units.

Kept in pytest's cache (.pytest_cache, key pbs-harness/durations): after every session that ran
tests (serial, or the controller of a parallel one) each finished test's setup+call+teardown time
replaces its previous one; tests that did not run keep theirs. Skipped and interrupted tests are not
recorded.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

CACHE_KEY = "pbs-harness/durations"
SEEN_KEY = pytest.StashKey[dict[str, float]]()
PLUGIN_NAME = "pbs-harness-durations"


def merged(previous: Mapping[str, float], finished: Mapping[str, float]) -> dict[str, float]:
    return {**previous, **{nodeid: round(seconds, 2) for nodeid, seconds in finished.items()}}


def load(config: pytest.Config) -> dict[str, float]:
    cache = getattr(config, "cache", None)
    if cache is None:
        return {}
    data = cache.get(CACHE_KEY, {})
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}


def name_of(nodeid: str) -> str:
    """A test's name without its module ("::test_x[param]"): the key a moved test is found by."""
    return "::" + nodeid.split("::", 1)[1] if "::" in nodeid else nodeid


def with_names(recorded: Mapping[str, float]) -> dict[str, float]:
    """The recorded durations plus each test's under its bare name (`name_of`), where that name is
    unique among them: a test that moved to another module (a suite split into a package) keeps its
    place in the longest-first order on the first run after the move."""
    names: dict[str, list[float]] = {}
    for nodeid, seconds in recorded.items():
        if "::" in nodeid:
            names.setdefault(name_of(nodeid), []).append(seconds)
    return {**recorded, **{name: found[0] for name, found in names.items() if len(found) == 1}}


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


class Recorder:
    """Sums each test's phase durations as its reports arrive; a test counts once its teardown is in."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.partial: dict[str, float] = {}
        # A skipped test's time says nothing of its next run (e.g. `make test` without a cluster).
        self.skipped: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skipped.add(report.nodeid)
        self.partial[report.nodeid] = self.partial.get(report.nodeid, 0.0) + report.duration
        if report.when == "teardown":
            seconds = self.partial.pop(report.nodeid)
            if report.nodeid not in self.skipped:
                self.config.stash[SEEN_KEY][report.nodeid] = seconds

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        finished = self.config.stash.get(SEEN_KEY, {})
        cache = getattr(self.config, "cache", None)
        if finished and cache is not None:
            cache.set(CACHE_KEY, merged(load(self.config), finished))


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SEEN_KEY] = {}
    if not _is_worker(config) and not config.pluginmanager.has_plugin(PLUGIN_NAME):
        config.pluginmanager.register(Recorder(config), PLUGIN_NAME)
