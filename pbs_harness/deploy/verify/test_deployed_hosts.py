"""Host checks of a deployed cluster, run by `pbs-harness verify` through testinfra.

Each test runs once per inventory host; what a host should run comes from its groups and
variables in the inventory (the same source the roles deploy from).
"""

from __future__ import annotations

import json

import pytest

from pbs_harness.remote.inventory import openpbs_prefix_of

SERVER_DAEMONS = ("pbs_server.bin", "pbs_sched", "pbs_comm")
# Ports of the shipped defaults: server 15001, mom 15002/15003, comm 17001, data service 15007.
SERVER_PORTS = (15001, 17001, 15007)
MOM_PORTS = (15002, 15003)


def _vars(host) -> dict:
    return host.ansible.get_variables()


def _is_server(host) -> bool:
    return "pbs_server" in _vars(host).get("group_names", [])


def _is_mom(host) -> bool:
    return "pbs_moms" in _vars(host).get("group_names", [])


def _pbs_home(host) -> str:
    return str(_vars(host).get("openpbs_mom_home", "/var/spool/pbs"))


def _prefix(host) -> str:
    return str(openpbs_prefix_of(_vars(host)))


def _server_name(host) -> str:
    return _vars(host)["groups"]["pbs_server"][0]


def test_pbs_conf_names_the_server(host) -> None:
    conf = host.file("/etc/pbs.conf")
    assert conf.exists
    assert f"PBS_SERVER={_server_name(host)}" in conf.content_string.splitlines()
    expect_mom = "1" if _is_mom(host) else "0"
    assert f"PBS_START_MOM={expect_mom}" in conf.content_string.splitlines()


def test_setuid_helpers(host) -> None:
    for name in ("pbs_iff", "pbs_rcp"):
        f = host.file(f"{_prefix(host)}/sbin/{name}")
        assert f.mode & 0o4000, f"{name} lacks the setuid bit unprivileged clients need"


def test_server_daemons(host) -> None:
    running = {p.comm for p in host.process.filter()}
    if _is_server(host):
        for daemon in SERVER_DAEMONS:
            assert daemon[:15] in running, f"{daemon} is not running on the server host"
        for port in SERVER_PORTS:
            assert host.socket(f"tcp://0.0.0.0:{port}").is_listening or host.socket(f"tcp://{port}").is_listening
    else:
        assert "pbs_server.bin" not in running, "a PBS server runs on a host outside pbs_server"


def test_mom_running_and_listening(host) -> None:
    if not _is_mom(host):
        pytest.skip("not a mom")
    assert "pbs_mom" in {p.comm for p in host.process.filter()}
    for port in MOM_PORTS:
        assert host.socket(f"tcp://{port}").is_listening or host.socket(f"tcp://0.0.0.0:{port}").is_listening


def test_mom_config_as_declared(host) -> None:
    if not _is_mom(host):
        pytest.skip("not a mom")
    wanted = _vars(host).get("openpbs_mom_config", {}) or {}
    lines = host.file(f"{_pbs_home(host)}/mom_priv/config").content_string.splitlines()
    for key, value in wanted.items():
        if value is None:
            assert not any(line.split()[:1] == [key] for line in lines if line.strip()), f"{key} should be absent"
        else:
            assert any(line.split()[:1] == [key] for line in lines if line.strip()), f"{key} missing from mom config"


def test_hooks_present(host) -> None:
    if not _is_server(host):
        pytest.skip("hooks live on the server")
    declared = [h["name"] for h in _vars(host).get("openpbs_hooks_list", []) if h.get("state", "present") == "present"]
    out = host.check_output(f"{_prefix(host)}/bin/qmgr -c 'list hook'")
    for name in declared:
        assert f"Hook {name}" in out, f"hook {name} not installed"


NOT_UP = ("down", "unknown", "initializing", "stale")  # the openpbs_mom role's wait.yml, openpbs_mom_wait_for: up


def test_server_answers_and_nodes_ready(host) -> None:
    """Every mom is a node, in the state the deploy waited for (openpbs_mom_wait_for): free, or up (its
    mom reports: not down, unknown, initializing or stale)."""
    if not _is_server(host):
        pytest.skip("server host only")
    out = host.check_output(f"{_prefix(host)}/bin/pbsnodes -av -F json")

    nodes = json.loads(out, strict=False)["nodes"]
    hostvars = _vars(host)
    wanted = hostvars.get("openpbs_mom_wait_for", "up")
    for mom in hostvars["groups"]["pbs_moms"]:
        assert mom in nodes, f"node {mom} not created on the server"
        state = nodes[mom]["state"]
        if wanted == "free":
            assert state == "free", f"node {mom} is {state}, expected free (openpbs_mom_wait_for: free)"
        elif wanted == "up":
            assert not any(s in state for s in NOT_UP), f"node {mom} is {state}, expected up (openpbs_mom_wait_for: up)"
