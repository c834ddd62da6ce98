"""hostproc's waits (sshd banner, processes gone after SIGKILL, cgroup frozen) end in UnreachableError
naming the host, as provider and the plugin expect. Nothing is booted: the probes are stand-ins."""

from __future__ import annotations

from pathlib import Path

import pytest

from pbs_harness.common.errors import UnreachableError
from pbs_harness.hosts.namespace import NamespaceHost
from pbs_harness.localcluster import hostproc, state
from pbs_harness.localcluster.containers import cgroups
from pbs_harness.localcluster.spec import ClusterSpec, HostSpec

HOST = HostSpec(name="tst01", ip="192.0.2.1", index=1)


@pytest.fixture(autouse=True)
def _state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path))


def _no_sshd(monkeypatch: pytest.MonkeyPatch, running: bool) -> None:
    def refuse(*_a: object, **_k: object) -> None:
        raise ConnectionRefusedError

    monkeypatch.setattr(hostproc.socket, "create_connection", refuse)
    monkeypatch.setattr(hostproc, "is_running", lambda host: running)


def test_wait_ssh_names_the_host_when_sshd_stays_silent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_sshd(monkeypatch, running=True)
    with pytest.raises(UnreachableError) as err:
        hostproc.wait_ssh(HOST, timeout=0.3)
    assert err.value.message == "host tst01 (192.0.2.1): sshd did not answer within 0s"
    assert err.value.hint == f"see {tmp_path / 'hosts' / 'tst01' / 'console.log'}"


def test_wait_ssh_stops_at_once_when_the_host_died(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_sshd(monkeypatch, running=False)
    with pytest.raises(UnreachableError, match="host tst01 died while booting"):
        hostproc.wait_ssh(HOST, timeout=30)


def namespace_host() -> NamespaceHost:
    st = state.ClusterState.from_spec(ClusterSpec(prefix="tst", subnet="192.168.71.0/24", host_count=1))
    return NamespaceHost.in_cluster(st, HOST, Path("/nonexistent"))


def test_crash_names_the_processes_that_survived(monkeypatch: pytest.MonkeyPatch) -> None:
    """FAKE: the cgroup reads (a process 4242 that never leaves its group) and os.kill."""
    killed: list[int] = []
    monkeypatch.setattr(cgroups, "set_frozen", lambda unit, frozen, label=None: None)
    monkeypatch.setattr(cgroups, "remove", lambda unit, keep_top=False: None)
    monkeypatch.setattr(cgroups, "pids", lambda unit: [4242])
    monkeypatch.setattr(cgroups.os, "kill", lambda pid, sig: killed.append(pid))
    monkeypatch.setattr(cgroups, "KILL_TIMEOUT", 0.2)
    with pytest.raises(UnreachableError) as err:
        namespace_host().crash()
    assert killed == [4242]
    assert err.value.message == "host tst01: processes survived SIGKILL: [4242]"


def test_crash_returns_once_the_processes_are_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    """FAKE: the cgroup reads (the process is gone at the third look) and os.kill."""
    left = [[4242], [4242], [4242], []]
    monkeypatch.setattr(cgroups, "set_frozen", lambda unit, frozen, label=None: None)
    monkeypatch.setattr(cgroups, "remove", lambda unit, keep_top=False: None)
    monkeypatch.setattr(cgroups, "pids", lambda unit: left.pop(0) if len(left) > 1 else left[0])
    monkeypatch.setattr(cgroups.os, "kill", lambda pid, sig: None)
    namespace_host().crash()


def test_wait_frozen_names_the_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FAKE: a v1 freezer hierarchy in tmp_path whose group stays FREEZING."""
    (tmp_path / "freezer").mkdir()
    monkeypatch.setattr(cgroups, "CGROUP_FS", tmp_path)
    monkeypatch.setattr(cgroups, "FREEZE_TIMEOUT", 0.2)
    group = cgroups.freezer_dir(HOST.name)
    group.mkdir(parents=True)
    (group / "cgroup.procs").write_text("4242\n")
    (group / "freezer.state").write_text("FREEZING\n")
    monkeypatch.setattr(Path, "write_text", lambda self, text: len(text))  # the kernel would change the state
    with pytest.raises(UnreachableError, match=r"^host tst01 did not freeze within 0.2s$"):
        namespace_host().pause()
