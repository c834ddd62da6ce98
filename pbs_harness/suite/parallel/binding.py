"""Which cluster a test session tests, and the name it goes by in reports (a pytest plugin).

- `--worker-inventory PATH`, once per cluster: xdist worker gwK takes the K-th as its --inventory.
  The controller starts no test itself; it only tells the workers apart.
- Every test carries the user property `cluster` (JUnit <property>, the HTML report's column, the
  results file, the progress line): a local cluster's host-name prefix, else the server's name.
- A worker ignores a second stop signal while the first one's teardown heals the running test; the
  controller forwards a stop signal to its workers instead of dying before they have healed
  (see controller.py).
"""

from __future__ import annotations

import html
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from pbs_harness.remote.inventory import cluster_name

WORKER_INVENTORY = "--worker-inventory"
CLUSTER_PROPERTY = "cluster"
NAME_KEY = pytest.StashKey[str]()
# What the controller tells each worker (xdist's workerinput): where the workers write their pid and
# what they collected, and the run's evidence folder.
RUN_DIR_INPUT = "pbs_harness_run_dir"
EVIDENCE_INPUT = "pbs_harness_evidence_dir"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("pbs-harness").addoption(
        WORKER_INVENTORY,
        action="append",
        default=[],
        dest="worker_inventories",
        metavar="PATH",
        help="with -n N: the inventory of each worker's cluster, once per worker, in worker order",
    )


def worker_id(config: pytest.Config) -> str | None:
    """gw0, gw1, ... in an xdist worker; None in the controller or a session without workers."""
    workerinput = getattr(config, "workerinput", None)
    return workerinput["workerid"] if workerinput else None


def run_dir(config: pytest.Config) -> Path | None:
    given = getattr(config, "workerinput", {}).get(RUN_DIR_INPUT)
    return Path(given) if given else None


def evidence_dir(config: pytest.Config) -> Path | None:
    """The run's evidence folder as the controller chose it (a worker's own clock would differ)."""
    given = getattr(config, "workerinput", {}).get(EVIDENCE_INPUT)
    return Path(given) if given else None


def worker_index(workerid: str) -> int:
    return int(workerid.removeprefix("gw"))


def inventory_for(workerid: str, inventories: list[str]) -> str:
    """The inventory worker `workerid` tests; a worker beyond the list is a usage error (-n vs inventories)."""
    index = worker_index(workerid)
    if index >= len(inventories):
        raise pytest.UsageError(
            f"worker {workerid} has no cluster: {len(inventories)} {WORKER_INVENTORY} given; "
            f"give one per worker (-n {len(inventories)})"
        )
    return inventories[index]


def is_parallel_controller(config: pytest.Config) -> bool:
    return bool(config.option.worker_inventories) and worker_id(config) is None


def _ignore_repeats(first_handler: Any) -> Any:
    """A handler raising KeyboardInterrupt once; later signals only say that healing goes on."""
    fired = threading.Event()

    def handler(signum: int, frame: object) -> None:
        if fired.is_set():
            os.write(2, b"pbs-harness: already stopping: the running test's teardown heals first\n")
            return
        fired.set()
        first_handler(signum, frame)

    return handler


@pytest.hookimpl(trylast=True)  # after pbs_harness.suite.plugin installed its SIGTERM/SIGINT handlers
def pytest_configure(config: pytest.Config) -> None:
    wid = worker_id(config)
    if wid is None:
        return
    if config.option.worker_inventories:
        config.option.inventory = inventory_for(wid, config.option.worker_inventories)
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            current = signal.getsignal(signum)
            if callable(current):
                signal.signal(signum, _ignore_repeats(current))
    where = run_dir(config)
    if where is not None:
        _write_json(where / f"worker-{wid}.json", {"pid": os.getpid(), "inventory": config.option.inventory})


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def session_cluster_name(config: pytest.Config) -> str | None:
    """The name of the cluster this session tests, once its inventory loads; None without one."""
    if NAME_KEY in config.stash:
        return config.stash[NAME_KEY] or None
    from pbs_harness.common.errors import HarnessError
    from pbs_harness.suite import availability

    name = ""
    try:
        if availability.unavailable_reason(config, reach=False) is None:
            name = cluster_name(availability.session_inventory(config))
    except (HarnessError, OSError, ValueError):
        pass  # no usable inventory: the inventory fixture skips with the reason
    config.stash[NAME_KEY] = name
    return name or None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> None:
    """Every report of the test names its cluster (tests that touch no cluster name none)."""
    if not {"cluster", "pbs", "nemesis", "inventory"} & set(getattr(item, "fixturenames", ())):
        return
    name = session_cluster_name(item.config)
    if name and (CLUSTER_PROPERTY, name) not in item.user_properties:
        item.user_properties.append((CLUSTER_PROPERTY, name))


def cluster_of(report: pytest.TestReport) -> str | None:
    return next((str(v) for k, v in report.user_properties if k == CLUSTER_PROPERTY), None)


def targets_line(config: pytest.Config) -> str:
    """The controller's header: every worker's cluster (read from its inventory), or why it has none."""
    from pbs_harness.common import project
    from pbs_harness.common.errors import HarnessError
    from pbs_harness.suite import availability

    parts = []
    for index, given in enumerate(config.option.worker_inventories):
        try:
            inv = availability.load_inventory(config, project.inventory_path(given))
            what = f"server {inv.server.name}, {len(inv.hosts)} hosts, {inv.path}"
            parts.append(f"gw{index} {cluster_name(inv)} ({what})")
        except HarnessError as exc:
            parts.append(f"gw{index} {given}: {exc.message}")
    return f"pbs-harness: acceptance targets, one worker per cluster: {'; '.join(parts)}"


class HtmlReport:
    """pytest-html: a Cluster column, and the run's clusters with their OpenPBS versions above the table."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        cells.insert(2, "<th>Cluster</th>")

    def pytest_html_duration_format(self, duration: float) -> str:
        return html_duration(duration)

    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        cells.insert(2, f"<td>{html.escape(cluster_of(report) or '-')}</td>")

    def pytest_html_results_summary(self, prefix: list[str], summary: list[str], postfix: list[str]) -> None:
        recorder = self.config.pluginmanager.get_plugin("pbs-harness-recorder")
        for name, env in getattr(recorder, "environments", {}).items():
            prefix.append(
                f"<p>Cluster <b>{html.escape(name or '?')}</b>: OpenPBS {html.escape(str(env.get('pbs_version')))}, "
                f"server {html.escape(str(env.get('server')))}, inventory {html.escape(str(env.get('inventory')))}</p>"
            )


def html_duration(seconds: float) -> str:
    """pytest-html's duration cell, "320 ms" or "00:01:35". pytest-html 4.2 rounds the seconds alone and
    printed 00:00:60 for a 59.6 s test (#35); this rounds the whole time first."""
    if seconds < 1:
        return f"{round(seconds * 1000)} ms"
    whole = round(seconds)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    html_report = config.pluginmanager.has_plugin("html")
    if worker_id(config) is None and html_report and not config.pluginmanager.has_plugin("pbs-harness-html"):
        config.pluginmanager.register(HtmlReport(config), "pbs-harness-html")
