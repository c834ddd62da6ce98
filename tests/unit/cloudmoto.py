"""moto's EC2 server on 127.0.0.1 for the cloud tests (test_cloud_moto.py, test_cloud_session_moto.py,
test_cloud_faults_moto.py, test_cloud_kill_moto.py): started on a free port, fake credentials, and
reachability.probe made a tripwire, since nothing may ever connect to an address moto hands out; and the
controller process of their own that the tests which kill or signal one start (start_child)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pbs_harness.remote import reachability

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def moto_server() -> Iterator[str]:
    """moto's server on 127.0.0.1 (only): its URL."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.2)  # polling a local port that is starting: bounded by the deadline above
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def use_moto(monkeypatch: pytest.MonkeyPatch, url: str, state_root: Path) -> Path:
    """Fake credentials, the moto endpoint, a state root of the test's own; never a probe of any host."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("PBS_HARNESS_CLOUD_DIR", str(state_root))

    def no_probe(*_a: object, **_k: object) -> None:
        raise AssertionError("something tried to connect to a host address")

    monkeypatch.setattr(reachability, "probe", no_probe)
    return state_root


def start_child(script: str, marker: str, *args: str) -> tuple[subprocess.Popen[str], str]:
    """`python -c script *args` from the project's root, in a session of its own (so its whole tree can be
    frozen and killed), read until it prints `marker RUN_ID`: the process and that run id. A child that ends
    before is an AssertionError with its exit status and its output."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, start_new_session=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )  # fmt: skip
    assert proc.stdout is not None
    said = []
    for line in proc.stdout:  # ends when the child does: an early end fails below with its output
        if line.startswith(f"{marker} "):
            return proc, line.split()[1]
        said.append(line)
    proc.wait(timeout=30)
    raise AssertionError(f"the child ended (exit {proc.returncode}) before printing {marker}:\n{''.join(said)}")
