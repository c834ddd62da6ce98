"""A teardown error of the harness's own baseline restore or leak check leaves an evidence folder like a
failed test's, and stays the error it was (plugin._teardown, plugin._check_leaks), over stand-ins:
FAKED hosts whose `run` answers `ps` and `tail` with fixed text and everything else with nothing, an
inventory with only the cluster's name, and baseline.restore replaced by what the test makes it do.
What it proves: the folder's files and their content for a restore that hung (final run 2 of
2026-11-28: `qmgr -c 'list hook'` did not finish within 120 s in _restore_configs, and left nothing),
for a restore that could not put the cluster back, and for a call-phase leak check that hung."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from pbs_harness.remote.transport import CommandResult
from pbs_harness.suite import baseline, outcome, plugin
from pbs_harness.suite.faults.log import FaultLog

HUNG = "`/opt/pbs/bin/qmgr -c 'list hook'` did not finish within 120s"
PS_TEXT = (
    "    PID    PPID STAT     ELAPSED WCHAN                COMMAND\n"
    "    812       1 Ssl        05:01 do_epoll_wait        /opt/pbs/sbin/pbs_server.bin\n"
)


class FakeHost:
    def __init__(self, name: str) -> None:
        self.name, self.recorders, self.commands = name, [], []

    def run(self, cmd: str, timeout: float = 0) -> CommandResult:
        self.commands.append(cmd)
        out = PS_TEXT if cmd.startswith("ps -eo") else "server log line\n" if cmd.startswith("tail ") else ""
        return CommandResult(self.name, cmd, 0, out, "")


class FakeCluster:
    def __init__(self) -> None:
        self.hosts = {n: FakeHost(n) for n in ("tr1", "tr2")}
        self.server = self.hosts["tr1"]
        self.pbs_home = Path("/var/spool/pbs")
        self.inventory = SimpleNamespace(
            kind=SimpleNamespace(cluster_name=lambda _vars: "tr"), server=SimpleNamespace(vars={}, name="tr1")
        )

    def __iter__(self):
        return iter(self.hosts.values())

    def bin(self, name: str) -> str:
        return f"/opt/pbs/bin/{name}"


class FakeNemesis:
    def __init__(self) -> None:
        self.log = FaultLog()

    def heal_all(self) -> list[str]:
        return []


def setup(tmp_path: Path, failed: bool = False):
    cluster = FakeCluster()
    item = SimpleNamespace(
        nodeid="ptl_tests/test_smoke.py::test_scatter",
        stash=pytest.Stash(),
        user_properties=[],
        get_closest_marker=lambda name: None,
    )
    if failed:
        item.stash[outcome.REPORTS_KEY] = {"call": SimpleNamespace(failed=True, longrepr="the body failed")}
    config = SimpleNamespace(stash=pytest.Stash(), getoption=lambda opt: str(tmp_path / "ev"))
    request = SimpleNamespace(node=item, config=config)
    pbs = SimpleNamespace(cluster=cluster)
    began = datetime.now() - timedelta(seconds=5)
    transcript = [(datetime.now(), CommandResult("tr1", "/opt/pbs/bin/qstat -f", 0, "the test's qstat\n", ""))]
    kw = {"baseline": "BASE", "nemesis": FakeNemesis(), "since": began, "transcript": transcript}
    return request, pbs, kw, tmp_path / "ev" / "ptl_tests_test_smoke.py_test_scatter"


def test_a_restore_that_hung_is_still_the_error_and_leaves_evidence_with_the_hosts_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def hang(*_a, **_k):
        raise TimeoutError(HUNG)

    monkeypatch.setattr(baseline, "restore", hang)
    request, pbs, kw, folder = setup(tmp_path)
    with pytest.raises(TimeoutError, match="did not finish within 120s"):
        plugin._teardown(request, pbs, **kw)
    failure = (folder / "failure.txt").read_text()
    assert plugin.TEARDOWN_ERROR in failure
    assert f"TimeoutError: {HUNG}" in failure
    transcript = (folder / "transcript.txt").read_text()
    assert "the test's qstat" in transcript
    assert transcript.rstrip().endswith(HUNG)  # the command that never ended, last
    for host in ("tr1", "tr2"):
        assert (folder / "hosts-ps" / f"{host}.txt").read_text() == PS_TEXT
    assert (folder / "server-log-tail.txt").read_text() == "server log line\n"
    assert any(c.startswith("tail -n 400 /var/spool/pbs/server_logs/") for c in pbs.cluster.server.commands)
    for name in ("qstat-jobs.json", "pbsnodes.json", "faults.txt", "timeline.txt", "index.html", "meta.json"):
        assert (folder / name).exists(), name
    assert ("evidence", str(folder)) in request.node.user_properties
    assert all(not h.recorders for h in pbs.cluster)  # nothing of the fixture's stays on the hosts


def test_a_restore_that_could_not_put_the_cluster_back_fails_and_leaves_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        baseline, "restore", lambda *_a, **_k: baseline.Restored(left=["hook rd_end still there"], leaks=[])
    )
    request, pbs, kw, folder = setup(tmp_path)
    with pytest.raises(pytest.fail.Exception, match="could not return the cluster to its baseline: hook rd_end"):
        plugin._teardown(request, pbs, **kw)
    failure = (folder / "failure.txt").read_text()
    assert plugin.TEARDOWN_ERROR in failure
    assert "hook rd_end still there" in failure
    assert not (folder / "hosts-ps").exists()  # not a hang: no process lists
    assert (folder / "timeline.txt").exists()


def test_a_clean_teardown_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(baseline, "restore", lambda *_a, **_k: baseline.Restored(left=[], leaks=[]))
    request, pbs, kw, folder = setup(tmp_path)
    plugin._teardown(request, pbs, **kw)
    assert not folder.exists()


def test_a_failed_test_whose_restore_hangs_keeps_one_folder_written_before_the_restore(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def hang(*_a, **_k):
        raise TimeoutError(HUNG)

    monkeypatch.setattr(baseline, "restore", hang)
    request, pbs, kw, folder = setup(tmp_path, failed=True)
    with pytest.raises(TimeoutError):
        plugin._teardown(request, pbs, **kw)
    failure = (folder / "failure.txt").read_text()
    assert "the body failed" in failure
    assert f"{plugin.TEARDOWN_ERROR}:\nTimeoutError: {HUNG}" in failure
    assert (folder / "hosts-ps" / "tr1.txt").read_text() == PS_TEXT
    assert request.node.user_properties.count(("evidence", str(folder))) == 1


def test_a_call_phase_leak_check_that_hung_is_raised_and_its_evidence_has_the_hosts_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def hang(*_a, **_k):
        raise TimeoutError(HUNG)

    monkeypatch.setattr(baseline, "clear_test_work", hang)
    monkeypatch.setattr(baseline, "restore", lambda *_a, **_k: baseline.Restored(left=[], leaks=[]))
    request, pbs, kw, folder = setup(tmp_path)
    request.node.stash[plugin.LEAK_CHECK_KEY] = (pbs, "BASE", kw["nemesis"])
    with pytest.raises(TimeoutError):
        plugin._check_leaks(request.node)  # type: ignore[arg-type]
    # The call phase failed on it (pytest's report), so teardown keeps the folder of a failed test.
    request.node.stash[outcome.REPORTS_KEY] = {"call": SimpleNamespace(failed=True, longrepr=f"TimeoutError: {HUNG}")}
    plugin._teardown(request, pbs, **kw)
    assert (folder / "hosts-ps" / "tr2.txt").read_text() == PS_TEXT
    assert (folder / "server-log-tail.txt").exists()
    assert (folder / "transcript.txt").read_text().rstrip().endswith(HUNG)


def test_evidence_that_cannot_be_written_never_replaces_the_teardown_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def hang(*_a, **_k):
        raise TimeoutError(HUNG)

    def broken(*_a, **_k):
        raise OSError("no space left on device")

    monkeypatch.setattr(baseline, "restore", hang)
    monkeypatch.setattr(plugin.collect, "capture_state", broken)
    request, pbs, kw, _folder = setup(tmp_path)
    with pytest.raises(TimeoutError, match="did not finish") as caught:
        plugin._teardown(request, pbs, **kw)
    assert caught.value.__notes__ == ["its evidence folder could not be written: OSError: no space left on device"]
