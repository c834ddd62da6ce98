"""Self-tests of the harness machinery on the real cluster: faults really act and really heal,
the baseline check catches leaks, failures leave evidence, Ctrl-C leaves no fault behind."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from pbs_harness.common import shell
from pbs_harness.common.waits import wait_until
from pbs_harness.hosts.ssh import SshHost
from pbs_harness.pbs.evidence.logs import mom_log
from pbs_harness.pbs.substates import RUNNING
from pbs_harness.suite import baseline as baseline_mod
from pbs_harness.suite import release_features
from pbs_harness.suite.faults import HostCrash, HostPartition, HostPause, host_of

pytestmark = [pytest.mark.acceptance, pytest.mark.harness, pytest.mark.ci]
CHILDREN = Path(__file__).parent / "children"


@pytest.fixture
def local(inventory):
    if not inventory.kind.runs_here:
        pytest.skip("these checks look at the hosts' processes and network from here: their kind runs elsewhere")
    return inventory


def local_host(cluster, name: str):
    """The host as its kind models it: its processes, address and network namespace as this machine
    sees them (namespace and system hosts alike)."""
    return host_of(cluster, name)


def ssh_side(cluster, name: str) -> SshHost:
    """The SSH kind's mechanisms on this host, whatever its own kind (to exercise them here)."""
    return SshHost(name, cluster.inventory.hosts[name].vars, cluster)


def sister(topology, n: int = 1) -> str:
    """The n-th plain execution host besides the server host (the test skips when there is none)."""
    return topology.plain_hosts(n)[n - 1]


def tcp_open(cluster, src: str, dst: str, port: int) -> bool:
    probe = f"timeout 3 bash -c '</dev/tcp/{dst}/{port}'"
    return cluster.hosts[src].run(probe, timeout=10).ok


def ssh_banner(address: str, timeout: float = 2) -> bool:
    try:
        with socket.create_connection((address, 22), timeout=timeout) as sock:
            sock.settimeout(timeout)
            return sock.recv(4).startswith(b"SSH")
    except OSError:
        return False


def process_states(host) -> set[str]:
    """One-letter states (R, S, D, T...) of the host's processes, seen from the controller."""
    states = set()
    for pid in host.pids():
        try:
            states.add(Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited between listing and reading (e.g. a short-lived sshd child)
    return states


def mom_started(cluster, host: str) -> str:
    return cluster.hosts[host].check("ps -o lstart= -C pbs_mom | head -1").stdout.strip()


@pytest.mark.needs_faults("partition")
def test_partition_blocks_traffic_and_heal_restores(local, cluster, nemesis, topology) -> None:
    target, peer = sister(topology, 2), sister(topology, 1)
    assert tcp_open(cluster, peer, target, 15002)
    host = local_host(cluster, target)
    fault = nemesis.partition(target)
    assert host.is_partitioned()
    assert not tcp_open(cluster, peer, target, 15002)
    # Outbound too: seen from inside the host's own network namespace (SSH to it is cut as well).
    server_ip = local_host(cluster, cluster.inventory.server.name).spec.ip
    outbound = shell.run(
        ["ip", "netns", "exec", host.spec.netns, "timeout", "3", "bash", "-c", f"</dev/tcp/{server_ip}/15001"]
    )
    assert not outbound.ok
    assert not ssh_banner(host.spec.ip)
    nemesis.heal(fault)
    assert tcp_open(cluster, peer, target, 15002)


@pytest.mark.needs_faults("crash", "boot")
def test_crash_kills_every_process_and_boot_brings_sshd_and_mom_back(local, cluster, pbs, nemesis, topology) -> None:
    target = sister(topology, 3)
    host = local_host(cluster, target)
    before = mom_started(cluster, target)
    fault = nemesis.crash_host(target)
    assert host.pids() == []
    assert not ssh_banner(host.spec.ip)
    # The server learns at once: the mom's connections closed with its processes.
    pbs.nodes.wait_state([target], "down", exact=False, timeout=30)
    nemesis.heal(fault)
    assert ssh_banner(host.spec.ip)
    pbs.nodes.wait_state([target], "free", timeout=60)
    assert mom_started(cluster, target) != before


@pytest.mark.needs_faults("pause")
def test_pause_freezes_and_resume_continues(local, cluster, nemesis, topology) -> None:
    target = sister(topology, 4)
    host = local_host(cluster, target)
    fault = nemesis.pause_host(target)
    # cgroup v1 freezer: frozen tasks show state D; sshd accepts TCP (kernel) but never answers.
    states = process_states(host)
    assert states == {"D"}, states
    assert not ssh_banner(host.spec.ip)
    nemesis.heal(fault)
    assert ssh_banner(host.spec.ip)
    # Thawing is asynchronous: each task leaves the frozen (D) state when the kernel next runs it.
    wait_until(lambda: process_states(host), lambda got: "D" not in got, timeout=10, describe="no task frozen (D)")


def test_baseline_check_catches_leaked_node_state_and_server_attribute(pbs, baseline, topology) -> None:
    node = sister(topology, 1)
    pbs.nodes.offline(node, comment="leaked by test")
    pbs.server.set({"scheduler_iteration": 599})
    leaked = baseline_mod.diff(baseline, baseline_mod.take(pbs))
    assert any(line.startswith(f"vnode {node} state") for line in leaked), leaked
    assert any(line.startswith("server scheduler_iteration") for line in leaked), leaked
    assert baseline_mod.restore(pbs, baseline) == baseline_mod.Restored(left=[], leaks=[])


def child_pytest(test_file: Path, tmp_path: Path, inventory, **env: str) -> subprocess.Popen:
    argv = [
        sys.executable, "-m", "pytest", str(test_file), "-p", "pbs_harness.suite.plugin",
        "--inventory", str(inventory.path), "--evidence-dir", str(tmp_path / "evidence"),
        "-o", "addopts=", "-p", "no:cacheprovider", "-q", f"--rootdir={tmp_path}",
    ]  # fmt: skip
    return subprocess.Popen(
        argv,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=Path(__file__).parent.parent,
    )


def test_failing_test_leaves_an_evidence_folder(inventory, tmp_path) -> None:
    child = child_pytest(CHILDREN / "child_failing.py", tmp_path, inventory)
    out, _ = child.communicate(timeout=300)
    assert child.returncode == 1, out
    # One folder per failed test; beside it the session's own fault log (the heal of every host's
    # leftovers at session start, hosts' kinds through the nemesis), a file, not a test's evidence.
    folders = [p for p in (tmp_path / "evidence").iterdir() if p.is_dir()]
    assert len(folders) == 1, out
    assert (tmp_path / "evidence" / "session-setup-faults.txt").is_file(), out
    folder = folders[0]
    assert "deliberately-wrong" in (folder / "failure.txt").read_text()
    assert "qsub" in (folder / "transcript.txt").read_text()
    assert "Jobs" in (folder / "qstat-jobs.json").read_text()
    server_log = folder / "logs" / inventory.server.name / "server.log"
    assert "Job Queued" in server_log.read_text()
    assert (folder / "accounting.txt").read_text().strip(), "no accounting records of the test window"
    assert str(folder) in out  # the run names where the evidence is


@pytest.mark.needs_faults("partition")
def test_ctrl_c_during_a_partition_leaves_no_partition(local, cluster, tmp_path, topology) -> None:
    target = sister(topology, 2)
    ready = tmp_path / "ready"
    child = child_pytest(
        CHILDREN / "child_interrupted.py", tmp_path, local, PBSH_CHILD_TARGET=target, PBSH_CHILD_READY=str(ready)
    )
    try:
        wait_until(ready.exists, bool, timeout=120, describe="child test partitioned its host")
        assert local_host(cluster, target).is_partitioned()
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=180)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 2, out  # pytest's exit code for an interrupted run
    assert not local_host(cluster, target).is_partitioned(), out


def test_a_killed_run_leaves_the_next_session_at_the_declared_baseline(inventory, pbs, tmp_path) -> None:
    """A session killed with SIGKILL midway (as a worker crash or a timeout that kills the process)
    runs no teardown; the next session repairs what it left, says so, and a pbs_server restart then
    brings back no reserve_retry_init from the server's database (pbs_harness.suite.drift)."""
    ready = tmp_path / "ready"
    killed, following_dir = tmp_path / "killed", tmp_path / "next"
    killed.mkdir(), following_dir.mkdir()
    child = child_pytest(CHILDREN / "child_killed.py", killed, inventory, PBSH_CHILD_READY=str(ready))
    try:
        wait_until(
            lambda: ready.exists() or child.poll() is not None,
            bool,
            timeout=120,
            describe="child test left its leftovers",
        )
        running = child.poll() is None
        child.kill()
        out, _ = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert running, f"the child ended before it was killed: {out}"
    host = ready.read_text().strip()
    status = pbs.server.status()
    assert (status.get("reserve_retry_init"), status.get("reserve_retry_time")) == (None, 10), status

    following = child_pytest(CHILDREN / "child_next_session.py", following_dir, inventory)
    out, _ = following.communicate(timeout=600)
    assert following.returncode == 0, out
    repairs = " ".join(out.split()).split("BaselineRepairWarning: ")[1:]
    expected = [
        "at session start: reservations R",
        "at session start: server reserve_retry_time = 10 (declared: unset): reset",
        f"at session start: vnode {host} offline (declared: online): offline cleared",
        f"at session start: vnode {host} priority = 100 (declared: unset): unset",
        "at session start: hook pbsh_leftover (not declared): deleted",
        f"at session start: mom config of {host} (+'$max_check_poll 99'): put back",
    ]
    missing = [e for e in expected if not any(r.startswith(e) for r in repairs)]
    assert not missing, f"repairs not reported: {missing}; reported: {repairs}"

    pbs.server.restart(timeout=90)
    status = pbs.server.status()
    assert (status.get("reserve_retry_init"), status.get("reserve_retry_time")) == (None, None), status


def test_ssh_side_partition_spares_the_harness_session(cluster, nemesis, topology) -> None:
    """The partition used on inventories that are not the local cluster, exercised here."""
    target, peer = sister(topology, 3), sister(topology, 1)
    fault = nemesis.start(HostPartition(cluster, target, backend=ssh_side(cluster, target)))
    assert not tcp_open(cluster, peer, target, 15002)
    assert cluster.hosts[target].run("true").ok  # our own session still reaches it
    assert not cluster.hosts[target].run(f"timeout 3 bash -c '</dev/tcp/{cluster.server.name}/15001'").ok
    nemesis.heal(fault)
    assert tcp_open(cluster, peer, target, 15002)


def test_ssh_side_pause_and_kill_of_pbs_daemons(cluster, pbs, nemesis, topology) -> None:
    target = sister(topology, 4)
    host = cluster.hosts[target]
    fault = nemesis.start(HostPause(cluster, target, backend=ssh_side(cluster, target)))
    paused = host.check("ps -o stat= -C pbs_mom").stdout.split()
    assert paused, "no pbs_mom on the host"
    assert all(stat.startswith("T") for stat in paused), paused
    nemesis.heal(fault)
    resumed = host.check("ps -o stat= -C pbs_mom").stdout.split()
    assert resumed, "no pbs_mom on the host"
    assert not any(stat.startswith("T") for stat in resumed), resumed
    fault = nemesis.start(HostCrash(cluster, target, backend=ssh_side(cluster, target)))
    assert not host.run(["pgrep", "-x", "pbs_mom"]).ok
    pbs.nodes.wait_state([target], "down", exact=False, timeout=60)
    nemesis.heal(fault)
    pbs.nodes.wait_state([target], "free", timeout=60)


def test_transport_returns_whole_outputs(cluster, topology) -> None:
    """Regression: sshd may send the exit status before the last output; the transport waits for EOF."""
    host = cluster.hosts[sister(topology, 1)]
    for _ in range(20):
        res = host.run("head -c 300000 /dev/zero | base64 -w0; echo; echo done >&2")
        assert len(res.stdout) == 400001
        assert res.stderr == "done\n"


def test_reject_hook_fails_the_start_on_the_chosen_sister_until_healed(cluster, pbs, nemesis, topology) -> None:
    target = sister(topology, 2)
    since = datetime.now() - timedelta(seconds=1)
    fault = nemesis.reject_hook("execjob_begin", (target,), how="reject")
    job_id = pbs.jobs.submit(
        user=topology.users.owner,
        select=f"1:ncpus=1:host={cluster.server.name}+1:ncpus=1:host={target}",
        place="scatter",
        command=["/bin/sleep", "60"],
    )
    mom_log(cluster, target).expect(f"pbs-harness fault hook: reject on {target}", since, timeout=60)
    # Held back by the fault: the job exists and has not reached running (42).
    held = pbs.jobs.status(job_id)
    assert held, f"job {job_id} is unknown to the server"
    assert held["substate"] != RUNNING, held
    nemesis.heal(fault)
    assert "pbsh_fault" not in " ".join(pbs.hooks.names())
    pbs.jobs.wait(job_id, job_state="R", substate=RUNNING, timeout=120)


@pytest.mark.parametrize("name", sorted(release_features.FEATURES))
def test_feature_probe_agrees_with_the_source_reading(pbs, name: str) -> None:
    """Each live probe of pbs_harness.suite.release_features finds the feature exactly when this build's
    version has it by the source reading (docs/releases.md): a probe blind to a feature the release
    has would quietly turn tests into "not in this release". (Every run checks all probes at once
    before its first cluster test, `release_checked`; this test shows each probe's own verdict.)
    The hook probe's scratch hook is gone again (the baseline check after the test would name it)."""
    feature = release_features.FEATURES[name]
    version = str(pbs.server.status()["pbs_version"])
    assert release_features.probe(pbs, feature) is release_features.expected(feature, version), (feature, version)


@pytest.mark.parametrize("kind", ["hook_event", "server_attribute", "command"])
def test_feature_probe_says_no_to_what_no_release_has(pbs, kind: str) -> None:
    missing = release_features.Feature("pbsh_none", "nothing", kind, "pbsh_no_such_thing", "")
    assert release_features.probe(pbs, missing) is False
