"""The login user's pieces that need no account: the per-host sudo rule and the sshd checks of
the key path. Files live in a temporary folder; no account is created."""

import stat
from pathlib import Path

import pytest

from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import login, sshkeys
from pbs_harness.localcluster.spec import ClusterSpec


def test_sudo_rule_is_written_where_only_the_host_mounts_it(tmp_path: Path) -> None:
    login.write_sudoers("vm01", "ops", tmp_path)
    d = tmp_path / "hosts" / "vm01" / "sudoers.d"
    rule = d / login.SUDOERS_FILE
    assert "ops ALL=(ALL:ALL) NOPASSWD: ALL" in rule.read_text()
    # sudo ignores rules that are writable by anyone or not root's; never in this machine's /etc.
    assert stat.S_IMODE(rule.stat().st_mode) == 0o440
    assert stat.S_IMODE(d.stat().st_mode) == 0o750
    assert not str(rule).startswith("/etc/")


def test_sshd_refuses_root_and_admits_only_the_login_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sshkeys.shell, "check", lambda argv, **_: "")  # no ssh-keygen: the key file is faked
    host = ClusterSpec(prefix="vm", subnet="10.72.0.0/24").hosts[0]
    (tmp_path / "hosts" / "vm01").mkdir(parents=True)
    (tmp_path / "hosts" / "vm01" / "ssh_host_ed25519_key").write_text("fake")
    sshkeys.ensure_host_key(host, tmp_path, "ops")
    conf = (tmp_path / "hosts" / "vm01" / "sshd_config").read_text().splitlines()
    assert {"PermitRootLogin no", "AllowUsers ops", "PasswordAuthentication no", "StrictModes yes"} <= set(conf)
    sshkeys.ensure_host_key(host, tmp_path, None)
    conf = (tmp_path / "hosts" / "vm01" / "sshd_config").read_text().splitlines()
    assert "PermitRootLogin prohibit-password" in conf
    assert not any(line.startswith("AllowUsers") for line in conf)


def test_a_key_under_a_world_writable_directory_is_refused_before_sshd_would(tmp_path: Path) -> None:
    # pytest's tmp_path lies under /tmp (mode 1777): sshd's StrictModes would reject the key there.
    key = tmp_path / "authorized_keys"
    key.write_text("ssh-ed25519 AAAA")
    with pytest.raises(PreconditionError, match="StrictModes") as err:
        login.check_key_path(key, "root")
    assert "/var/lib/pbs-harness" in err.value.hint
