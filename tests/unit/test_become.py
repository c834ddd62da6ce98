"""Commands through an unprivileged login account: the `sudo -n` wrapping of the harness's SSH layer,
and the inventory variables that ask for it. Pure string building; nothing connects anywhere."""

import shlex

import pytest

from pbs_harness.remote.inventory import InventoryHost
from pbs_harness.remote.transport import SSHTarget, wire_command

ROOT = SSHTarget("h", "10.0.0.1")
OPS = SSHTarget("h", "10.0.0.1", user="ops", become=True)


def test_root_login_sends_commands_as_they_are() -> None:
    assert wire_command(ROOT, "qstat -B") == "qstat -B"
    assert wire_command(ROOT, "id", user="pbsuser1") == "runuser -l pbsuser1 -c id"


def test_login_user_with_become_wraps_root_commands_in_sudo_bash() -> None:
    wire = wire_command(OPS, "echo a | wc -l; cd /var/spool/pbs && ls")
    assert wire.startswith("sudo -n -- bash -c ")
    # The shell command survives quoting unchanged.
    assert shlex.split(wire)[5] == "echo a | wc -l; cd /var/spool/pbs && ls"


def test_login_user_with_become_runs_user_commands_through_runuser_under_sudo() -> None:
    wire = wire_command(OPS, "qsub -- /bin/sleep 5", user="pbsuser1")
    assert shlex.split(wire) == ["sudo", "-n", "--", "runuser", "-l", "pbsuser1", "-c", "qsub -- /bin/sleep 5"]


def test_become_user_other_than_root_is_passed_to_sudo() -> None:
    target = SSHTarget("h", "10.0.0.1", user="ops", become=True, become_user="pbsadmin")
    assert shlex.split(wire_command(target, "id"))[:5] == ["sudo", "-n", "-u", "pbsadmin", "--"]
    assert target.effective_user == "pbsadmin"


def test_no_become_or_already_the_become_user_sends_commands_unwrapped() -> None:
    assert wire_command(SSHTarget("h", "a", user="ops"), "id") == "id"
    assert wire_command(SSHTarget("h", "a", user="root", become=True), "id") == "id"
    assert OPS.effective_user == "root"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, True), ("true", True), ("yes", True), ("True", True), (False, False), ("no", False), (None, False)],
)
def test_inventory_become_is_read_as_ansible_reads_it(value: object, expected: bool) -> None:
    host = InventoryHost("h", {"ansible_user": "ops", "ansible_become": value}, frozenset())
    assert host.ssh_target().become is expected


def test_inventory_become_user_defaults_to_root() -> None:
    target = InventoryHost("h", {"ansible_user": "ops", "ansible_become": True}, frozenset()).ssh_target()
    assert (target.user, target.become_user, target.escalates) == ("ops", "root", True)
