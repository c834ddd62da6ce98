"""examples/six-vms: the 6-VM inventories (Rocky Linux 9, Ubuntu 22.04) load and give each VM its part.

Real: ansible-inventory on the example's files (shared ones through symlinks), the harness's inventory
and hook checks, Ansible's own rendering of the hook folder, and examples/ci/vm-inventory.sh building
a CI inventory from each (a throwaway key stands in for the CI's secrets). The VMs' addresses are
documentation addresses: nothing connects anywhere.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pbs_harness.deploy import hookconfig
from pbs_harness.remote import inventory

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "six-vms"
DISTRIBUTIONS = {"rocky9": ("rocky", "rpm"), "ubuntu2204": ("ubuntu", "deb")}


@functools.cache
def loaded(distribution: str) -> inventory.Inventory:
    """The example's inventory as the harness reads it (listed once per distribution: seconds each)."""
    return inventory.load(EXAMPLE / distribution)


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_six_vms_each_in_its_part(distribution: str) -> None:
    inv = loaded(distribution)
    assert sorted(inv.hosts) == ["pbs-head", "pbs-login", "pbs-node01", "pbs-node02", "pbs-node03", "pbs-node04"]
    assert inv.server.name == "pbs-head"
    assert [h.name for h in inv.moms] == ["pbs-head", "pbs-node01", "pbs-node02", "pbs-node03", "pbs-node04"]
    assert [h.name for h in inv.clients] == ["pbs-login"]
    moms = {h.name for h in inv.moms}
    assert set(inv.var("openpbs_server_node_attributes")) <= moms
    layouts = inv.moms[-1].vars["openpbs_mom_vnode_layouts"]
    assert list(layouts) == ["pbs-node04"]
    assert len(layouts["pbs-node04"]["vnodes"]) == 4
    user, _ = DISTRIBUTIONS[distribution]
    for host in inv.hosts.values():
        assert host.vars["ansible_user"] == user
        assert host.vars["ansible_become"] is True
        assert "StrictHostKeyChecking=yes" in host.vars["ansible_ssh_common_args"]


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_packages_for_the_distribution_and_one_source(distribution: str) -> None:
    """One source of packages, and the file names the role looks for are that distribution's kind."""
    inv = loaded(distribution)
    assert inv.var("openpbs_install_method") == "packages"
    sources = [inv.var(v) for v in ("openpbs_install_packages_archive", "openpbs_install_packages_dir")]
    assert sum(bool(s) for s in sources) == 1
    text = (EXAMPLE / distribution / "group_vars" / "all" / "openpbs_install.yml").read_text()
    _, kind = DISTRIBUTIONS[distribution]
    named = re.findall(r"openpbs-server[-_]23\.06\.06-[01][._][\w]+\.(rpm|deb)", text)
    assert named, "the comment names the package files"
    assert set(named) == {kind}


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_hook_sources_resolve_for_the_harness_and_for_ansible(distribution: str) -> None:
    inv = loaded(distribution)
    hookconfig.check(inv)
    assert hookconfig.source_dir(inv) == ROOT / "hooks"
    rendered = subprocess.run(
        [str(Path(sys.executable).parent / "ansible"), "pbs-head", "-i", str(EXAMPLE / distribution), "-c", "local",
         "-m", "ansible.builtin.debug", "-a", "msg={{ openpbs_hooks_src_dir }}"],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=120,
        env={**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")},
    )  # fmt: skip
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    (line,) = [ln for ln in rendered.stdout.splitlines() if ln.strip().startswith("msg: ")]
    assert Path(line.split("msg: ", 1)[1].strip()).resolve() == ROOT / "hooks"


@pytest.mark.skipif(not shutil.which("ssh-keygen"), reason="needs ssh-keygen (openssh-client)")
@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_the_ci_job_builds_its_inventory_from_the_example(distribution: str, tmp_path: Path) -> None:
    """The example as PBSH_INVENTORY_BASE of the VM-cluster CI job: its shared files are copied, not linked."""
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    pub = " ".join(key.with_suffix(".pub").read_text().split()[:2])
    inv = loaded(distribution)
    known = tmp_path / "known_hosts"
    known.write_text("".join(f"{h.address} {pub}\n" for h in inv.hosts.values()))
    env = {
        **os.environ,
        "PBSH_HOSTS_FILE": str(EXAMPLE / distribution / "hosts.yml"),
        "PBSH_KNOWN_HOSTS_FILE": str(known),
        "PBSH_SSH_KEY_FILE": str(key),
        "PBSH_SSH_USER": DISTRIBUTIONS[distribution][0],
        "PBSH_INVENTORY_BASE": str(EXAMPLE / distribution),
        "ANSIBLE_INVENTORY_BIN": str(Path(sys.executable).parent / "ansible-inventory"),
    }
    out = tmp_path / "ci"
    run = subprocess.run(
        ["bash", str(ROOT / "examples/ci/vm-inventory.sh"), str(out)], cwd=ROOT, env=env, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert not [p for p in (out / "inventory").rglob("*") if p.is_symlink()]
    built = inventory.load(out / "inventory")
    hookconfig.check(built)
    assert hookconfig.source_dir(built) == ROOT / "hooks"
    assert len(built.hosts) == 6
