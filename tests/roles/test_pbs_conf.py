"""pbs.conf of each kind of host, written by the roles through the one template (openpbs_common).

What is real: ansible-playbook, the configure stages of roles/openpbs_server and roles/openpbs_mom,
the whole of roles/openpbs_client, and their shared openpbs_common probe, template and pbs_conf
tasks. What is faked: the hosts are inventory names with `ansible_connection: local`, each with its
own scratch pbs.conf and PBS_HOME (PBS_HOME/pbs_version present, so pbs_habitat is not run); the
init script is /bin/true, and the mom's lock file names a `sleep` process that the mom role's
reload handler HUPs. Nothing outside the scratch folder is written.

The expected files are what the three per-role pbs.conf templates (before they became one) wrote
for the same variables: deploying this over an existing cluster changes no pbs.conf.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("sha1sum") is None,
    reason="the roles write pbs.conf owned by root (run as root) and the probe needs sha1sum",
)

BOOK = """\
- name: Server host
  hosts: pbs_server
  gather_facts: false
  tasks:
    - name: Configure stage of openpbs_server
      ansible.builtin.import_role:
        name: openpbs_server
        tasks_from: configure.yml

- name: Execution hosts
  hosts: pbs_moms
  gather_facts: false
  tasks:
    - name: Configure stage of openpbs_mom
      ansible.builtin.import_role:
        name: openpbs_mom
        tasks_from: configure.yml

- name: Client hosts
  hosts: pbs_clients:!pbs_server:!pbs_moms
  gather_facts: false
  roles:
    - role: openpbs_client
"""

HEADER = "#\n# Ansible managed\n#\n"


def expected(root: Path) -> dict[str, str]:
    """pbs.conf per host, as the per-role templates wrote it."""
    prefix = root / "prefix"
    return {
        # openpbs_server's template: the server host, a mom too (it is in pbs_moms).
        "srv": HEADER
        + textwrap.dedent(f"""\
            PBS_SERVER=srv
            PBS_START_SERVER=1
            PBS_START_SCHED=1
            PBS_START_COMM=1
            PBS_START_MOM=1
            PBS_EXEC={prefix}
            PBS_HOME={root / "srv" / "home"}
            PBS_CORE_LIMIT=unlimited
            PBS_LOG_HIGHRES_TIMESTAMP=1
            """),
        # openpbs_mom's template: a mom-only host.
        "mom1": HEADER
        + textwrap.dedent(f"""\
            PBS_SERVER=srv
            PBS_START_SERVER=0
            PBS_START_SCHED=0
            PBS_START_COMM=0
            PBS_START_MOM=1
            PBS_EXEC={prefix}
            PBS_HOME={root / "mom1" / "home"}
            PBS_CORE_LIMIT=1000000
            PBS_LEAF_ROUTERS=srv
            PBS_SCP=/usr/bin/scp
            """),
        # openpbs_client's template: no daemon, no PBS_CORE_LIMIT.
        "cli": HEADER
        + textwrap.dedent(f"""\
            PBS_SERVER=srv
            PBS_START_SERVER=0
            PBS_START_SCHED=0
            PBS_START_COMM=0
            PBS_START_MOM=0
            PBS_EXEC={prefix}
            PBS_HOME=/var/spool/pbs
            PBS_SCP=/usr/bin/scp
            """),
    }


def inventory(root: Path) -> dict:
    def host(name: str) -> dict:
        home = root / name / "home"
        return {
            "openpbs_server_conf_file": str(root / name / "pbs.conf"),
            "openpbs_mom_conf_file": str(root / name / "pbs.conf"),
            "openpbs_client_conf_file": str(root / name / "pbs.conf"),
            "openpbs_server_home": str(home),
            "openpbs_mom_home": str(home),
        }

    return {
        "all": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                # Never the real /opt/pbs: no pbs_mom there, so the vnode probe is skipped.
                "openpbs_install_prefix": str(root / "prefix"),
                "openpbs_server_init_script": "/bin/true",
                "openpbs_mom_init_script": "/bin/true",
                "openpbs_server_datastore_run_dir": "",
                "openpbs_server_conf_extra": {"PBS_LOG_HIGHRES_TIMESTAMP": 1, "PBS_SCP": None},
                "openpbs_client_conf_extra": {"PBS_SCP": "/usr/bin/scp"},
            },
            "hosts": {
                "srv": host("srv"),
                "mom1": {
                    **host("mom1"),
                    "openpbs_mom_core_limit": 1000000,
                    "openpbs_mom_conf_extra": {"PBS_SCP": "/usr/bin/scp", "PBS_LEAF_ROUTERS": "srv", "PBS_X": None},
                },
                "cli": host("cli"),
            },
            "children": {
                "pbs_server": {"hosts": {"srv": None}},
                "pbs_moms": {"hosts": {"srv": None, "mom1": None}},
                "pbs_clients": {"hosts": {"srv": None, "cli": None}},
            },
        }
    }


def run_playbook(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_ROLES_PATH": str(REPO / "roles"),
        "ANSIBLE_LIBRARY": str(REPO / "library"),
        "ANSIBLE_CACHE_PLUGIN": "memory",  # keep these fixture hosts out of the real fact cache
        "ANSIBLE_NOCOLOR": "1",
    }
    return subprocess.run(
        [str(ANSIBLE_PLAYBOOK), "-i", str(root / "inventory.yml"), str(root / "playbook.yml"), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def recap(output: str) -> dict[str, str]:
    """host => its PLAY RECAP line."""
    lines = output.split("PLAY RECAP", 1)[1].splitlines()
    return {line.split()[0]: line for line in lines if "ok=" in line}


def test_each_kind_of_host_gets_the_pbs_conf_it_had_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    root = tmp_path
    for name in ("srv", "mom1", "cli"):
        (root / name / "home" / "mom_priv").mkdir(parents=True)
        (root / name / "home" / "pbs_version").write_text("23.06.06\n")
    (root / "inventory.yml").write_text(yaml.safe_dump(inventory(root)))
    (root / "playbook.yml").write_text(BOOK)
    # The mom role HUPs the pid in PBS_HOME/mom_priv/mom.lock when mom_priv/config changes.
    sleepers = [subprocess.Popen(["sleep", "300"]) for _ in ("srv", "mom1")]
    try:
        for name, proc in zip(("srv", "mom1"), sleepers, strict=True):
            (root / name / "home" / "mom_priv" / "mom.lock").write_text(f"{proc.pid}\n")

        first = run_playbook(root)
        assert first.returncode == 0, first.stdout + first.stderr
        for name, text in expected(root).items():
            conf = root / name / "pbs.conf"
            assert conf.read_text() == text, name
            assert (conf.stat().st_mode & 0o7777, conf.stat().st_uid, conf.stat().st_gid) == (0o644, 0, 0)
        # The server host's pbs.conf is the server role's; the mom role leaves it alone.
        assert "Restart PBS" in first.stdout
        first_recap = recap(first.stdout)
        assert all("failed=0" in line for line in first_recap.values()), first_recap

        again = run_playbook(root)
        assert again.returncode == 0, again.stdout + again.stderr
        again_recap = recap(again.stdout)
        assert all("changed=0" in line for line in again_recap.values()), again_recap
        assert "RUNNING HANDLER" not in again.stdout

        # A wrong mode is found by the probe and put right; the content is left as it is.
        (root / "cli" / "pbs.conf").chmod(0o600)
        fixed = run_playbook(root, "--diff")
        assert fixed.returncode == 0, fixed.stdout + fixed.stderr
        assert "changed=1" in recap(fixed.stdout)["cli"]
        assert (root / "cli" / "pbs.conf").stat().st_mode & 0o7777 == 0o644
        assert (root / "cli" / "pbs.conf").read_text() == expected(root)["cli"]
    finally:
        for proc in sleepers:
            proc.kill()
            proc.wait()


def test_check_mode_shows_a_missing_pbs_conf_and_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path
    for name in ("srv", "mom1", "cli"):
        (root / name / "home" / "mom_priv").mkdir(parents=True)
        (root / name / "home" / "pbs_version").write_text("23.06.06\n")
    (root / "inventory.yml").write_text(yaml.safe_dump(inventory(root)))
    (root / "playbook.yml").write_text(BOOK)

    run = run_playbook(root, "--check", "--diff")

    assert run.returncode == 0, run.stdout + run.stderr
    assert "+PBS_START_SERVER=1" in run.stdout
    assert "+PBS_START_MOM=0" in run.stdout
    assert all("changed=" in line and "changed=0" not in line for line in recap(run.stdout).values())
    assert not any((root / name / "pbs.conf").exists() for name in ("srv", "mom1", "cli"))


SCP_BOOK = """\
- name: Client hosts
  hosts: all
  gather_facts: false
  roles:
    - role: openpbs_client
"""


def test_pbs_scp_is_written_where_the_accounts_have_ssh_keys_and_once_only(tmp_path: Path) -> None:
    """PBS_SCP follows openpbs_common_user_ssh_keys (jobs' files go by scp only where the accounts have
    keys); a PBS_SCP in the role's conf_extra takes the place of that line (one line, or none for null).
    Faked as above: client hosts with `ansible_connection: local` and a scratch pbs.conf each."""
    root = tmp_path
    cases = {
        "keys": ({"openpbs_common_user_ssh_keys": True}, ["PBS_SCP=/usr/bin/scp"]),
        "nokeys": ({"openpbs_common_user_ssh_keys": False}, []),
        "keysextra": (
            {"openpbs_common_user_ssh_keys": True, "openpbs_client_conf_extra": {"PBS_SCP": "/usr/local/bin/scp"}},
            ["PBS_SCP=/usr/local/bin/scp"],
        ),
        "keysnull": ({"openpbs_common_user_ssh_keys": True, "openpbs_client_conf_extra": {"PBS_SCP": None}}, []),
    }
    hosts = {
        name: {"openpbs_client_conf_file": str(root / name / "pbs.conf"), **host_vars}
        for name, (host_vars, _) in cases.items()
    }
    for name in cases:
        (root / name).mkdir()
    inv = {
        "all": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "openpbs_install_prefix": str(root / "prefix"),
            },
            "hosts": hosts,
            "children": {"pbs_server": {"hosts": {"keys": None}}},
        }
    }
    (root / "inventory.yml").write_text(yaml.safe_dump(inv))
    (root / "playbook.yml").write_text(SCP_BOOK)

    run = run_playbook(root)

    assert run.returncode == 0, run.stdout + run.stderr
    for name, (_, want) in cases.items():
        lines = (root / name / "pbs.conf").read_text().splitlines()
        assert [line for line in lines if line.startswith("PBS_SCP")] == want, (name, lines)
        assert "PBS_SERVER=keys" in lines, lines
