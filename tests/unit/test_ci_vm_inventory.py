"""examples/ci/vm-inventory.sh: the VM-cluster inventory a CI job assembles from its secrets.

Faked: the secrets (a throwaway ed25519 key pair made here stands in for the login key and for every
host key; the hosts are inventory/cloud.example's documentation addresses, never contacted).
Real: the script, ansible-inventory, and the harness's inventory loader reading the result.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pbs_harness.deploy import hookconfig
from pbs_harness.remote import inventory

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "examples" / "ci" / "vm-inventory.sh"
HOSTS = yaml.safe_load((REPO / "inventory" / "cloud.example" / "hosts.yml").read_text())

pytestmark = pytest.mark.skipif(not shutil.which("ssh-keygen"), reason="needs ssh-keygen (openssh-client)")


def addresses(hosts: dict) -> dict[str, str]:
    found: dict[str, str] = {}
    for group in hosts["all"]["children"].values():
        for name, hv in (group.get("hosts") or {}).items():
            if hv and "ansible_host" in hv:
                found[name] = hv["ansible_host"]
    return found


@pytest.fixture
def secrets(tmp_path: Path) -> dict[str, Path]:
    key = tmp_path / "secret" / "key"
    key.parent.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    pub = " ".join(key.with_suffix(".pub").read_text().split()[:2])
    known = tmp_path / "secret" / "known_hosts"
    known.write_text("".join(f"{addr} {pub}\n" for addr in addresses(HOSTS).values()))
    hosts = tmp_path / "secret" / "hosts.yml"
    hosts.write_text(yaml.safe_dump(HOSTS))
    return {"hosts": hosts, "known_hosts": known, "key": key}


def assemble(tmp_path: Path, secrets: dict[str, Path], **overrides: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PBSH_HOSTS_FILE": str(secrets["hosts"]),
        "PBSH_KNOWN_HOSTS_FILE": str(secrets["known_hosts"]),
        "PBSH_SSH_KEY_FILE": str(secrets["key"]),
        "PBSH_SSH_USER": "ops",
        "ANSIBLE_INVENTORY_BIN": str(Path(sys.executable).parent / "ansible-inventory"),
        **overrides,
    }
    return subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path / "ci")], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )


def test_the_inventory_pins_every_host_key_for_ansible_and_the_harness(tmp_path: Path, secrets: dict) -> None:
    run = assemble(tmp_path, secrets)

    assert run.returncode == 0, run.stderr
    work = (tmp_path / "ci").resolve()
    assert "5 hosts (pbs-head pbs-login pbs-node01 pbs-node02 pbs-node03), host keys pinned" in run.stdout
    assert not any(addr in run.stdout + run.stderr for addr in addresses(HOSTS).values())
    assert oct((work / "ssh_key").stat().st_mode & 0o777) == "0o600"
    inv = inventory.load(work / "inventory")
    for host in inv.hosts.values():
        target = host.ssh_target()
        assert target.strict_host_keys
        assert target.known_hosts == str(work / "known_hosts")
        assert target.key_file == str(work / "ssh_key")
        assert target.user == "ops"
    assert inv.server.name == "pbs-head"


def test_a_host_without_a_pinned_key_is_refused_by_name(tmp_path: Path, secrets: dict) -> None:
    lines = secrets["known_hosts"].read_text().splitlines()
    secrets["known_hosts"].write_text("\n".join(lines[:-1]) + "\n")  # drops pbs-login's key

    run = assemble(tmp_path, secrets)

    assert run.returncode == 2
    assert "no host key pinned for pbs-login" in run.stderr


def test_host_key_checking_turned_off_in_the_hosts_file_is_refused(tmp_path: Path, secrets: dict) -> None:
    hosts = yaml.safe_load(secrets["hosts"].read_text())
    hosts["all"]["children"]["pbs_moms"]["hosts"]["pbs-node02"]["ansible_ssh_extra_args"] = (
        "-o StrictHostKeyChecking=no"
    )
    secrets["hosts"].write_text(yaml.safe_dump(hosts))

    run = assemble(tmp_path, secrets)

    assert run.returncode == 2
    assert "host-key checking is turned off for pbs-node02" in run.stderr


def test_a_missing_secret_is_named(tmp_path: Path, secrets: dict) -> None:
    run = assemble(tmp_path, secrets, PBSH_SSH_KEY_FILE="")

    assert run.returncode == 2
    assert "PBSH_SSH_KEY_FILE is not set" in run.stderr
    assert not (tmp_path / "ci").exists()


def test_the_hook_sources_still_resolve_from_the_copied_group_vars(tmp_path: Path, secrets: dict) -> None:
    """#23 item 3: the copies of group_vars live in OUT_DIR, where `{{ inventory_dir }}/../../hooks` named
    nothing and `pbs-harness deploy` refused the hooks list (exit 3). With a base whose hooks list is
    full (inventory/local's group_vars), the harness's hook check passes and Ansible itself renders
    openpbs_hooks_src_dir to the checkout's hooks/."""
    run = assemble(tmp_path, secrets, PBSH_INVENTORY_BASE="inventory/local")
    assert run.returncode == 0, run.stderr
    work = (tmp_path / "ci").resolve()
    inv = inventory.load(work / "inventory")
    assert inv.var("openpbs_hooks_list"), "the base lists hooks: the check below has work to do"

    hookconfig.check(inv)  # refused with exit 3 before: "source .../hooks/reliable_startup.py does not exist"

    assert hookconfig.source_dir(inv) == REPO / "hooks"
    ansible = Path(sys.executable).parent / "ansible"
    rendered = subprocess.run(
        [str(ansible), "pbs-head", "-i", str(work / "inventory"), "-c", "local", "-m", "ansible.builtin.debug",
         "-a", "msg={{ openpbs_hooks_src_dir }}"],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=120,
        env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")},
    )  # fmt: skip
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    # ansible.cfg's YAML result format: `    msg: PATH`
    (line,) = [ln for ln in rendered.stdout.splitlines() if ln.strip().startswith("msg: ")]
    assert Path(line.split("msg: ", 1)[1].strip()).resolve() == REPO / "hooks"
