"""The cluster topology by role: built from an `ansible-inventory --list` listing (as the local
inventory script and a hand-written cloud inventory give it) and a canned `pbsnodes -av -F json`
"nodes" map (a fake of the server's answer; no PBS is involved)."""

from pathlib import Path

import pytest

from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import roles
from pbs_harness.remote.inventory import parse
from pbs_harness.suite import topology

USERS = [{"name": n} for n in ("alice", "bob", "oper", "mgr")]
SERVER_ATTRS = {"operators": ["oper@*"], "managers": ["mgr@*"]}


def listing(names: list[str], extra_vars: dict | None = None) -> dict:
    """A listing shaped like the local inventory script's: server first, every host a mom."""
    parts = roles.group_vars(names)
    common = {"openpbs_common_users": USERS, "openpbs_server_attributes": SERVER_ATTRS, **(extra_vars or {})}
    hostvars = {n: {**common, **parts["pbs_moms"], **(parts["pbs_server"] if n == names[0] else {})} for n in names}
    return {
        "_meta": {"hostvars": hostvars},
        "all": {"children": ["pbs_server", "pbs_moms"]},
        "pbs_server": {"hosts": names[:1]},
        "pbs_moms": {"hosts": names},
    }


def nodes_for(names: list[str], ncpus: int = 2) -> dict:
    """What the server would list after deploying `listing(names)`."""
    out = {}
    layouts = roles.group_vars(names)["pbs_moms"]["openpbs_mom_vnode_layouts"]
    attrs = roles.group_vars(names)["pbs_server"]["openpbs_server_node_attributes"]
    for name in names:
        avail = {"host": name, "ncpus": ncpus, "mem": "4gb"}
        avail.update({k.removeprefix("resources_available."): v for k, v in attrs.get(name, {}).items()})
        out[name] = {"resources_available": avail}
        for vnode in layouts.get(name, {}).get("vnodes", {}):
            out[vnode] = {"resources_available": {"host": name, "ncpus": 1, "mem": "1gb"}}
    return out


def build(names: list[str], nodes: dict | None = None) -> topology.Topology:
    inv = parse(listing(names), Path("inv"))
    return topology.build(inv, nodes if nodes is not None else nodes_for(names))


NAMES = [f"vm{i:02d}" for i in range(1, 7)]


def test_roles_follow_position_not_names() -> None:
    topo = build(NAMES)
    assert topo.server.name == "vm01"
    assert topo.multi_vnode_host(min_vnodes=4).name == "vm06"
    assert topo.multi_vnode_host().all_vnodes == ("vm06", "vm06[0]", "vm06[1]", "vm06[2]", "vm06[3]")
    assert topo.hosts_with("localssd") == ["vm05"]
    # generic picks come first; the host offering a custom resource is left for last
    assert [h.name for h in topo.plain] == ["vm02", "vm03", "vm04", "vm05"]
    assert topo.plain_hosts(3, ncpus=2) == ["vm02", "vm03", "vm04"]
    assert topo.plain_hosts(2, exclude=["vm02"]) == ["vm03", "vm04"]
    assert topo.vnodes_with("localssd") == ["vm05"]


def test_the_same_suite_needs_are_met_by_other_names() -> None:
    names = ["head", "node-a", "node-b", "node-c", "node-d", "fat"]
    topo = build(names)
    assert (topo.server.name, topo.multi_vnode_host().name, topo.hosts_with("localssd")) == ("head", "fat", ["node-d"])


def test_users_by_part() -> None:
    users = build(NAMES).users
    assert (users.owner, users.other, users.operator, users.manager) == ("alice", "bob", "oper", "mgr")


def test_unmet_needs_skip_naming_the_need_and_the_variable() -> None:
    topo = build(["s1", "m1"])  # 2 hosts: m1 is the multi-vnode host, no plain host, no localssd
    with pytest.raises(pytest.skip.Exception, match=r"needs 1 single-vnode execution hosts.*pbs_moms"):
        topo.plain_hosts(1)
    with pytest.raises(pytest.skip.Exception, match=r"at least 5 vnodes.*m1 \(4\).*openpbs_mom_vnode_layouts"):
        topo.multi_vnode_host(min_vnodes=5)
    with pytest.raises(pytest.skip.Exception, match=r"localssd.*openpbs_server_node_attributes"):
        topo.hosts_with("localssd")


def test_cpu_need_names_the_node_attribute_that_meets_it() -> None:
    topo = build(NAMES, nodes_for(NAMES, ncpus=8))
    with pytest.raises(pytest.skip.Exception, match=r"ncpus=2.*resources_available.ncpus: 2"):
        topo.plain_hosts(1, ncpus=2)


def test_inventory_and_server_disagreeing_is_an_error_not_a_skip() -> None:
    nodes = nodes_for(NAMES)
    del nodes["vm06[3]"]
    with pytest.raises(PreconditionError, match=r"vm06: inventory layout vnodes .*vm06\[3\].*server has") as err:
        build(NAMES, nodes)
    assert "deploy" in err.value.hint


def test_too_few_test_users_is_an_inventory_error() -> None:
    data = listing(NAMES, {"openpbs_common_users": [{"name": "alice"}, {"name": "oper"}]})
    with pytest.raises(PreconditionError, match="two unprivileged test accounts"):
        topology.build(parse(data, Path("inv")), nodes_for(NAMES))


def test_describe_names_every_part() -> None:
    assert build(NAMES).describe() == (
        "server vm01; plain vm02, vm03, vm04, vm05; multi-vnode vm06 (+4); localssd on vm05"
    )


def test_local_inventory_gives_the_parts_through_ansible_inventory(tmp_path: Path, monkeypatch) -> None:
    """The real inventory/local (script + group_vars) read by the real ansible-inventory, for a cluster
    state saved in tmp_path with host prefix `vm` (no cluster is brought up): the group_vars files
    must not override the parts the script gives by position."""
    from pbs_harness.localcluster import state
    from pbs_harness.localcluster.spec import ClusterSpec
    from pbs_harness.remote import inventory

    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path))
    state.save(state.ClusterState.from_spec(ClusterSpec(prefix="vm", host_count=6)))
    # inventory.load refuses a local cluster whose bridge is gone only in check_reachable, not here
    inv = inventory.load(Path(__file__).resolve().parents[2] / "inventory" / "local")
    topo = topology.build(inv, nodes_for(NAMES))
    assert topo.describe() == "server vm01; plain vm02, vm03, vm04, vm05; multi-vnode vm06 (+4); localssd on vm05"
    assert topo.users.owner == "pbsuser1"
    assert (topo.users.operator, topo.users.manager) == ("pbsoper", "pbsmgr")


def test_accounts_by_role_root_is_none_and_a_missing_operator_skips() -> None:
    users = build(NAMES).users
    assert [users.account(r) for r in ("root", "owner", "other", "operator", "manager")] == [
        None,
        "alice",
        "bob",
        "oper",
        "mgr",
    ]
    bare = topology.Users(owner="alice", other="bob", operator=None, manager=None)
    with pytest.raises(pytest.skip.Exception, match=r"needs a PBS operator.*openpbs_server_attributes.operators"):
        bare.account("operator")
    with pytest.raises(ValueError, match="unknown user role"):
        users.account("admin")
