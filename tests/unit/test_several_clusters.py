"""Several local clusters on one machine: names that never collide, preflight refusing another
cluster's prefix or subnet, and hosts looked up in the cluster their inventory records.

The machine is faked: a temporary hosts file and state directories, and `ip link` answered by a
canned bridge list. Nothing is created on the machine."""

from pathlib import Path

import pytest

from pbs_harness import hosts
from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import hostsfile, network, preflight, registry, state
from pbs_harness.localcluster.spec import IFNAME_MAX, ClusterSpec


def test_interface_names_fit_and_differ_across_prefixes_even_at_maximum_length() -> None:
    a = ClusterSpec(prefix="abcdefgh", host_count=32)
    b = ClusterSpec(prefix="abcdefg1", host_count=32, subnet="10.72.0.0/24")
    for spec in (a, b):
        assert len(spec.bridge) <= IFNAME_MAX
        assert all(len(h.veth_outer) <= IFNAME_MAX for h in spec.hosts)
    links_a = {a.bridge} | {h.veth_outer for h in a.hosts} | {h.netns for h in a.hosts}
    links_b = {b.bridge} | {h.veth_outer for h in b.hosts} | {h.netns for h in b.hosts}
    assert not links_a & links_b


@pytest.mark.parametrize("bad", ["root", "Ops", "1ops", "o p"])
def test_bad_login_users_are_refused(bad: str) -> None:
    with pytest.raises(PreconditionError, match="login user") as err:
        ClusterSpec(login_user=bad)
    assert "--login-user" in err.value.hint


@pytest.fixture
def machine(tmp_path: Path) -> dict:
    """A hosts file with the default cluster's block, and its state dir."""
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n")
    parent = tmp_path / "lib"
    default = parent / "local"
    spec = ClusterSpec()
    state.save(state.ClusterState.from_spec(spec), default)
    hostsfile.install(str(default), [(h.ip, h.name) for h in spec.hosts], hosts)
    return {"hosts_file": hosts, "state_parent": parent, "default": default}


def test_another_clusters_prefix_is_refused(machine: dict) -> None:
    where = {k: machine[k] for k in ("hosts_file", "state_parent")}
    with pytest.raises(PreconditionError, match=r"prefix 'pbsh' is already used by the local cluster in .*local"):
        preflight.check_other_clusters(ClusterSpec(subnet="10.72.0.0/24"), machine["state_parent"] / "vm", **where)


def test_another_clusters_subnet_is_refused(machine: dict) -> None:
    where = {k: machine[k] for k in ("hosts_file", "state_parent")}
    with pytest.raises(PreconditionError, match=r"10.71.0.0/24 overlaps 10.71.0.0/24") as err:
        preflight.check_other_clusters(ClusterSpec(prefix="vm"), machine["state_parent"] / "vm", **where)
    assert "--subnet" in err.value.hint


def test_a_different_prefix_and_subnet_coexist_and_a_cluster_never_refuses_itself(machine: dict) -> None:
    where = {k: machine[k] for k in ("hosts_file", "state_parent")}
    preflight.check_other_clusters(
        ClusterSpec(prefix="vm", subnet="10.72.0.0/24"), machine["state_parent"] / "vm", **where
    )
    preflight.check_other_clusters(ClusterSpec(), machine["default"], **where)


def test_a_legacy_block_counts_as_a_cluster_unless_it_names_only_our_hosts(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text(f"{hostsfile.LEGACY_BEGIN} (managed)\n10.71.0.11\tpbsh01\n{hostsfile.LEGACY_END}\n")
    where = {"hosts_file": hosts, "state_parent": tmp_path / "none"}
    [legacy] = registry.known(**where)
    assert (legacy.state_dir, legacy.prefix) == ("", "pbsh")
    preflight.check_other_clusters(ClusterSpec(), tmp_path / "local", **where)  # our own, older block
    with pytest.raises(PreconditionError, match="older pbs-harness"):
        preflight.check_other_clusters(ClusterSpec(prefix="vm"), tmp_path / "vm", **where)


def test_inventory_hosts_are_looked_up_in_the_cluster_their_inventory_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path / "default-is-not-it"))
    vm = tmp_path / "vm"
    state.save(state.ClusterState.from_spec(ClusterSpec(prefix="vm", subnet="10.72.0.0/24")), vm)
    monkeypatch.setattr(network, "link_names", lambda: {"vm-br0"})
    host = hosts.host("vm03", {state.LOCAL_HOST_VAR: True, state.STATE_DIR_VAR: str(vm)})
    assert (host.spec.ip, host.root) == ("10.72.0.13", vm)
    gone = tmp_path / "gone"
    with pytest.raises(PreconditionError, match="no local cluster is up"):
        hosts.host("vm03", {hosts.KIND_VAR: "namespace", state.STATE_DIR_VAR: str(gone)})


def test_the_hint_proposes_a_prefix_and_subnet_nobody_uses(machine: dict) -> None:
    where = {k: machine[k] for k in ("hosts_file", "state_parent")}
    vm = machine["state_parent"] / "vm"
    state.save(state.ClusterState.from_spec(ClusterSpec(prefix="vm", subnet="10.72.0.0/24")), vm)
    with pytest.raises(PreconditionError) as err:
        preflight.check_other_clusters(
            ClusterSpec(prefix="vm", subnet="10.72.0.0/24"), machine["state_parent"] / "x", **where
        )
    assert "--name-prefix vmb --subnet 10.73.0.0/24" in err.value.hint
