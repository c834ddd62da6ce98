"""roles/openpbs_common users.yml: its raw probe tells exactly the accounts the group and user modules would
change, so that skipping the modules for the others changes nothing (#33: the modules used to run in check
mode per account and host, 6 s of a converged deploy).

What is real: ansible-playbook, users.yml, the probe's getent/id calls, and useradd/usermod/groupadd run by
the modules — inside a private mount namespace (`unshare --mount`) where /etc and /home are copies in
tmp_path and /var/log is a tmpfs, so that this machine's accounts and logs are never touched. The
reference for "differs" is the user and group modules themselves, run in check mode over every account.
Nothing is faked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.roles.test_pbs_conf import ANSIBLE_PLAYBOOK, REPO

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("useradd") is None,
    reason="runs useradd inside a private mount namespace (root, unshare, useradd)",
)

GROUP = {"name": "pbhtgrp", "gid": 29900}
ACCOUNTS = [
    {"name": "pbhtu1", "uid": 29901, "comment": "first test account"},
    {"name": "pbhtu2", "uid": 29902},
    {"name": "pbhtu3", "uid": 29903, "shell": "/bin/sh"},
    {"name": "pbhtu4", "uid": 29904, "groups": ["users"]},
]

USERS_BOOK = """
- name: Accounts
  hosts: all
  gather_facts: false
  tasks:
    - name: The role's users tasks
      ansible.builtin.import_role:
        name: openpbs_common
        tasks_from: users
"""

# The probe's verdict next to the modules' own, both in check mode (nothing changes).
COMPARE_BOOK = """
- name: Compare
  hosts: all
  gather_facts: false
  check_mode: true
  tasks:
    - name: The role's users tasks (their probe)
      ansible.builtin.import_role:
        name: openpbs_common
        tasks_from: users
    - name: The group module's verdict
      ansible.builtin.group:
        name: "{{ openpbs_common_group.name }}"
        gid: "{{ openpbs_common_group.gid }}"
      register: group_says
    - name: The user module's verdict on every account (users.yml's arguments)
      ansible.builtin.user:
        name: "{{ item.name }}"
        uid: "{{ item.uid }}"
        group: "{{ item.group | default(openpbs_common_group.name) }}"
        groups: "{{ item.groups | default(omit) }}"
        append: "{{ item.groups is defined }}"
        comment: "{{ item.comment | default(omit) }}"
        shell: "{{ item.shell | default(openpbs_common_shell) }}"
        home: "{{ openpbs_common_home_base }}/{{ item.name }}"
        create_home: true
        password_lock: true
      loop: "{{ openpbs_common_users }}"
      register: users_say
    - name: Both
      ansible.builtin.debug:
        msg: >-
          COMPARE probe={{ openpbs_common_probe_result.keys() | reject('eq', 'files') | sort | join(',') }}
          modules={{ ((['group'] if group_says is changed else [])
                      + (users_say.results | select('changed') | map(attribute='item.name')
                         | map('regex_replace', '^', 'account_') | list)) | sort | join(',') }}
"""

SCRIPT = r"""
set -eu
T=$1
cp -a /etc "$T/etc"
mkdir -p "$T/home"
mount --bind "$T/etc" /etc
mount --bind "$T/home" /home
mount -t tmpfs tmpfs /var/log
run() {  # NAME BOOK [ARGS]: one ansible-playbook run, its output in $T/NAME.out
  name=$1 book=$2
  shift 2
  "$ANSIBLE_PLAYBOOK" -i "$T/inventory.yml" "$T/$book" "$@" > "$T/$name.out" 2>&1 || echo "rc=$?" >> "$T/$name.out"
}
run first users.yml
run converged-compare compare.yml
run second users.yml
# Drift, one field per account: unlocked, another shell, no home, an extra group lost.
usermod -p '*' pbhtu1
usermod -s /bin/bash pbhtu3
rm -rf /home/pbhtu2
gpasswd -d pbhtu4 users > /dev/null
run drift-compare compare.yml
run drift-check users.yml --check
run fix users.yml
run fixed-compare compare.yml
"""


def _compare(out: str) -> tuple[set[str], set[str]]:
    line = next(line for line in out.splitlines() if "COMPARE probe=" in line)
    probe, modules = line.split("COMPARE probe=", 1)[1].rstrip('"').split(" modules=")
    return {k.split("=")[0] for k in probe.split(",") if k}, {k for k in modules.split(",") if k}


def _recap(out: str) -> str:
    return next(line for line in out.split("PLAY RECAP", 1)[1].splitlines() if "ok=" in line)


def test_the_probe_finds_what_the_modules_would_change(tmp_path: Path) -> None:
    inventory = {
        "all": {
            "hosts": {"h1": {}},
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "openpbs_common_group": GROUP,
                "openpbs_common_users": ACCOUNTS,
                "openpbs_common_users_absent": ["pbhtgone"],
            },
        }
    }
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "users.yml").write_text(USERS_BOOK)
    (tmp_path / "compare.yml").write_text(COMPARE_BOOK)
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_ROLES_PATH": str(REPO / "roles"),
        "ANSIBLE_CACHE_PLUGIN": "memory",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_PLAYBOOK": str(ANSIBLE_PLAYBOOK),
    }
    subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", SCRIPT, "sh", str(tmp_path)],
        cwd=REPO,
        env=env,
        check=True,
        timeout=600,
    )
    out = {p.stem: p.read_text() for p in tmp_path.glob("*.out")}
    for name, text in out.items():
        assert "rc=" not in text, f"{name}:\n{text}"

    assert "changed=2" in _recap(out["first"])  # the group, and the accounts' loop
    # Converged: the probe and the modules agree that nothing differs, and nothing runs.
    assert _compare(out["converged-compare"]) == (set(), set())
    assert "changed=0" in _recap(out["second"])
    assert "item=pbhtu" not in out["second"]  # no module ran for any account
    # Each drift is found, by the probe exactly where the modules find it.
    expected = {f"account_{a['name']}" for a in ACCOUNTS}
    assert _compare(out["drift-compare"]) == (expected, expected)
    assert "changed=1" in _recap(out["drift-check"])
    for reason in ("pbhtu1 (29901: unlocked)", "pbhtu2 (29902: no-home)", "pbhtu3 (29903: differs)"):
        assert reason in out["drift-check"]
    assert "pbhtu4 (29904: groups)" in out["drift-check"]
    assert "changed=1" in _recap(out["fix"])
    assert _compare(out["fixed-compare"]) == (set(), set())
