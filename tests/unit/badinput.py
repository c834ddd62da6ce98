"""Helpers of the bad-input tests (docs/bad-input.md): run the CLI, build inventories, snapshot folders.

`fake_ansible_inventory` is a FAKE of the ansible-inventory program: a two-line shell script that
prints a listing the test wrote, so that inventory shapes are judged without Ansible's start-up time.
`as_root` fakes os.geteuid(). Every other helper runs the real code.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from pbs_harness import cli
from pbs_harness.common import errors
from pbs_harness.remote import inventory

ROOT = Path(__file__).resolve().parents[2]
# Loopback, port 9 (discard): nothing listens on it here, so a connection is refused at once.
CLOSED = ("127.0.0.1", 9)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run `pbs-harness ARGV` in this process; its exit code and everything it printed."""
    rc = cli.main(argv)
    captured = capsys.readouterr()
    out = captured.out + captured.err
    # Echoed into the test's captured output, so that `pytest -rA` shows what the user saw.
    sys.stdout.write(f"$ pbs-harness {' '.join(argv)}\n{out}[exit {rc}]\n")
    return rc, out


def assert_refused(rc: int, out: str, code: int, *needles: str) -> None:
    """The table's exit code, each expected phrase, a fix, and no traceback."""
    assert rc == code, out
    for needle in needles:
        assert needle in out, out
    assert "Traceback" not in out, out
    if code not in (errors.EXIT_USAGE,):
        assert "fix:" in out, out


def tripwire(what: str):
    """A stand-in for a step a refused command must never reach (a playbook run, a cluster up, a build): it
    fails the test, naming `what`."""

    def fail(*_: object, **__: object) -> None:
        raise AssertionError(f"the refused command went on to {what}")

    return fail


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Content and modification time of every file under `folder` (to prove nothing was touched)."""
    files = [p for p in sorted(folder.rglob("*")) if p.is_file()]
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


def host_vars(address: str = CLOSED[0], port: int = CLOSED[1], **more: Any) -> dict[str, Any]:
    return {"ansible_host": address, "ansible_port": port, "ansible_user": "root", **more}


def listing(
    server: list[str] | None = None, moms: list[str] | None = None, hostvars: dict[str, dict] | None = None
) -> dict[str, Any]:
    """An `ansible-inventory --list` document: s1 serves and is a mom, m1 is a mom (unless overridden)."""
    server = ["s1"] if server is None else server
    moms = ["s1", "m1"] if moms is None else moms
    names = sorted(set(server) | set(moms))
    hv = {name: host_vars() for name in names}
    for name, extra in (hostvars or {}).items():
        hv.setdefault(name, host_vars()).update(extra)
    return {
        "_meta": {"hostvars": hv},
        "all": {"children": ["ungrouped", "pbs_server", "pbs_moms"]},
        "pbs_server": {"hosts": server},
        "pbs_moms": {"hosts": moms},
    }


def fake_ansible_inventory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data: dict[str, Any]) -> Path:
    """FAKE ansible-inventory printing `data`; returns an inventory file (hosts.yml) to pass with -i."""
    (tmp_path / "listing.json").write_text(json.dumps(data))
    script = tmp_path / "fake-ansible-inventory"
    script.write_text(f"#!/bin/sh\ncat {tmp_path / 'listing.json'}\n")
    script.chmod(0o755)
    monkeypatch.setattr(inventory, "_ansible_inventory", lambda: str(script))
    hosts = tmp_path / "hosts.yml"
    hosts.write_text("# the fake ansible-inventory prints listing.json instead of reading this file\n")
    return hosts


def write_yaml_inventory(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "inventory" / "hosts.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Nothing of this machine's local cluster or the user's settings is seen or touched."""
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path / "state"))
    for name in ("PBS_HARNESS_INVENTORY", "PBS_HARNESS_ROOT", cli.DEBUG_ENV):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.fixture
def as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """FAKE os.geteuid() == 0 for the CLI's root check, so a test runs past it on any machine."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)


@pytest.fixture
def tmp_root(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout of its own (PBS_HARNESS_ROOT): the project's files linked, reports/ holding a kept report."""
    root = isolated / "checkout"
    root.mkdir()
    for name in (
        "playbooks",
        "roles",
        "library",
        "plugins",
        "hooks",
        "ptl_tests",
        "inventory",
        "ansible.cfg",
        "pyproject.toml",
    ):
        (root / name).symlink_to(ROOT / name)
    reports = root / "reports"
    reports.mkdir()
    (reports / "conformance.md").write_text("# the report of an earlier run\n")
    run = {"started": "2026-01-01T10:00:00", "finished": "2026-01-01T10:05:00", "environment": {}, "tests": []}
    (reports / "results.json").write_text(json.dumps(run))
    monkeypatch.setenv("PBS_HARNESS_ROOT", str(root))
    return root


class InventoryConfig:
    """Stand-in for pytest.Config (faked): the availability and provider checks read only --inventory
    and the session's stash."""

    def __init__(self, inventory: str | None = None) -> None:
        self.inventory = inventory
        self.stash = pytest.Stash()

    def getoption(self, name: str) -> str | None:
        assert name == "--inventory"
        return self.inventory
