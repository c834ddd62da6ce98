"""`pbs-harness test`: which tests it selects, and that a stop signal still runs teardown.

The signal test starts a real child pytest session (with our plugin) on a tiny test file whose
fixture finalizer writes a marker; nothing of PBS is involved or faked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pbs_harness import cli
from pbs_harness.common import project


@pytest.mark.parametrize(
    ("arg", "names"),
    [
        ("ptl_tests/test_smoke.py", True),
        ("ptl_tests/test_smoke.py::test_x", True),
        ("ptl_tests", True),
        ("-k", False),
        ("smoke or ramp", False),  # a -k expression, not a path
        ("ptl_tests/nope.py", False),
        (" or ".join(f"test_{i}_{'x' * 40}" for i in range(10)), False),  # longer than a file name may be
    ],
)
def test_test_paths_are_recognised(arg: str, names: bool) -> None:
    assert cli._names_tests(arg, project.root()) is names


CHILD_TEST = """
import pathlib, time, pytest

@pytest.fixture
def healed(tmp_path_factory):
    yield
    pathlib.Path({marker!r}).write_text("healed")

def test_long(healed):
    pathlib.Path({started!r}).write_text("started")
    time.sleep(60)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_stop_signal_runs_teardown(tmp_path: Path, signum: int) -> None:
    marker, started = tmp_path / "healed", tmp_path / "started"
    (tmp_path / "test_child.py").write_text(CHILD_TEST.format(marker=str(marker), started=str(started)))
    # SIG_IGN for SIGINT (kept across exec) is what a non-interactive shell gives background jobs.
    pytest_argv = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "pbs_harness.suite.plugin",
        "-p",
        "no:cacheprovider",
        str(tmp_path),
    ]
    ignoring_sigint = "; ".join(
        [
            "import os, signal, sys",
            "signal.signal(signal.SIGINT, signal.SIG_IGN)",
            f"os.execv(sys.executable, {pytest_argv!r})",
        ]
    )
    # Own process group: the finally below ends it whole if the test stops early.
    child = subprocess.Popen(
        [sys.executable, "-c", ignoring_sigint],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(project.root())},
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.1)
        assert started.exists(), _end(child)
        child.send_signal(signum)
        out = child.communicate(timeout=30)[0].decode()
        assert marker.read_text() == "healed", out
        assert child.returncode != 0, out
    finally:
        _end(child)


def _end(child: subprocess.Popen[bytes]) -> str:
    """Kill the child's process group if it still runs; its output so far."""
    if child.poll() is None:  # not reaped yet, so the group id is still ours
        os.killpg(child.pid, signal.SIGKILL)
    return (child.communicate()[0] or b"").decode()
