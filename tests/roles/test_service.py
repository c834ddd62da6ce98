"""openpbs_common's `service` entry point: start or restart PBS through systemd's pbs.service where systemd
runs the host, else through the init script — and what it reports (OPENPBS_STARTED, OPENPBS_ENABLED).

What is faked: `systemctl` and the init script are shell scripts in tmp_path that record their
arguments and answer from files the test writes (the unit's presence, enabled, active; the init
script's `status` output, in OpenPBS's pbs_init.d spellings "pbs_X is pid N" / "pbs_X is not running").
No PBS daemon is started and this machine's systemd, if any, is never asked.

Two ways in:
- ansible-playbook runs the entry point on fixture hosts (`ansible_connection: local`), for what the
  task reports (changed or not) — on this machine's side of the systemd test, with a fake systemctl
  that knows no pbs.service, so the init-script branch runs wherever the test runs;
- the task's shell script, rendered as Ansible renders it (its one filter, `quote`, is shlex.quote)
  with the systemd test `[ -d /run/systemd/system ]` pointed at a tmp folder, run by /bin/sh for each
  case of both branches.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
import yaml

from tests.roles.test_openpbs_install_packages import task_outcomes
from tests.roles.test_pbs_conf import REPO
from tests.roles.test_pbs_conf import run_playbook as run_playbook_in

SERVICE_TASKS = REPO / "roles" / "openpbs_common" / "tasks" / "service.yml"
SYSTEMD_MARKER = "/run/systemd/system"
ALL_RUNNING = "pbs_server is pid 101\npbs_mom is pid 102\npbs_sched is pid 103\npbs_comm is pid 104\n"
MOM_DOWN = "pbs_server is pid 101\npbs_mom is not running\npbs_sched is pid 103\npbs_comm is pid 104\n"

FAKE_SYSTEMCTL = """\
#!/bin/sh
# FAKE systemctl: records its arguments; answers from the files in {state}.
echo "$*" >> {state}/systemctl.calls
case "$1" in
  cat) [ -e {state}/unit ] ;;
  is-enabled) [ -e {state}/enabled ] ;;
  enable) touch {state}/enabled ;;
  is-active) [ -e {state}/active ] ;;
  start|restart) touch {state}/active ;;
  reload) [ -e {state}/active ] ;;
  *) exit 3 ;;
esac
"""

FAKE_INIT = """\
#!/bin/sh
# FAKE /etc/init.d/pbs: records its arguments; `status` prints {state}/status.
echo "$*" >> {state}/init.calls
[ "$1" = status ] && cat {state}/status
exit 0
"""


def fake_host(state: Path, status: str, unit: bool = False, enabled: bool = False, active: bool = False) -> Path:
    """A host's fake systemctl and init script; returns the folder to put first on PATH."""
    (state / "bin").mkdir(parents=True)
    for name, text in (("systemctl", FAKE_SYSTEMCTL), ("init.d-pbs", FAKE_INIT)):
        script = state / "bin" / name
        script.write_text(text.format(state=shlex.quote(str(state))))
        script.chmod(0o755)
    (state / "status").write_text(status)
    for flag, on in (("unit", unit), ("enabled", enabled), ("active", active)):
        if on:
            (state / flag).touch()
    return state / "bin"


def calls(state: Path, program: str) -> list[str]:
    log = state / f"{program}.calls"
    return log.read_text().splitlines() if log.exists() else []


# --- the task's script, both branches ---------------------------------------------------------


def rendered_script(action: str, init_script: Path, systemd_dir: Path) -> str:
    task = yaml.safe_load(SERVICE_TASKS.read_text())[0]
    text = task["ansible.builtin.raw"]
    assert text.count(SYSTEMD_MARKER) == 1, "the test points the one systemd check at a folder of its own"
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)  # noqa: S701 - shell, not HTML
    env.filters["quote"] = shlex.quote
    script = env.from_string(text).render(
        openpbs_common_service_action=action, openpbs_common_service_init_script=str(init_script)
    )
    return script.replace(SYSTEMD_MARKER, str(systemd_dir))


CASES = {
    # name: (systemd runs the host, fake state, action, systemctl calls, init script calls, printed)
    "init script, a daemon down": (False, {"status": MOM_DOWN}, "start", [], ["status", "start"], ["OPENPBS_STARTED"]),
    "init script, all running": (False, {"status": ALL_RUNNING}, "start", [], ["status"], []),
    "init script, restart": (False, {"status": ALL_RUNNING}, "restart", [], ["restart"], ["OPENPBS_STARTED"]),
    "systemd without pbs.service": (
        True,
        {"status": MOM_DOWN},
        "start",
        ["cat pbs.service"],
        ["status", "start"],
        ["OPENPBS_STARTED"],
    ),
    "pbs.service stopped, not enabled": (
        True,
        {"status": MOM_DOWN, "unit": True},
        "start",
        [
            "cat pbs.service",
            "is-enabled --quiet pbs.service",
            "enable --quiet pbs.service",
            "is-active --quiet pbs.service",
            "start pbs.service",
        ],
        [],
        ["OPENPBS_ENABLED", "OPENPBS_STARTED"],
    ),
    "pbs.service active, a daemon down": (
        True,
        {"status": MOM_DOWN, "unit": True, "enabled": True, "active": True},
        "start",
        [
            "cat pbs.service",
            "is-enabled --quiet pbs.service",
            "is-active --quiet pbs.service",
            "reload pbs.service",  # its ExecReload starts what is down, inside the unit
        ],
        ["status"],
        ["OPENPBS_STARTED"],
    ),
    "pbs.service active, all running": (
        True,
        {"status": ALL_RUNNING, "unit": True, "enabled": True, "active": True},
        "start",
        ["cat pbs.service", "is-enabled --quiet pbs.service", "is-active --quiet pbs.service"],
        ["status"],
        [],
    ),
    "pbs.service restart": (
        True,
        {"status": ALL_RUNNING, "unit": True, "enabled": True, "active": True},
        "restart",
        ["cat pbs.service", "is-enabled --quiet pbs.service", "restart pbs.service"],
        [],
        ["OPENPBS_STARTED"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_script_uses_systemd_where_it_runs_the_host_else_the_init_script(case: str, tmp_path: Path) -> None:
    systemd, state, action, want_systemctl, want_init, printed = CASES[case]
    host = tmp_path / "host"
    fake_bin = fake_host(host, **state)
    systemd_dir = tmp_path / "run-systemd-system"
    if systemd:
        systemd_dir.mkdir()
    script = rendered_script(action, fake_bin / "init.d-pbs", systemd_dir)
    env = {**os.environ, "PATH": f"{fake_bin}:{os.environ['PATH']}"}
    done = subprocess.run(["/bin/sh", "-c", script], env=env, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == printed
    assert calls(host, "systemctl") == want_systemctl
    assert calls(host, "init") == want_init


# --- the task through Ansible: changed only when something was started ---------------------------

BOOK = """\
- name: Fixture hosts
  hosts: all
  gather_facts: false
  tasks:
    - name: Service
      ansible.builtin.import_role:
        name: openpbs_common
        tasks_from: service
"""


def test_the_task_reports_a_change_only_when_it_started_something(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hosts = {"down": (MOM_DOWN, "start"), "running": (ALL_RUNNING, "start"), "restarted": (ALL_RUNNING, "restart")}
    inventory_hosts = {}
    for name, (status, action) in hosts.items():
        fake_bin = fake_host(tmp_path / name, status)
        inventory_hosts[name] = {
            "openpbs_common_service_init_script": str(fake_bin / "init.d-pbs"),
            "openpbs_common_service_action": action,
        }
    # One systemctl for the playbook (the hosts are this machine): it knows no pbs.service.
    monkeypatch.setenv("PATH", f"{tmp_path / 'down' / 'bin'}:{os.environ['PATH']}")
    inventory = {
        "all": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
            "hosts": inventory_hosts,
        }
    }
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "playbook.yml").write_text(BOOK)

    run = run_playbook_in(tmp_path)

    assert run.returncode == 0, run.stdout + run.stderr
    # One task for the three hosts (its name is rendered once, with the first host's action).
    outcomes = task_outcomes(run.stdout, "Start or restart PBS, the host's way - start")
    assert outcomes == {"down": "changed", "running": "ok", "restarted": "changed"}, run.stdout
    assert calls(tmp_path / "down", "init") == ["status", "start"]
    assert calls(tmp_path / "running", "init") == ["status"]
    assert calls(tmp_path / "restarted", "init") == ["restart"]
    assert set(calls(tmp_path / "down", "systemctl")) <= {"cat pbs.service"}  # asked, at most, for the unit


HANDLERS_BOOK = """\
- name: The server role's handler
  hosts: srv
  gather_facts: false
  tasks:
    - name: Change something that needs a restart
      ansible.builtin.command: "true"
      changed_when: true
      notify: Restart PBS
    - name: Load the server role's handlers (its tasks are not run)
      ansible.builtin.import_role:
        name: openpbs_server
        tasks_from: reset.yml
      tags: [never]

- name: The mom role's handlers
  hosts: mom
  gather_facts: false
  tasks:
    - name: Change something that needs a restart, and a new vnode layout
      ansible.builtin.command: "true"
      changed_when: true
      notify: [Restart PBS, Restart pbs_mom]
    - name: Load the mom role's handlers (its tasks are not run)
      ansible.builtin.import_role:
        name: openpbs_mom
        tasks_from: reset.yml
      tags: [never]
"""


def test_the_roles_handlers_restart_through_the_service_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handler may include tasks but not a role: the server's and the mom's restarts still reach the
    host's init script (no systemd here: the fake systemctl knows no pbs.service)."""
    hosts = {}
    for name in ("srv", "mom"):
        fake_bin = fake_host(tmp_path / name, MOM_DOWN)
        (tmp_path / name / "home" / "mom_priv").mkdir(parents=True)  # no mom.lock: no pbs_mom to stop
        hosts[name] = {
            f"openpbs_{'server' if name == 'srv' else 'mom'}_init_script": str(fake_bin / "init.d-pbs"),
            "openpbs_mom_home": str(tmp_path / name / "home"),
            "openpbs_mom_server_host": "srv",
        }
    inventory = {
        "all": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
            "hosts": hosts,
        }
    }
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "playbook.yml").write_text(HANDLERS_BOOK)
    monkeypatch.setenv("PATH", f"{tmp_path / 'srv' / 'bin'}:{os.environ['PATH']}")

    run = run_playbook_in(tmp_path)

    assert run.returncode == 0, run.stdout + run.stderr
    assert calls(tmp_path / "srv", "init") == ["restart"]
    # Restart PBS (all daemons), then Restart pbs_mom: stop it by its lock file, start what is down.
    assert calls(tmp_path / "mom", "init") == ["restart", "status", "start"]
