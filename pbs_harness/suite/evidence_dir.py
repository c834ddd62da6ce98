"""Where a test run keeps its evidence: --evidence-dir, or reports/evidence/run-<time>/ (one folder a run).

Apart from the plugin so that the parallel controller (suite/parallel/controller.py) names the same
folder as its workers without importing the plugin back (issue #31).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from pbs_harness.common import project
from pbs_harness.suite.parallel import binding

# Taken once a process, when this module is first imported (the plugin imports it at pytest's start).
RUN_STAMP = datetime.now().strftime("run-%Y%m%d-%H%M%S")


def evidence_root(config: pytest.Config) -> Path:
    """--evidence-dir as given, or reports/evidence/run-<time>/ so runs never mix; in a parallel
    run's worker, a folder per cluster in it."""
    given = config.getoption("--evidence-dir")
    root = Path(given) if given else project.root() / "reports" / "evidence" / RUN_STAMP
    if hasattr(config, "workerinput"):
        root = binding.evidence_dir(config) or root
        root = root / (binding.session_cluster_name(config) or config.workerinput["workerid"])
    return root
