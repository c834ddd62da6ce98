"""Bad inventories through the CLI (docs/bad-input.md): refused before Ansible runs or anything connects.

The parse-error rows run the real ansible-inventory on a broken file. The shape rows use a FAKE
ansible-inventory that prints a listing written by the test (tests/unit/badinput.py), which is
what the real one prints for such inventories. Unreachable hosts are loopback addresses on a
closed port; deploy itself is replaced by a tripwire that fails the test if it is reached.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from pbs_harness.common import errors
from pbs_harness.deploy import playbook as deploy
from tests.unit.badinput import ROOT, assert_refused, fake_ansible_inventory, host_vars, listing, run_cli

PRECONDITION = errors.EXIT_PRECONDITION


@pytest.fixture
def no_deploy(monkeypatch: pytest.MonkeyPatch) -> None:
    def tripwire(*_: object, **__: object) -> None:
        raise AssertionError("a refused inventory went on to run ansible-playbook")

    monkeypatch.setattr(deploy, "run_playbook", tripwire)


def test_inventory_missing(isolated: Path, no_deploy: None, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = run_cli(["deploy", "-i", "/nonexistent/inventory"], capsys)
    assert_refused(rc, out, PRECONDITION, "inventory /nonexistent/inventory does not exist", "fix: pass -i")


def test_broken_yaml_names_file_line_and_column(
    isolated: Path, no_deploy: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """A copy of inventory/cloud.example whose hosts.yml lost a closing brace (real ansible-inventory)."""
    inv = isolated / "cloud"
    shutil.copytree(ROOT / "inventory" / "cloud.example", inv)
    hosts = inv / "hosts.yml"
    lines = hosts.read_text().splitlines()
    broken = next(i for i, line in enumerate(lines) if "ansible_host:" in line)
    lines[broken] = lines[broken].replace("ansible_host:", "{ansible_host:")
    hosts.write_text("\n".join(lines) + "\n")
    rc, out = run_cli(["deploy", "-i", str(inv)], capsys)
    assert_refused(rc, out, PRECONDITION, f"inventory {inv} cannot be parsed: YAML parsing failed", f"{hosts} line")
    assert "column" in out
    assert "pbs_server must hold exactly one host" not in out  # the old misreport


@pytest.mark.parametrize(
    ("data", "says", "fix"),
    [
        (listing(server=[]), "group pbs_server must hold exactly one host (found: none)", "put the PBS server host"),
        (listing(server=["s1", "m1"]), "group pbs_server must hold exactly one host (found: s1, m1)", "and only it"),
        (listing(moms=[]), "group pbs_moms has no hosts", "list every execution host"),
        (listing(moms=["m1"]), "the server host s1 is not in group pbs_moms", "add s1 to `pbs_moms:` too"),
        (
            listing(hostvars={"s1": {"openpbs_install_method": "source"}}),
            "unknown openpbs_install_method 'source'",
            "openpbs_install_packages_url or openpbs_install_packages_dir",
        ),
        (
            listing(hostvars={"m1": {"openpbs_server_start_sched": "yes", "openpbs_hooks_prune": "True"}}),
            "host m1: not booleans: openpbs_server_start_sched is 'yes'; openpbs_hooks_prune is 'True'",
            "write them as true or false, unquoted",
        ),
        (
            listing(hostvars={"m1": {"ansible_port": "ssh"}}),
            "host m1: ansible_port 'ssh' is not a port number",
            "an integer from 1 to 65535",
        ),
        (
            listing(hostvars={"s1": {"ansible_ssh_private_key_file": "/nonexistent/id_ed25519"}}),
            "host s1: SSH key /nonexistent/id_ed25519 does not exist on this machine",
            "point ansible_ssh_private_key_file at the private key",
        ),
    ],
    ids=[
        "no-server",
        "two-servers",
        "no-moms",
        "server-not-a-mom",
        "unknown-install-method",
        "not-booleans",
        "bad-port",
        "missing-ssh-key",
    ],
)
def test_inventory_shape(
    data: dict,
    says: str,
    fix: str,
    *,
    isolated: Path,
    no_deploy: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """FAKE ansible-inventory output (the listing of such an inventory)."""
    hosts = fake_ansible_inventory(monkeypatch, isolated, data)
    rc, out = run_cli(["deploy", "-i", str(hosts)], capsys)
    assert_refused(rc, out, PRECONDITION, says, fix)


@pytest.mark.parametrize("check", [False, True], ids=["deploy", "deploy-check"])
def test_unreachable_hosts_are_named_without_local_advice(
    check: bool, isolated: Path, no_deploy: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAKE ansible-inventory output: two VMs on loopback addresses whose SSH port is closed."""
    data = listing(hostvars={"s1": host_vars("127.0.0.1", 9), "m1": host_vars("127.0.0.2", 9)})
    hosts = fake_ansible_inventory(monkeypatch, isolated, data)
    start = time.monotonic()
    rc, out = run_cli(["deploy", "-i", str(hosts), *(["--check"] if check else [])], capsys)
    assert time.monotonic() - start < 15
    assert_refused(
        rc, out, errors.EXIT_UNREACHABLE, "did not answer on their SSH port within 10s",
        "m1 (127.0.0.2:9): Connection refused", "s1 (127.0.0.1:9): Connection refused",
        f"fix: check that these hosts are running and that ansible_host/ansible_port in {hosts} are right",
    )  # fmt: skip
    assert "pbs-harness up" not in out
    assert "cluster up" not in out


def test_local_inventory_without_a_cluster(isolated: Path, no_deploy: None, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = run_cli(["deploy"], capsys)
    assert_refused(rc, out, PRECONDITION, "the local cluster is not up", "fix: bring it up first: pbs-harness up")
