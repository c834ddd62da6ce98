"""pytest side of the conformance report: per-test outcomes, spec and guards tags, observed differences.

At the end of a session the results go to a JSON file (default reports/results.json) that
`pbs-harness report` turns into the conformance report.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pbs_harness.conformance import catalogue, guards
from pbs_harness.conformance.status import NOT_IN_RELEASE

PLUGIN_NAME = "pbs-harness-recorder"
ENV_KEY = pytest.StashKey[dict[str, Any]]()
DIFFS_KEY = pytest.StashKey[list[dict[str, str]]]()
REPAIRS_KEY = pytest.StashKey[list[str]]()
FAULTS_KEY = pytest.StashKey[list[dict[str, str]]]()
OWN_MARKERS = ("spec", guards.MARKER, "parametrize")  # recorded apart (or not at all), not among "markers"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("pbs-harness").addoption(
        "--results-json", default=None, help="where to write per-test results (default reports/results.json)"
    )


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


ACCEPTANCE_CSS = Path(__file__).with_name("acceptance.css")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # Before pytest-html reads --css: its page wraps long failure text instead of scrolling sideways.
    css = getattr(config.option, "css", None)
    if isinstance(css, list) and str(ACCEPTANCE_CSS) not in css:
        css.append(str(ACCEPTANCE_CSS))
    # The results file is written where the reports land: the session itself, or the controller of
    # a parallel run (its workers' reports carry what is read from the test items, see makereport).
    if not _is_worker(config) and not config.pluginmanager.has_plugin(PLUGIN_NAME):
        config.pluginmanager.register(Recorder(config), PLUGIN_NAME)


def _ids(item: pytest.Item, marker: str) -> list[str]:
    return sorted({i for m in item.iter_markers(marker) for i in m.args})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    known = set(catalogue.load().ids())
    for item in items:
        ids = _ids(item, "spec")
        unknown = sorted(set(ids) - known)
        if unknown:
            raise pytest.UsageError(
                f"{item.nodeid}: spec marker names unknown catalogue entries {unknown}; "
                "add them to pbs_harness/conformance/catalogue.yaml or fix the marker"
            )
        problem = guards.marker_problem(ids, _ids(item, guards.MARKER), known)
        if problem:
            raise pytest.UsageError(f"{item.nodeid}: {problem}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """What the results need from the test item, as plain data on the report (xdist sends it to the
    controller with the report)."""
    report = yield
    report.pbsh_entry = {
        "specs": _ids(item, "spec"),
        "guards": _ids(item, guards.MARKER),
        "markers": sorted({m.name for m in item.iter_markers() if m.name not in OWN_MARKERS}),
        "differences": list(item.stash.get(DIFFS_KEY, [])),
    }
    if report.when == "teardown":
        _link_evidence(item, report)
    faults = item.stash.get(FAULTS_KEY, None)
    if faults:
        report.pbsh_entry["faults"] = list(faults)
    env = item.config.stash.get(ENV_KEY, None)
    if env:
        report.pbsh_environment = env
    repairs = item.config.stash.get(REPAIRS_KEY, [])
    if repairs:  # made while this phase ran (the session's start comes with its first test's setup)
        report.pbsh_repairs = list(repairs)
        repairs.clear()
    return report


def _link_evidence(item: pytest.Item, report: pytest.TestReport) -> None:
    """pytest-html's Links column: the test's evidence folders (their index.html), relative to the page;
    one per retried attempt ("attempt 1 evidence", pbs_harness.suite.defect_retry) and the last attempt's."""
    folders = list(dict.fromkeys(str(v) for k, v in item.user_properties if k == "evidence"))
    page = item.config.getoption("htmlpath", None)
    if not folders or not page:
        return
    try:
        from pytest_html import extras
    except ImportError:  # pytest-html not installed: no Links column to fill
        return
    for where in folders:
        href = os.path.relpath(Path(where) / "index.html", Path(page).resolve().parent)
        found = re.search(r"-attempt(\d+)$", where)
        name = f"attempt {found.group(1)} evidence" if found else "evidence"
        report.extras = [*getattr(report, "extras", []), extras.url(href, name=name)]


def record_faults(item: pytest.Item, windows: list[dict[str, str]]) -> None:
    """The test's fault windows (pbs_harness.suite.faults.log.FaultLog.windows): the run timeline's bands."""
    item.stash.setdefault(FAULTS_KEY, []).extend(windows)


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch).isoformat(timespec="milliseconds")


def record_repair(config: pytest.Config, text: str) -> None:
    """A baseline repair (pbs_harness.suite.baseline), reported with the phase of the test that is running."""
    config.stash.setdefault(REPAIRS_KEY, []).append(text)


class Recorder:
    """Per-test outcomes, spec and guards tags, differences and clusters, written at the end of the session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started = datetime.now().isoformat(timespec="seconds")
        self.tests: dict[str, dict[str, Any]] = {}
        self.environments: dict[str, dict[str, Any]] = {}  # by cluster name, in the order first seen

    def _entry(self, nodeid: str) -> dict[str, Any]:
        empty = {"outcome": "passed", "duration": 0.0, "specs": [], "guards": [], "differences": []}
        return self.tests.setdefault(nodeid, {"nodeid": nodeid, **empty})

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self._entry(report.nodeid)
        entry["duration"] += report.duration
        # When it ran, wall clock: the run timeline places it by these (first setup to last teardown).
        if report.when == "setup" or report.outcome == "rerun":  # a retried attempt comes first (defect_retry)
            entry.setdefault("started", _iso(report.start))
        entry["finished"] = _iso(report.stop)
        entry.update(getattr(report, "pbsh_entry", {}))
        cluster = next((str(v) for k, v in report.user_properties if k == "cluster"), None)
        if cluster:
            entry["cluster"] = cluster
        entry.setdefault("baseline_repairs", []).extend(getattr(report, "pbsh_repairs", []))
        env = getattr(report, "pbsh_environment", None)
        if env:
            self.environments.setdefault(str(env.get("cluster") or cluster or ""), env)
        if report.when == "call" and hasattr(report, "wasxfail"):
            entry["outcome"] = "xfailed" if report.skipped else "xpassed"
            entry["xfail_reason"] = report.wasxfail
        elif report.failed:
            # A failing test is "failed"; a failure only in setup/teardown (e.g. a baseline leak) is "error".
            if report.when == "call" or entry["outcome"] != "failed":
                entry["outcome"] = "failed" if report.when == "call" else "error"
            entry.setdefault("failure", str(report.longreprtext)[-3000:])
        elif report.skipped and entry["outcome"] == "passed":
            entry["outcome"] = "skipped"
            entry["skip_reason"] = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else ""
            if entry["skip_reason"].removeprefix("Skipped: ").startswith(NOT_IN_RELEASE):
                entry["not_in_release"] = True  # pbs_harness.suite.release_features: the release lacks a feature
        for key, value in report.user_properties:
            if key == "evidence":
                entry["evidence"] = value
            elif key == "known_defect" and value not in entry.setdefault("known_defects", []):
                entry["known_defects"].append(value)  # an attempt that met a known race (defect_retry)
            elif key == "known_defect_every_attempt":
                entry["defect_every_attempt"] = int(value)  # met on all of them: a failure

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from pbs_harness.common import project

        write_results(self, results_path(self.config, project.root()))


@dataclass
class Conformance:
    """Records "spec says X, OpenPBS did Y" with its evidence; the report lists each one."""

    item: pytest.Item
    recorded: list[dict[str, str]] = field(default_factory=list)

    def difference(self, spec_id: str, spec_says: str, openpbs_does: str, evidence: str = "") -> None:
        if spec_id not in catalogue.load().interfaces:
            raise ValueError(f"unknown spec interface {spec_id!r}")
        self.recorded.append(
            {"spec": spec_id, "spec_says": spec_says, "openpbs_does": openpbs_does, "evidence": evidence}
        )
        self.item.stash[DIFFS_KEY] = self.recorded


@pytest.fixture
def conformance(request: pytest.FixtureRequest) -> Conformance:
    """Record a spec-vs-shipped difference observed by this test."""
    return Conformance(request.node)


def record_environment(config: pytest.Config, env: dict[str, Any]) -> None:
    config.stash[ENV_KEY] = env


def results_path(config: pytest.Config, root: Path) -> Path:
    given = config.getoption("--results-json")
    return Path(given) if given else root / "reports" / "results.json"


def _relative(tests: list[dict[str, Any]], folder: Path) -> list[dict[str, Any]]:
    """Evidence paths relative to the results file's folder (results.load reads them back against it),
    so results.json holds no absolute path and moves with its reports."""
    out = []
    for test in tests:
        where = test.get("evidence")
        moved = where and Path(where).is_absolute()
        out.append({**test, "evidence": os.path.relpath(where, folder.resolve())} if moved else test)
    return out


def write_results(recorder: Recorder, path: Path) -> None:
    clusters = list(recorder.environments.values())
    data = {
        "started": recorder.started,
        "finished": datetime.now().isoformat(timespec="seconds"),
        "environment": clusters[0] if clusters else {},  # the one cluster of a serial run
        "clusters": clusters,
        "tests": _relative(list(recorder.tests.values()), path.parent),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
