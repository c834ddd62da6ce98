"""systemd-nspawn containers in cgroups of their own
(pbs_harness.localcluster.containers.nspawn, pbs_harness.localcluster.containers.cgroups), against a FAKE
cgroup filesystem.

Faked: the cgroup filesystem — cgroups.CGROUP_FS points at a tmp folder laid out like the machine's
(cgroup v2: cgroup.controllers at the top; v1: freezer/, systemd/, unified/ hierarchies), whose files
the kernel would keep (cgroup.procs, freezer.state, cgroup.freeze) are plain files the test writes; and,
for kill_all, the kernel's signal delivery: os.kill is a recorder that takes the pid out of the fake
cgroup.procs, as the kernel does when a process dies. No container is started, no process signalled.
A real directory with files cannot be rmdir'ed as a cgroup can, so removal is checked on trees of
folders only (a cgroup's control files vanish with it).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from pbs_harness.common.errors import PreconditionError, UnreachableError
from pbs_harness.localcluster.containers import cgroups, nspawn

UNIT = "pbsh02"


def fake_cgroup_fs(root: Path, version: int) -> Path:
    if version == 2:
        root.mkdir()
        (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    else:
        for hierarchy in ("freezer", "systemd", "unified"):
            (root / hierarchy).mkdir(parents=True)
    return root


@pytest.fixture(params=[1, 2], ids=["cgroup-v1", "cgroup-v2"])
def cgroup_fs(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = fake_cgroup_fs(tmp_path / "cgroup", request.param)
    monkeypatch.setattr(cgroups, "CGROUP_FS", root)
    return root


def freeze_file(cgroup_fs: Path) -> Path:
    if (cgroup_fs / "cgroup.controllers").exists():
        return cgroup_fs / cgroups.GROUP / UNIT / "cgroup.freeze"
    return cgroup_fs / "freezer" / cgroups.GROUP / UNIT / "freezer.state"


def container(cgroup_fs: Path, procs: dict[str, list[int]]) -> None:
    """A running container's freezer group: cgroup.procs per subgroup ('' = the unit's own group)."""
    top = cgroups.freezer_dir(UNIT)
    for sub, pids in procs.items():
        (top / sub).mkdir(parents=True, exist_ok=True)
        (top / sub / "cgroup.procs").write_text("".join(f"{p}\n" for p in pids))
    freeze = freeze_file(cgroup_fs)
    freeze.write_text("THAWED\n" if freeze.name == "freezer.state" else "0\n")


def test_boot_argv_boots_systemd_in_the_hosts_own_network_namespace(tmp_path: Path) -> None:
    argv = nspawn.boot_argv(tmp_path / "rootfs", "pbsh02", "pbsh-pbsh02", extra=["--setenv=X=1"])
    assert argv[0] == nspawn.PROGRAM
    for arg in (
        "--boot",
        f"--directory={tmp_path / 'rootfs'}",
        "--machine=pbsh02",
        "--hostname=pbsh02",
        "--network-namespace-path=/run/netns/pbsh-pbsh02",
        "--capability=CAP_NET_ADMIN",  # the host's own iptables (partition tests)
        "--register=no",  # no systemd on this machine to register with
        "--keep-unit",  # the container's cgroups under the launcher's own (nspawn.py)
        "--resolv-conf=off",
        "--console=pipe",
    ):
        assert arg in argv
    assert argv[-1] == "--setenv=X=1"
    assert "--private-network" not in argv


def test_hierarchies_of_each_cgroup_layout(cgroup_fs: Path) -> None:
    dirs = cgroups.group_dirs(UNIT)
    if (cgroup_fs / "cgroup.controllers").exists():
        assert dirs == [cgroup_fs / "pbs-harness" / UNIT]
        assert cgroups.freezer_dir(UNIT) == cgroup_fs / "pbs-harness" / UNIT
    else:
        assert dirs == [cgroup_fs / h / "pbs-harness" / UNIT for h in ("freezer", "systemd", "unified")]
        assert cgroups.freezer_dir(UNIT) == cgroup_fs / "freezer" / "pbs-harness" / UNIT


def test_a_v1_machine_without_a_freezer_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "cgroup"
    (root / "systemd").mkdir(parents=True)
    monkeypatch.setattr(cgroups, "CGROUP_FS", root)
    with pytest.raises(PreconditionError) as err:
        cgroups.group_dirs(UNIT)
    assert "no cgroup freezer on this machine" in err.value.message
    assert "crash and pause need it" in err.value.hint


def test_pids_are_every_process_of_the_group_and_its_subgroups(cgroup_fs: Path) -> None:
    assert cgroups.pids(UNIT) == []  # no group: not running
    assert not cgroups.is_running(UNIT)
    sshd = "payload/system.slice/sshd.service"
    container(cgroup_fs, {"": [], "payload": [101, 102], sshd: [150], "supervisor": [99]})
    assert sorted(cgroups.pids(UNIT)) == [99, 101, 102, 150]
    assert cgroups.is_running(UNIT)


def test_frozen_and_thawed(cgroup_fs: Path) -> None:
    assert not cgroups.is_frozen(UNIT)  # no group
    container(cgroup_fs, {"payload": [101]})
    assert not cgroups.is_frozen(UNIT)
    cgroups.set_frozen(UNIT, True)
    assert cgroups.is_frozen(UNIT)
    assert freeze_file(cgroup_fs).read_text() in ("FROZEN", "1")
    cgroups.set_frozen(UNIT, False)
    assert not cgroups.is_frozen(UNIT)
    if freeze_file(cgroup_fs).name == "freezer.state":  # v1: a freeze under way counts as frozen
        freeze_file(cgroup_fs).write_text("FREEZING\n")
        assert cgroups.is_frozen(UNIT)


class FakeKernel:
    """Records each os.kill and, as the kernel would, takes a killed pid out of the fake cgroup.procs."""

    def __init__(self, cgroup_fs: Path, gone: frozenset[int] = frozenset(), immortal: frozenset[int] = frozenset()):
        self.cgroup_fs, self.gone, self.immortal = cgroup_fs, gone, immortal
        self.calls: list[tuple[int, int, bool]] = []  # pid, signal, frozen when sent

    def kill(self, pid: int, sig: int) -> None:
        self.calls.append((pid, sig, cgroups.is_frozen(UNIT)))
        if pid not in self.immortal:
            for procs in cgroups.freezer_dir(UNIT).rglob("cgroup.procs"):
                left = [p for p in procs.read_text().split() if int(p) != pid]
                procs.write_text("".join(f"{p}\n" for p in left))
        if pid in self.gone:
            raise ProcessLookupError(pid)


def test_kill_all_kills_every_process_while_frozen_then_thaws(cgroup_fs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    container(cgroup_fs, {"": [], "payload": [101, 102], "supervisor": [99]})
    kernel = FakeKernel(cgroup_fs, gone=frozenset({102}))  # 102 exits on its own meanwhile
    monkeypatch.setattr(os, "kill", kernel.kill)
    cgroups.kill_all(UNIT)
    # Each pid once, SIGKILL, sent while the group was frozen (none can fork or exit in between).
    assert sorted(kernel.calls) == [(pid, signal.SIGKILL, True) for pid in (99, 101, 102)]
    assert not cgroups.is_frozen(UNIT)
    assert cgroups.pids(UNIT) == []
    assert cgroups.freezer_dir(UNIT).is_dir()  # the unit's group stays for the next boot


def test_kill_all_of_a_stopped_container_touches_nothing(cgroup_fs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    container(cgroup_fs, {"payload": []})
    kernel = FakeKernel(cgroup_fs)
    monkeypatch.setattr(os, "kill", kernel.kill)
    before = freeze_file(cgroup_fs).read_text()
    cgroups.kill_all(UNIT)
    assert kernel.calls == []
    assert freeze_file(cgroup_fs).read_text() == before


def test_a_process_that_survives_sigkill_is_reported(cgroup_fs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    container(cgroup_fs, {"payload": [101, 102]})
    monkeypatch.setattr(os, "kill", FakeKernel(cgroup_fs, immortal=frozenset({102})).kill)
    with pytest.raises(UnreachableError, match=rf"{UNIT}: processes survived SIGKILL: \[102\]"):
        cgroups.kill_all(UNIT, timeout=0.3)


def make_tree(cgroup_fs: Path, unit: str) -> None:
    for top in cgroups.group_dirs(unit):
        for sub in ("payload/system.slice/sshd.service", "payload/init.scope", "supervisor"):
            (top / sub).mkdir(parents=True)


def test_remove_cgroups_keeps_the_units_group_when_asked(cgroup_fs: Path) -> None:
    make_tree(cgroup_fs, UNIT)
    cgroups.remove(UNIT, keep_top=True)
    for top in cgroups.group_dirs(UNIT):
        assert top.is_dir()
        assert list(top.iterdir()) == []


def test_remove_cgroups_removes_the_unit_and_pbs_harness_once_no_unit_is_left(cgroup_fs: Path) -> None:
    make_tree(cgroup_fs, UNIT)
    make_tree(cgroup_fs, "pbsh03")
    cgroups.remove(UNIT)
    for top in cgroups.group_dirs(UNIT):
        assert not top.exists()
        assert top.parent.is_dir()  # pbsh03 is still there
    cgroups.remove("pbsh03")
    for top in cgroups.group_dirs("pbsh03"):
        assert not top.parent.exists()
    cgroups.remove("pbsh04")  # never made: nothing to do, no error


def test_a_group_still_holding_processes_is_left_alone(cgroup_fs: Path) -> None:
    """A busy cgroup refuses rmdir (EBUSY); here, a folder with a file refuses it alike."""
    container(cgroup_fs, {"payload": [101]})
    cgroups.remove(UNIT)
    assert (cgroups.freezer_dir(UNIT) / "payload" / "cgroup.procs").read_text() == "101\n"


def test_a_container_starts_in_its_own_groups_with_its_console_in_the_log(cgroup_fs: Path, tmp_path: Path) -> None:
    """Real: a `sh` stands in for systemd-nspawn, started by nspawn.start; it joins the fake groups."""
    log = tmp_path / "console.log"
    proc = nspawn.start(UNIT, ["sh", "-c", "echo console line; echo to stderr >&2"], log)
    assert proc.wait(timeout=10) == 0
    assert log.read_text().splitlines() == ["console line", "to stderr"]
    for top in cgroups.group_dirs(UNIT):
        assert (top / "cgroup.procs").read_text() == str(proc.pid)
    assert not cgroups.is_frozen(UNIT)  # thawed before the start (a crash may have left it frozen)
