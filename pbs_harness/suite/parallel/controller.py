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

from pbs_harness.suite import evidence_dir
from pbs_harness.suite.parallel import binding, durations, schedule

PLUGIN_NAME = "pbs-harness-parallel-controller"
INTERRUPTED = "interrupted by a stop signal before it finished; its teardown healed the cluster"


class Controller:
    def __init__(self, config: pytest.Config, run_dir: Path, evidence_dir: str) -> None:
        self.config = config
        self.run_dir = run_dir
        self.evidence_dir = evidence_dir
        self.stopping = False

    def pytest_configure_node(self, node: Any) -> None:
        """What each worker is told beyond the command line (which it parses again for itself)."""
        node.workerinput[binding.RUN_DIR_INPUT] = str(self.run_dir)
        node.workerinput[binding.EVIDENCE_INPUT] = self.evidence_dir

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        return schedule.make_scheduler(config, log, durations.with_names(durations.load(config)), self.run_dir)

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        progress = self.config.pluginmanager.get_plugin("pbs-harness-progress")
        if progress is None:
            return
        found = schedule.read_collection(self.run_dir, node.gateway.id)
        progress.learn({n: e["suite"] for n, e in found.items()}, total=len(ids))

    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """A worker that ends on our stop signal is not a crash: its running test is reported as
        interrupted (a skip saying so), not as a failure of OpenPBS."""
        if self.stopping:
            report.outcome = "skipped"
            report.longrepr = (crashitem.split("::", maxsplit=1)[0], 0, f"Skipped: {INTERRUPTED}")

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


@pytest.hookimpl(trylast=True)  # after pbs_harness.suite.plugin installed its signal handlers
def pytest_configure(config: pytest.Config) -> None:
    if not binding.is_parallel_controller(config) or config.pluginmanager.has_plugin(PLUGIN_NAME):
        return
    if getattr(config.option, "dist", "no") == "no" or config.option.collectonly:
        return  # no workers (-n missing, or --collect-only): a session of its own, on --inventory
    run_dir = Path(tempfile.mkdtemp(prefix="pbs-harness-parallel-"))
    controller = Controller(config, run_dir, str(evidence_dir.evidence_root(config)))
    config.pluginmanager.register(controller, PLUGIN_NAME)
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, controller.forward)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """In a worker: write what it collected (unit and suite of each test) for the controller. First,
    before xdist's own hook reports the collection: the controller reads the file when that report
    arrives (written after it, the controller had read nothing and named each test's module, not its
    suite, once suites spanned modules)."""
    config = session.config
    wid = binding.worker_id(config)
    run_dir = binding.run_dir(config)
    if wid is None or run_dir is None:
        return
    from pbs_harness.suite.progress import suite_of

    schedule.write_collection(run_dir, wid, session.items, suite_of)
