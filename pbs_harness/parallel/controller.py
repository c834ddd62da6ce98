"""The controller of a parallel run (a pytest plugin, active only with --worker-inventory and -n).

- Hands out the units of schedule.py, longest first by the last run's durations.
- Learns what the workers collected (their suites, the number of tests) for the progress lines.
- A stop signal (Ctrl-C, SIGTERM) goes on to every worker, which heals its running test and ends;
  the controller ends when they have, and writes the run's reports. Killing it outright would leave
  the workers' faults (partitions, paused hosts) for the next session's start to heal.
- The evidence folder of the run is fixed here, so that every worker's folders sit side by side
  under one run-<time>/, one folder per cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from pbs_harness.parallel import binding, durations, schedule

PLUGIN_NAME = "pbs-harness-parallel-controller"


class Controller:
    def __init__(self, config: pytest.Config, run_dir: Path) -> None:
        self.config = config
        self.run_dir = run_dir
        self.stopping = False

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        return schedule.make_scheduler(config, log, durations.load(config), self.run_dir)

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        progress = self.config.pluginmanager.get_plugin("pbs-harness-progress")
        if progress is None:
            return
        found = schedule.read_collection(self.run_dir, node.gateway.id)
        progress.learn({n: e["suite"] for n, e in found.items()}, total=len(ids))

    def worker_pids(self) -> list[int]:
        pids = []
        for path in sorted(self.run_dir.glob("worker-*.json")):
            try:
                pids.append(int(json.loads(path.read_text())["pid"]))
            except (OSError, ValueError, KeyError):
                continue
        return pids

    def forward(self, signum: int, _frame: object) -> None:
        """Stop: every worker gets SIGINT (its teardown heals); the controller waits for them."""
        first = not self.stopping
        self.stopping = True
        note = "stopping: each cluster's running test is healed first" if first else "still healing, please wait"
        os.write(2, f"\npbs-harness: signal {signum}: {note}\n".encode())
        for pid in self.worker_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)

    def pytest_unconfigure(self) -> None:
        shutil.rmtree(self.run_dir, ignore_errors=True)


@pytest.hookimpl(trylast=True)  # after xdist registered its dsession, and pbs_harness.plugin its signal handlers
def pytest_configure(config: pytest.Config) -> None:
    if not binding.is_parallel_controller(config) or config.pluginmanager.has_plugin(PLUGIN_NAME):
        return
    if not config.pluginmanager.has_plugin("dsession"):
        return  # no workers (-n missing, or --collect-only): a session of its own, on --inventory
    run_dir = Path(tempfile.mkdtemp(prefix="pbs-harness-parallel-"))
    config.option.parallel_run_dir = str(run_dir)  # the workers get the controller's options
    if not config.getoption("--evidence-dir"):
        from pbs_harness import plugin, project

        config.option.evidence_dir = str(project.root() / "reports" / "evidence" / plugin.RUN_STAMP)
    controller = Controller(config, run_dir)
    config.pluginmanager.register(controller, PLUGIN_NAME)
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, controller.forward)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """In a worker: write what it collected (unit and suite of each test) for the controller."""
    config = session.config
    wid = binding.worker_id(config)
    run_dir = config.getoption("--parallel-run-dir")
    if wid is None or not run_dir:
        return
    from pbs_harness.progress import suite_of

    schedule.write_collection(Path(run_dir), wid, session.items, suite_of)
