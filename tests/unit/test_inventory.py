"""Inventory model: groups, SSH settings, and the bad inventories users write."""

from pathlib import Path

import pytest

from pbs_harness.common.errors import PreconditionError, UnreachableError
from pbs_harness.remote.inventory import (
    OPENPBS_PREFIX_DEFAULT,
    Inventory,
    InventoryHost,
    check_reachable,
    declared_openpbs_prefix,
    openpbs_prefix_of,
    parse,
)

P = Path("inv")


def listing(**overrides: object) -> dict:
    data: dict = {
        "_meta": {
            "hostvars": {
                "s1": {
                    "ansible_host": "10.1.0.2",
                    "ansible_user": "admin",
                    "ansible_ssh_private_key_file": "/k/id",
                    "ansible_ssh_common_args": "-o UserKnownHostsFile=/k/known -o StrictHostKeyChecking=yes",
                    "openpbs_install_method": "existing",
                },
                "m1": {"ansible_host": "10.1.0.3"},
            }
        },
        "all": {"children": ["ungrouped", "pbs_server", "pbs_moms", "execution"]},
        "pbs_server": {"hosts": ["s1"]},
        "pbs_moms": {"hosts": ["s1"], "children": ["execution"]},
        "execution": {"hosts": ["m1"]},
    }
    data.update(overrides)
    return data


def test_groups_resolve_children_and_server_is_a_mom() -> None:
    inv = parse(listing(), P)
    assert inv.server.name == "s1"
    assert [m.name for m in inv.moms] == ["s1", "m1"]
    assert [c.name for c in inv.clients] == ["s1"]  # no pbs_clients group: the server submits


def test_ssh_target_from_connection_vars() -> None:
    target = parse(listing(), P).server.ssh_target()
    assert (target.address, target.user, target.key_file) == ("10.1.0.2", "admin", "/k/id")
    assert target.known_hosts == "/k/known"
    assert target.strict_host_keys


def test_disabled_host_key_checking_is_noticed() -> None:
    host = InventoryHost("x", {"ansible_ssh_common_args": "-oStrictHostKeyChecking=no"}, frozenset())
    assert not host.ssh_target().strict_host_keys


def test_inventory_without_server_is_rejected() -> None:
    data = listing()
    del data["pbs_server"]
    with pytest.raises(PreconditionError, match="pbs_server must hold exactly one host") as err:
        parse(data, P)
    assert "pbs_server:" in err.value.hint


def test_two_servers_are_rejected() -> None:
    with pytest.raises(PreconditionError, match=r"found: s1, m1"):
        parse(listing(pbs_server={"hosts": ["s1", "m1"]}), P)


def test_inventory_without_moms_is_rejected() -> None:
    with pytest.raises(PreconditionError, match="pbs_moms has no hosts"):
        parse(listing(pbs_moms={"hosts": []}), P)


def test_unknown_install_method_names_both_methods() -> None:
    data = listing()
    data["_meta"]["hostvars"]["s1"]["openpbs_install_method"] = "source"
    with pytest.raises(PreconditionError, match="unknown openpbs_install_method 'source'") as err:
        parse(data, P)
    assert "existing" in err.value.hint
    assert "packages" in err.value.hint


def test_unreachable_host_is_named_within_the_timeout() -> None:
    # 127.0.0.1 port 9 (discard) is closed on this machine: a refused connection, fast and local.
    hosts = {"m9": InventoryHost("m9", {"ansible_host": "127.0.0.1", "ansible_port": 9}, frozenset())}
    inv = Inventory(P, hosts, {"pbs_server": ["m9"], "pbs_moms": ["m9"]})
    with pytest.raises(UnreachableError, match=r"m9 \(127.0.0.1:9\)"):
        check_reachable(inv, timeout=2)


def test_inventory_dir_in_ssh_args_is_rendered_like_ansible_does(tmp_path: Path) -> None:
    """`{{ inventory_dir }}` (cloud.example's known_hosts path) means the inventory's folder for the
    harness's own SSH layer too; `ansible-inventory --list` does not give that variable."""
    data = listing()
    data["_meta"]["hostvars"]["m1"]["ansible_ssh_common_args"] = (
        "-o StrictHostKeyChecking=yes -o UserKnownHostsFile={{ inventory_dir }}/.ssh/known_hosts"
    )
    inv = parse(data, tmp_path)
    assert inv.hosts["m1"].ssh_target().known_hosts == f"{tmp_path}/.ssh/known_hosts"
    assert parse(data, tmp_path / "hosts.yml").hosts["m1"].ssh_target().known_hosts == f"{tmp_path}/.ssh/known_hosts"


def test_openpbs_prefix_is_openpbs_install_prefix_else_the_role_default() -> None:
    assert parse(listing(), P).openpbs_prefix == Path(OPENPBS_PREFIX_DEFAULT) == Path("/opt/pbs")
    data = listing()
    data["_meta"]["hostvars"]["s1"]["openpbs_install_prefix"] = "/usr/local/pbs"
    assert parse(data, P).openpbs_prefix == Path("/usr/local/pbs")
    # The old name counts only where it always did (the local cluster's install check).
    assert openpbs_prefix_of({"openpbs_prefix": "/old"}) == Path("/opt/pbs")


def test_declared_openpbs_prefix_reads_group_vars_without_ansible(tmp_path: Path) -> None:
    assert declared_openpbs_prefix(tmp_path) == Path("/opt/pbs")  # nothing declared
    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "group_vars" / "all" / "a.yml").write_text("openpbs_install_prefix: /a\n")
    (tmp_path / "group_vars" / "all" / "b.yml").write_text("other: 1\n")
    assert declared_openpbs_prefix(tmp_path) == Path("/a")
    (tmp_path / "group_vars" / "all" / "c.yml").write_text("openpbs_install_prefix: '{{ somewhere }}'\n")
    assert declared_openpbs_prefix(tmp_path) == Path("/opt/pbs")  # a template only Ansible renders
    shipped = Path(__file__).resolve().parents[2] / "inventory" / "local"
    assert declared_openpbs_prefix(shipped) == Path("/opt/pbs")
