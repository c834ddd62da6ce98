"""Name resolution and the test accounts' SSH keys written by roles/openpbs_common (names.yml, user_keys.yml,
after addresses.yml), as on system hosts and VMs.

What is real: ansible-playbook and the three task files, ssh-keygen (the accounts' key pairs and the
hosts' keys), and ssh-keygen reading the known_hosts file written. What is faked: the hosts are
inventory names with `ansible_connection: local` and addresses that are never contacted; each has
scratch copies of what the tasks write on a host — its hosts file (openpbs_common_etc_hosts_path), its
known_hosts (openpbs_common_known_hosts_path), its host key and the accounts' homes under tmp_path —
and the controller's key folder is a tmp folder too. The accounts are this machine's `nobody` and
`daemon` (they exist on every Debian-family system; nothing is created), owning files in tmp_path only.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.roles.test_pbs_conf import recap
from tests.roles.test_pbs_conf import run_playbook as run_playbook_in

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ssh-keygen") is None,
    reason="the tasks chown files to the accounts and pin keys owned by root (run as root), and need ssh-keygen",
)

MARK = "OpenPBS cluster hosts (openpbs_common)"
ADDRESSES = {"h1": "10.9.0.11", "h2": "10.9.0.12"}
ACCOUNTS = [{"name": "nobody", "uid": 65534, "group": "nogroup"}, {"name": "daemon", "uid": 1, "group": "daemon"}]


def book(*task_files: str) -> str:
    tasks = "".join(
        f"    - name: {name}\n      ansible.builtin.import_role:\n        name: openpbs_common\n"
        f"        tasks_from: {name}\n"
        for name in ("addresses", *task_files)
    )
    return f"- name: Fixture hosts\n  hosts: all\n  gather_facts: false\n  tasks:\n{tasks}"


def run(root: Path, hosts: dict[str, dict], playbook: str, **more_vars: object) -> subprocess.CompletedProcess[str]:
    inventory = {
        "all": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "openpbs_common_etc_hosts_path": str(root / "{{ inventory_hostname }}" / "hosts"),
                "openpbs_common_known_hosts_path": str(root / "{{ inventory_hostname }}" / "ssh_known_hosts"),
                **more_vars,
            },
            "hosts": hosts,
        }
    }
    (root / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (root / "playbook.yml").write_text(playbook)
    return run_playbook_in(root)


# --- names.yml ----------------------------------------------------------------------------------


def test_every_host_is_named_and_the_loopback_self_line_goes(tmp_path: Path) -> None:
    (tmp_path / "h1").mkdir()
    (tmp_path / "h2").mkdir()
    # As Debian's installer and cloud-init leave it, plus lines that are not this host's own.
    (tmp_path / "h1" / "hosts").write_text(
        "127.0.0.1\tlocalhost\n"
        "127.0.1.1\th1.cluster.example\th1\n"
        "::1\tlocalhost ip6-localhost ip6-loopback\n"
        "127.0.1.1\th10\n"
        "10.0.0.5\th1-bmc\n"
    )
    (tmp_path / "h2" / "hosts").write_text("127.0.0.1 localhost\n127.0.1.1 h2\n")
    hosts = {name: {"ansible_host": ip} for name, ip in ADDRESSES.items()}

    first = run(tmp_path, hosts, book("names"))

    assert first.returncode == 0, first.stdout + first.stderr
    block = f"# BEGIN {MARK}\n10.9.0.11\th1\n10.9.0.12\th2\n# END {MARK}\n"
    assert (tmp_path / "h1" / "hosts").read_text() == (
        "127.0.0.1\tlocalhost\n"
        "::1\tlocalhost ip6-localhost ip6-loopback\n"
        "127.0.1.1\th10\n"  # another name that starts with this host's
        "10.0.0.5\th1-bmc\n" + block
    )
    assert (tmp_path / "h2" / "hosts").read_text() == "127.0.0.1 localhost\n" + block

    again = run(tmp_path, hosts, book("names"))
    assert again.returncode == 0, again.stdout + again.stderr
    assert all("changed=0" in line for line in recap(again.stdout).values()), again.stdout


def test_the_address_the_others_reach_a_host_at_is_openpbs_common_address(tmp_path: Path) -> None:
    for name in ("h1", "bastioned"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "hosts").write_text("127.0.0.1 localhost\n")
    hosts = {
        "h1": {"ansible_host": "10.9.0.11"},
        # Reached by its public name from the controller, by its private address from the others.
        "bastioned": {"ansible_host": "bastioned.example.org", "openpbs_common_address": "10.9.0.20"},
    }
    done = run(tmp_path, hosts, book("names"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "10.9.0.20\tbastioned\n" in (tmp_path / "h1" / "hosts").read_text()


def test_a_host_without_an_ip_address_is_refused_with_the_fix_and_nothing_is_written(tmp_path: Path) -> None:
    for name in ("h1", "byname", "bare"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "hosts").write_text("127.0.0.1 localhost\n127.0.1.1 " + name + "\n")
    kept = {name: (tmp_path / name / "hosts").read_text() for name in ("h1", "byname", "bare")}
    hosts = {"h1": {"ansible_host": "10.9.0.11"}, "byname": {"ansible_host": "byname.example.org"}, "bare": {}}

    refused = run(tmp_path, hosts, book("names"))

    out = " ".join(refused.stdout.split())
    assert refused.returncode == 2, refused.stdout
    assert "these hosts have no IP address to write into /etc/hosts: bare, byname" in out
    assert "Set openpbs_common_address on each" in out
    assert "or set openpbs_common_hosts_file: false where DNS resolves every host name" in out
    assert {name: (tmp_path / name / "hosts").read_text() for name in kept} == kept


# --- user_keys.yml ------------------------------------------------------------------------------


def mode_owner(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid


def test_each_account_gets_one_key_pair_installed_and_authorized_on_every_host(tmp_path: Path) -> None:
    for name in ADDRESSES:
        (tmp_path / name).mkdir()
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(tmp_path / name / "host_key")],
            check=True,
        )
    hosts = {name: {"ansible_host": ip} for name, ip in ADDRESSES.items()}
    keys = tmp_path / "controller" / "user-keys"
    settings = {
        "openpbs_common_users": ACCOUNTS,
        "openpbs_common_home_base": str(tmp_path / "{{ inventory_hostname }}" / "home"),
        "openpbs_common_user_keys_dir": str(keys),
        "openpbs_common_host_key_file": str(tmp_path / "{{ inventory_hostname }}" / "host_key.pub"),
    }

    first = run(tmp_path, hosts, book("user_keys"), **settings)

    assert first.returncode == 0, first.stdout + first.stderr
    # The controller: one key pair per account, made once, private.
    assert mode_owner(keys)[0] == 0o700
    assert sorted(p.name for p in keys.iterdir()) == ["daemon", "daemon.pub", "nobody", "nobody.pub"]
    for account in ACCOUNTS:
        name = account["name"]
        pub = (keys / f"{name}.pub").read_text()
        assert pub.split()[0] == "ssh-ed25519"
        assert pub.split()[2] == f"{name}@openpbs-cluster"
        derived = subprocess.run(["ssh-keygen", "-y", "-f", str(keys / name)], check=True, capture_output=True)
        assert derived.stdout.decode().split()[:2] == pub.split()[:2]  # the pair belongs together
        uid, gid = pwd.getpwnam(name).pw_uid, pwd.getpwnam(name).pw_gid
        for host in ADDRESSES:
            ssh = tmp_path / host / "home" / name / ".ssh"
            assert mode_owner(ssh) == (0o700, uid, gid)
            assert (ssh / "id_ed25519").read_bytes() == (keys / name).read_bytes()
            assert mode_owner(ssh / "id_ed25519") == (0o600, uid, gid)
            assert (ssh / "id_ed25519.pub").read_text() == pub
            assert mode_owner(ssh / "id_ed25519.pub") == (0o644, uid, gid)
            assert (ssh / "authorized_keys").read_text() == pub
            assert mode_owner(ssh / "authorized_keys") == (0o600, uid, gid)
    # Every host's key under its name and address, on every host, readable by ssh itself.
    host_keys = {h: " ".join((tmp_path / h / "host_key.pub").read_text().split()[:2]) for h in ADDRESSES}
    block = "".join(f"{h},{ip} {host_keys[h]}\n" for h, ip in ADDRESSES.items())
    for host in ADDRESSES:
        known = tmp_path / host / "ssh_known_hosts"
        assert known.read_text() == f"# BEGIN {MARK}\n{block}# END {MARK}\n"
        assert mode_owner(known) == (0o644, 0, 0)
        for other, ip in ADDRESSES.items():
            for name_or_address in (other, ip):
                found = subprocess.run(
                    ["ssh-keygen", "-F", name_or_address, "-f", str(known)], capture_output=True, text=True, check=False
                )
                assert found.returncode == 0, (host, name_or_address)
                assert host_keys[other] in found.stdout

    private_before = {a["name"]: (keys / a["name"]).read_bytes() for a in ACCOUNTS}
    again = run(tmp_path, hosts, book("user_keys"), **settings)
    assert again.returncode == 0, again.stdout + again.stderr
    assert all("changed=0" in line for line in recap(again.stdout).values()), again.stdout
    assert {a["name"]: (keys / a["name"]).read_bytes() for a in ACCOUNTS} == private_before  # not made again
