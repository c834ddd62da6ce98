"""playbooks/preflight.yml, run for real by ansible-playbook in --check mode against a throwaway
static inventory (docs/bad-input.md). Its one host is 127.0.0.1 on a closed port: nothing is
changed, and the only connection tried is refused by this machine.

What the user sees is deploy.run_playbook's error: the preflight's own message and the table's
exit code, not the raw task error that --check used to give (wait_for_connection was skipped).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pbs_harness.common import errors
from pbs_harness.deploy import playbook as deploy
from tests.unit.badinput import CLOSED


def throwaway_inventory(tmp_path: Path, **server_vars: object) -> Path:
    host = {"ansible_host": CLOSED[0], "ansible_port": CLOSED[1], "ansible_user": "root", **server_vars}
    doc = {
        "all": {
            "vars": {"ansible_python_interpreter": "/usr/bin/python3"},
            "children": {"pbs_server": {"hosts": {"s1": host}}, "pbs_moms": {"hosts": {"s1": None}}},
        }
    }
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(doc))
    return path


def run_preflight(tmp_path: Path, inventory: Path) -> errors.HarnessError:
    with pytest.raises(errors.HarnessError) as err:
        deploy.run_playbook(
            "preflight.yml",
            inventory,
            ["--check", "--diff", "-e", "preflight_connect_timeout=2"],
            progress=lambda _: None,
            log_dir=tmp_path / "logs",
        )
    log = (tmp_path / "logs" / "ansible-preflight.log").read_text()
    assert "Traceback" not in log
    return err.value


def test_check_mode_still_checks_ssh(tmp_path: Path) -> None:
    err = run_preflight(tmp_path, throwaway_inventory(tmp_path))
    assert err.exit_code == errors.EXIT_UNREACHABLE
    assert err.message.startswith("preflight.yml: preflight: s1 (127.0.0.1) did not answer over SSH within 2 s")
    assert "Connection refused" in err.message
    assert "that its host key is known, and that ansible_user can log in" in err.message
    assert "pbs-harness" not in err.message  # not a local cluster: no local-cluster advice
    assert "full output:" in err.hint


def test_non_boolean_setting(tmp_path: Path) -> None:
    err = run_preflight(tmp_path, throwaway_inventory(tmp_path, openpbs_server_start_sched="yes"))
    assert err.exit_code == errors.EXIT_PRECONDITION
    assert "These settings must be booleans (true or false, unquoted)" in err.message
    assert 'openpbs_server_start_sched is "yes" (str) on s1' in err.message
