"""The idempotence gate (`deploy --idempotence`, `make acceptance`): a second deploy must report
changed=0 on every host, and a host that changed is named with its changing tasks.

run_playbook is FAKED here (it returns recaps written by the test): what this proves is the gate's
decision and message from a recap, not that the roles are idempotent; the real second deploy runs in
`make acceptance`. changed_tasks reads real ansible-playbook output lines (default callback).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pbs_harness.common import errors
from pbs_harness.deploy import cluster
from pbs_harness.deploy import playbook as deploy
from pbs_harness.deploy.playbook import HostRecap, PlaybookRun, changed_tasks

OUTPUT = """
TASK [openpbs_common : Firewall | Allow the cluster's hosts through ufw] *******
ok: [sp02] => (item=sp01)
changed: [sp01] => (item=sp02)
changed: [sp01] => (item=sp03)

TASK [openpbs_hooks : Hooks | Compile the hook sources] ************************
changed: [sp01 -> localhost]

RUNNING HANDLER [openpbs_server : Restart PBS] *********************************
changed: [sp01]
"""


def test_changed_tasks_names_each_task_once_per_host() -> None:
    assert changed_tasks(OUTPUT.splitlines()) == {
        "sp01": [
            "openpbs_common : Firewall | Allow the cluster's hosts through ufw",
            "openpbs_hooks : Hooks | Compile the hook sources",
            "openpbs_server : Restart PBS",
        ]
    }


def fake_run(recap: dict[str, int], changes: dict[str, list[str]]):
    def run_playbook(playbook: str, inventory: Path, extra=(), progress=print, log_dir=None) -> PlaybookRun:
        hosts = {h: HostRecap(h, ok=10, changed=c, unreachable=0, failed=0) for h, c in recap.items()}
        return PlaybookRun(0, 1.0, hosts, Path("ansible-site.log"), changes)

    return run_playbook


def test_gate_passes_when_nothing_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deploy, "run_playbook", fake_run({"sp01": 0, "sp02": 0}, {}))
    said: list[str] = []
    rc = cluster.idempotence_gate(SimpleNamespace(path=Path("inventory/local")), None, said.append)
    assert rc == errors.EXIT_OK
    assert "changed=0 on all 2 hosts" in said[-1]


def test_gate_fails_naming_the_host_and_its_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deploy, "run_playbook", fake_run({"sp01": 2, "sp02": 0}, {"sp01": ["a : One", "b : Two"]}))
    said: list[str] = []
    rc = cluster.idempotence_gate(SimpleNamespace(path=Path("inventory/local")), None, said.append)
    assert rc == errors.EXIT_FAILED
    assert "idempotence gate: sp01 changed=2: a : One; b : Two" in said
    assert not any("sp02 changed" in line for line in said)
    assert "FAILED" in said[-1]
