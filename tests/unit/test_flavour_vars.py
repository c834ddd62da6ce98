"""What differs by kind of local host, per host in the inventory (hosts/namespace.py, hosts/system.py:
inventory_vars):
in the inventory script's listing and in written inventories, where host variables outrank group_vars.

Faked: the cluster is a state directory in tmp_path (state.json and known_hosts, as `up` writes them),
and a system cluster's packages are a tmp folder holding an openpbs-source.json record and no
packages. Real: the inventory script's listing function, the written inventory, and `ansible-inventory`
reading it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pbs_harness.common.errors import PreconditionError
from pbs_harness.deploy.openpbs_source import PROVENANCE_FILE, Provenance
from pbs_harness.hosts.base import KIND_VAR as FLAVOUR_VAR
from pbs_harness.hosts.namespace import INVENTORY_VARS as NAMESPACE
from pbs_harness.localcluster import cluster_kind, sshkeys, state, written_inventory
from pbs_harness.localcluster import inventory as local_inventory
from pbs_harness.localcluster.spec import ClusterSpec

ROOT = Path(__file__).resolve().parents[2]
VERSION = "23.06.06"
FILES = {kind: f"openpbs-{kind}_{VERSION}-1_amd64.deb" for kind in ("server", "execution", "client", "ptl")}


def packages_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    record = Provenance("archive", "openpbs-master-cd7ab5e.tar.gz", "9" * 64, "cd7ab5e" + "0" * 33, VERSION, FILES)
    (path / PROVENANCE_FILE).write_text(json.dumps(record.to_json()))
    return path


def cluster_state(root: Path, flavour: str, packages: Path | None = None) -> state.ClusterState:
    spec = ClusterSpec(prefix="sy", subnet="10.73.0.0/24", host_count=3, flavour=flavour)
    st = state.ClusterState.from_spec(spec)
    st.packages_dir = str(packages) if packages else None
    state.save(st, root)
    state.ssh_dir(root).mkdir()
    sshkeys.known_hosts(root).write_text("".join(f"{h.name},{h.ip} ssh-ed25519 AAAAfake\n" for h in spec.hosts))
    return st


def test_namespace_hosts_share_this_machines_openpbs_names_and_homes(tmp_path: Path) -> None:
    st = cluster_state(tmp_path / "state", "namespace")
    assert cluster_kind.of(st.spec).inventory_vars(st) == {
        FLAVOUR_VAR: "namespace",
        "openpbs_install_method": "existing",
        "openpbs_common_shared_etc": True,
        "openpbs_common_hosts_file": False,
        "openpbs_common_user_ssh_keys": False,
        "openpbs_mom_usecp": ["*:/home /home"],
    }


def test_system_hosts_install_the_recorded_packages_and_share_nothing(tmp_path: Path) -> None:
    packages = packages_folder(tmp_path / "packages")
    st = cluster_state(tmp_path / "state", "system", packages)
    assert cluster_kind.of(st.spec).inventory_vars(st) == {
        FLAVOUR_VAR: "system",
        "openpbs_install_method": "packages",
        "openpbs_install_packages_dir": str(packages),
        "openpbs_install_version": VERSION,
        # The three kinds the role installs, by the names the build gave them (the ptl package is not one).
        "openpbs_install_package_files": {"apt": {k: FILES[k] for k in ("server", "execution", "client")}},
        "openpbs_install_provenance_file": str(packages / PROVENANCE_FILE),
        "openpbs_common_hosts_file": True,
        "openpbs_common_user_ssh_keys": True,
        "openpbs_mom_usecp": [],
    }


@pytest.mark.parametrize("recorded", ["none", "gone", "no record"])
def test_system_hosts_without_their_packages_record_are_refused_with_the_fix(tmp_path: Path, recorded: str) -> None:
    packages = {"none": None, "gone": tmp_path / "gone", "no record": tmp_path / "empty"}[recorded]
    (tmp_path / "empty").mkdir()
    st = cluster_state(tmp_path / "state", "system", packages)
    with pytest.raises(PreconditionError) as err:
        cluster_kind.of(st.spec).inventory_vars(st)
    assert "the system hosts' OpenPBS packages are not where the cluster recorded them" in err.value.message
    assert PROVENANCE_FILE in err.value.message
    assert err.value.hint == (
        "bring the cluster up again with --openpbs PATH (pbs-harness up --flavour system --openpbs ...)"
    )


def test_every_flavour_variable_is_a_role_variable(tmp_path: Path) -> None:
    """A misspelt name would be an inventory variable no role reads: each is in some role's defaults."""
    documented = set()
    for defaults in ROOT.glob("roles/*/defaults/main.yml"):
        documented |= set(yaml.safe_load(defaults.read_text()))
    system = cluster_state(tmp_path / "state", "system", packages_folder(tmp_path / "packages"))
    names = (set(NAMESPACE) | set(cluster_kind.of(system.spec).inventory_vars(system))) - {FLAVOUR_VAR}
    assert names <= documented, names - documented


def test_the_inventory_script_gives_each_host_its_flavours_variables(tmp_path: Path) -> None:
    packages = packages_folder(tmp_path / "packages")
    root = tmp_path / "state"
    st = cluster_state(root, "system", packages)
    listing = local_inventory.inventory(root)
    hostvars = listing["_meta"]["hostvars"]
    assert sorted(hostvars) == ["sy01", "sy02", "sy03"]
    for name, host_vars in hostvars.items():
        assert host_vars["ansible_host"] == st.spec.host(name).ip
        kind_vars = cluster_kind.of(st.spec).inventory_vars(st)
        assert {k: host_vars[k] for k in kind_vars} == kind_vars
    # The group-level listing carries none of them: per host only, so no group_vars file can win.
    for group in local_inventory.GROUPS:
        assert FLAVOUR_VAR not in listing[group].get("vars", {})


def ansible_host_vars(inventory: Path, host: str) -> dict:
    exe = Path(sys.executable).parent / "ansible-inventory"
    out = subprocess.run(
        [str(exe), "-i", str(inventory), "--host", host], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return json.loads(out.stdout)


@pytest.mark.parametrize("flavour", ["system", "namespace"])
def test_a_written_inventorys_host_variables_outrank_its_group_vars(tmp_path: Path, flavour: str) -> None:
    """A site's group_vars saying the opposite of the flavour's variables do not change what the hosts get."""
    packages = packages_folder(tmp_path / "packages")
    root = tmp_path / "state"
    st = cluster_state(root, flavour, packages)
    out = tmp_path / "written"
    written_inventory.write(out, root, ROOT)
    opposite = {
        "openpbs_install_method": "packages" if flavour == "namespace" else "existing",
        "openpbs_common_hosts_file": flavour == "namespace",
        "openpbs_common_user_ssh_keys": flavour == "namespace",
        FLAVOUR_VAR: "ssh",
    }
    (out / "group_vars" / "all" / "site.yml").write_text("---\n" + yaml.safe_dump(opposite))
    (out / "group_vars" / "pbs_moms" / "site.yml").write_text(
        "---\n" + yaml.safe_dump({"openpbs_mom_usecp": ["*:/site /site"]})
    )
    want = cluster_kind.of(st.spec).inventory_vars(st)
    for host in ("sy01", "sy03"):  # the server host (in every group) and a mom
        got = ansible_host_vars(out, host)
        assert {k: got.get(k) for k in want} == want, host
