"""pytest side of the conformance report: per-test outcomes, spec tags, observed differences.

At the end of a session the results go to a JSON file (default reports/results.json) that
`pbs-harness report` turns into the conformance report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pbs_harness.conformance import catalogue

RESULTS_KEY = pytest.StashKey[dict[str, dict[str, Any]]]()
ENV_KEY = pytest.StashKey[dict[str, Any]]()
STARTED_KEY = pytest.StashKey[str]()
DIFFS_KEY = pytest.StashKey[list[dict[str, str]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("pbs-harness").addoption(
        "--results-json", default=None, help="where to write per-test results (default reports/results.json)"
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[STARTED_KEY] = datetime.now().isoformat(timespec="seconds")
    session.config.stash[RESULTS_KEY] = {}


def _entry(config: pytest.Config, nodeid: str) -> dict[str, Any]:
    return config.stash[RESULTS_KEY].setdefault(
        nodeid, {"nodeid": nodeid, "outcome": "passed", "duration": 0.0, "specs": [], "differences": []}
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    known = set(catalogue.load().ids())
    for item in items:
        ids = [i for m in item.iter_markers("spec") for i in m.args]
        unknown = sorted(set(ids) - known)
        if unknown:
            raise pytest.UsageError(
                f"{item.nodeid}: spec marker names unknown catalogue entries {unknown}; "
                "add them to pbs_harness/conformance/catalogue.yaml or fix the marker"
            )


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    config = getattr(report, "_pbsh_config", None)
    if config is None:
        return
    entry = _entry(config, report.nodeid)
    entry["duration"] += report.duration
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
    for key, value in report.user_properties:
        if key == "evidence":
            entry["evidence"] = value


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    report._pbsh_config = item.config
    entry = _entry(item.config, item.nodeid)
    entry["specs"] = sorted({i for m in item.iter_markers("spec") for i in m.args})
    entry["markers"] = sorted({m.name for m in item.iter_markers() if m.name not in ("spec", "parametrize")})
    entry["differences"] = item.stash.get(DIFFS_KEY, [])
    return report


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


def pytest_sessionfinish(session: pytest.Session) -> None:
    from pbs_harness import project

    write_results(session.config, results_path(session.config, project.root()))


def results_path(config: pytest.Config, root: Path) -> Path:
    given = config.getoption("--results-json")
    return Path(given) if given else root / "reports" / "results.json"


def write_results(config: pytest.Config, path: Path) -> None:
    data = {
        "started": config.stash.get(STARTED_KEY, ""),
        "finished": datetime.now().isoformat(timespec="seconds"),
        "environment": config.stash.get(ENV_KEY, {}),
        "tests": list(config.stash.get(RESULTS_KEY, {}).values()),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
