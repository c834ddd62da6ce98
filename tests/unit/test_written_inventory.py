"""`--write-inventory`: the running cluster as a static inventory in inventory/cloud.example's layout.

The cluster is faked by a state directory in a temporary folder (state.json, known_hosts); the
written inventory is then read by the real `ansible-inventory`, as deploy and the suites read it."""

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pbs_harness.common.errors import PreconditionError
from pbs_harness.hosts.namespace import NamespaceHost
from pbs_harness.localcluster import provider, sshkeys, state, written_inventory
from pbs_harness.localcluster.spec import ClusterSpec
from pbs_harness.remote import inventory

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def vm_state(tmp_path: Path) -> Path:
    root = tmp_path / "state" / "vm"
    spec = ClusterSpec(prefix="vm", subnet="10.72.0.0/24", login_user="ops")
    state.save(state.ClusterState.from_spec(spec), root)
    state.ssh_dir(root).mkdir()
    sshkeys.known_hosts(root).write_text("".join(f"{h.name},{h.ip} ssh-ed25519 AAAAfake\n" for h in spec.hosts))
    return root


def ansible_list(path: Path) -> dict:
    exe = Path(sys.executable).parent / "ansible-inventory"
    out = subprocess.run([str(exe), "-i", str(path), "--list"], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout)


def test_written_inventory_reaches_the_hosts_as_the_login_user_with_pinned_keys(vm_state: Path, tmp_path: Path) -> None:
    out = tmp_path / "vm-inventory"
    hosts_yml = written_inventory.write(out, vm_state, ROOT)
    assert hosts_yml.read_text().startswith(written_inventory.MARK)
    data = ansible_list(out)
    assert data["pbs_server"]["hosts"] == ["vm01"]
    assert data["pbs_clients"]["hosts"] == ["vm01"]
    assert data["pbs_moms"]["hosts"] == [f"vm0{i}" for i in range(1, 7)]
    hv = data["_meta"]["hostvars"]["vm04"]
    assert (hv["ansible_host"], hv["ansible_user"], hv["ansible_become"]) == ("10.72.0.14", "ops", True)
    assert hv["ansible_ssh_private_key_file"] == str(vm_state / "ssh" / "id_ed25519")
    args = hv["ansible_ssh_common_args"]
    assert "StrictHostKeyChecking=yes" in args
    assert f"UserKnownHostsFile={shlex.quote(str(out / '.ssh' / 'known_hosts'))}" in args
    assert (out / ".ssh" / "known_hosts").read_text() == sshkeys.known_hosts(vm_state).read_text()
    # The harness knows the cluster (for controller-side faults) and goes through sudo.
    assert (hv[provider.LOCAL_HOST_VAR], hv[provider.STATE_DIR_VAR]) == (True, str(vm_state))
    inv = inventory.parse(data, out)
    assert inv.kind is NamespaceHost  # a plain file, whose hosts say they are the local cluster's
    target = inv.hosts["vm04"].ssh_target()
    assert (target.user, target.escalates, target.known_hosts, target.strict_host_keys) == (
        "ops",
        True,
        str(out / ".ssh" / "known_hosts"),
        True,
    )


def test_group_vars_are_inventory_locals_plus_the_parts_by_position(vm_state: Path, tmp_path: Path) -> None:
    out = tmp_path / "vm-inventory"
    written_inventory.write(out, vm_state, ROOT)
    local = ROOT / "inventory" / "local" / "group_vars"
    written = {p.relative_to(out / "group_vars") for p in (out / "group_vars").rglob("*.yml")}
    assert written == {p.relative_to(local) for p in local.rglob("*.yml")} | {
        Path("pbs_moms/topology.yml"),
        Path("pbs_server/topology.yml"),
    }
    for src in local.rglob("*.yml"):
        want = yaml.safe_load(src.read_text())
        if "openpbs_hooks_src_dir" in want:
            want["openpbs_hooks_src_dir"] = str(ROOT / "hooks")
        assert yaml.safe_load((out / "group_vars" / src.relative_to(local)).read_text()) == want
    hv = ansible_list(out)["_meta"]["hostvars"]
    # The parts the local inventory script gives by position: the 6th host has the vnode layout,
    # the 5th offers localssd (localcluster/roles.py).
    assert set(hv["vm01"]["openpbs_mom_vnode_layouts"]) == {"vm06"}
    assert set(hv["vm06"]["openpbs_mom_vnode_layouts"]["vm06"]["vnodes"]) == {f"vm06[{i}]" for i in range(4)}
    assert hv["vm01"]["openpbs_server_node_attributes"] == {"vm05": {"resources_available.localssd": 1}}
    assert "pbsh0" not in json.dumps(hv)
    assert hv["vm01"]["openpbs_hooks_src_dir"] == str(ROOT / "hooks")


def test_an_inventory_written_before_is_rewritten_and_anything_else_is_refused(vm_state: Path, tmp_path: Path) -> None:
    out = tmp_path / "vm-inventory"
    written_inventory.write(out, vm_state, ROOT)
    (out / "group_vars" / "stale.yml").write_text("---\nx: 1\n")
    written_inventory.write(out, vm_state, ROOT)
    assert not (out / "group_vars" / "stale.yml").exists()
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(PreconditionError, match="something other than an inventory") as err:
        written_inventory.write(other, vm_state, ROOT)
    assert "nothing there is overwritten" in err.value.hint
    assert (other / "notes.txt").read_text() == "keep me"


def test_no_cluster_no_inventory(tmp_path: Path) -> None:
    with pytest.raises(PreconditionError, match="no local cluster"):
        written_inventory.write(tmp_path / "inv", tmp_path / "nothing", ROOT)
