"""`pbs-harness test` is never green by accident (docs/bad-input.md, README exit codes).

- The verdict (pbs_harness.suite.testrun.judge) maps pytest's exit codes and the run's results onto the
  harness's table; tested on recorded outcomes.
- Through the CLI: hosts that do not answer, hosts without OpenPBS, pytest usage errors, nothing
  selected and everything skipped each give their code, before or after a real child pytest.
  "Hosts" are loopback addresses: a closed port (refused), or a port this test listens on and never
  answers (a silent SSH server). Where a host must look healthy, the SSH command that looks for the
  OpenPBS programs is FAKED (precheck.ssh_probe); everything else is real.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest
import yaml

from pbs_harness.common import errors
from pbs_harness.remote.inventory import Inventory, InventoryHost
from pbs_harness.suite import precheck, testrun
from pbs_harness.suite.availability import unreachable_reason
from tests.unit.badinput import ROOT, assert_refused, fake_ansible_inventory, host_vars, listing, run_cli, snapshot
from tests.unit.loopback import loopback_port


def results(*outcomes: str, reason: str = "Skipped: needs 3 moms, the cluster has 2") -> dict:
    tests = [{"nodeid": f"t{i}", "outcome": o} for i, o in enumerate(outcomes)]
    for t in tests:
        if t["outcome"] == "skipped":
            t["skip_reason"] = reason
    return {"tests": tests}


@pytest.mark.parametrize(
    ("rc", "recorded", "code"),
    [
        (0, results("passed", "skipped"), errors.EXIT_OK),
        (0, results("xfailed"), errors.EXIT_OK),
        (1, results("failed", "passed"), errors.EXIT_FAILED),
        (2, None, errors.EXIT_INTERRUPTED),
        (-2, None, errors.EXIT_INTERRUPTED),  # killed by SIGINT
        (-15, None, errors.EXIT_INTERRUPTED),  # killed by SIGTERM
        (-9, None, errors.EXIT_FAILED),
        (3, None, errors.EXIT_FAILED),  # pytest internal error
        (4, None, errors.EXIT_USAGE),
        (5, None, errors.EXIT_NOTHING_TESTED),
        (0, None, errors.EXIT_NOTHING_TESTED),  # no results written: cannot tell that anything ran
        (0, results(), errors.EXIT_NOTHING_TESTED),
        (0, results("skipped", "skipped"), errors.EXIT_NOTHING_TESTED),
        (0, results("skipped", reason="Skipped: cluster not reachable (s1 ...): check"), errors.EXIT_UNREACHABLE),
        (
            0,
            results("skipped", reason="Skipped: OpenPBS is not installed (/opt/pbs/bin/qstat)"),
            errors.EXIT_PRECONDITION,
        ),
    ],
)
def test_verdict_of_a_run(rc: int, recorded: dict | None, code: int) -> None:
    verdict = testrun.judge(rc, recorded)
    assert verdict.code == code, verdict


@pytest.mark.parametrize(
    ("signalled", "code"), [(False, errors.EXIT_FAILED), (True, errors.EXIT_INTERRUPTED)], ids=["-x", "ctrl-c"]
)
def test_stopped_by_maxfail_is_a_failure_not_an_interrupt(signalled: bool, code: int) -> None:
    """pytest-xdist ends a run that -x stopped as "interrupted" (2); only a signal the harness passed on is."""
    verdict = testrun.judge(testrun.PYTEST_INTERRUPTED, results("failed", "passed"), signalled=signalled)
    assert verdict.code == code, verdict


def test_all_skipped_names_the_reasons() -> None:
    verdict = testrun.judge(0, results("skipped", "skipped", "skipped"))
    assert verdict.message == (
        "nothing was tested: all 3 selected tests were skipped (3 x needs 3 moms, the cluster has 2)"
    )
    assert "skip reasons say what the cluster lacks" in verdict.hint


def test_collect_only_needs_no_test_run() -> None:
    assert testrun.judge(0, None, informational=True).code == errors.EXIT_OK


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback TCP port that accepts connections and never says anything (an SSH server that hangs)."""
    with socket.create_server(("127.0.0.1", 0), backlog=512) as server:
        yield server.getsockname()[1]


@pytest.fixture
def greeting_port() -> Iterator[int]:
    """A loopback port whose server sends each connection an SSH greeting line and then says nothing more:
    it passes the reachability probe (which reads the greeting), so that the test reaches the next step."""
    with loopback_port("ssh") as port:
        yield port


def vm_inventory(monkeypatch: pytest.MonkeyPatch, tmp: Path, port: int, *, moms: int = 2) -> Path:
    """FAKE ansible-inventory output: VMs s1 (server) and m1..mN, all on loopback `port`."""
    names = ["s1"] + [f"m{i}" for i in range(1, moms)]
    data = listing(server=["s1"], moms=names, hostvars={n: host_vars("127.0.0.1", port) for n in names})
    return fake_ansible_inventory(monkeypatch, tmp, data)


def fake_probe(missing: dict[str, list[str]]):
    """FAKE of the SSH command that lists which OpenPBS programs a host lacks."""

    def probe(host: InventoryHost, command: str, timeout: float) -> str:
        assert "test -x" in command
        return "\n".join(missing.get(host.name, []))

    return probe


def test_unreachable_vms_fail_fast_without_local_advice(
    tmp_root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's case: `pbs-harness test -i <VMs that do not answer> -m smoke` used to exit 0."""
    hosts = vm_inventory(monkeypatch, tmp_root.parent, 9)
    kept = snapshot(tmp_root / "reports")
    start = time.monotonic()
    rc, out = run_cli(["test", "-i", str(hosts), "-m", "smoke"], capsys)
    assert time.monotonic() - start < 30
    assert_refused(
        rc, out, errors.EXIT_UNREACHABLE, "s1 (127.0.0.1:9): Connection refused", "m1 (127.0.0.1:9)",
        "fix: check that these hosts are running",
    )  # fmt: skip
    assert "pbs-harness up" not in out
    assert snapshot(tmp_root / "reports") == kept  # pytest never started: the last run's reports stand


def wait_for_ssh_threads(within: float) -> None:
    """Let the SSH transports the probe gave up on end (by their own banner timeout) inside this test."""
    deadline = time.monotonic() + within
    while any(isinstance(t, paramiko.Transport) for t in threading.enumerate()):
        assert time.monotonic() < deadline, "SSH transports outlived their timeout"
        time.sleep(0.1)


def test_silent_ssh_on_many_hosts_is_bounded(silent_port: int, caplog: pytest.LogCaptureFixture) -> None:
    """60 hosts whose SSH port accepts and never answers: the real SSH layer gives up on all at once.
    paramiko's own log of each failed banner is left out, as the CLI leaves it out (see below)."""
    caplog.set_level(logging.CRITICAL, logger="paramiko")
    names = [f"h{i:02d}" for i in range(60)]
    hosts = {n: InventoryHost(n, host_vars("127.0.0.1", silent_port), frozenset()) for n in names}
    inv = Inventory(Path("vms"), hosts, {"pbs_server": ["h00"], "pbs_moms": names})
    start = time.monotonic()
    with pytest.raises(errors.UnreachableError) as err:
        precheck.check_openpbs_remote(inv, within=3)
    assert time.monotonic() - start < 10
    assert all(f"{n} (127.0.0.1:{silent_port})" in err.value.message for n in names)
    assert "check ansible_user, ansible_ssh_private_key_file and the pinned host keys" in err.value.hint
    assert "pbs-harness up" not in err.value.hint
    wait_for_ssh_threads(10)


@pytest.fixture
def rude_port() -> Iterator[int]:
    """A loopback port whose server accepts each connection and closes it at once (no SSH banner)."""
    with loopback_port("close") as port:
        yield port


def test_ssh_refused_through_the_command_prints_no_traceback(tmp_root: Path, rude_port: int) -> None:
    """The real command in its own process, a real inventory file and ansible-inventory, the real SSH
    layer: paramiko logs a traceback for each dropped connection, and none of it reaches the user."""
    host = {"ansible_host": "127.0.0.1", "ansible_port": rude_port, "ansible_user": "root"}
    doc = {"all": {"children": {"pbs_server": {"hosts": {"s1": host}}, "pbs_moms": {"hosts": {"s1": None}}}}}
    inv = tmp_root.parent / "vms.yml"
    inv.write_text(yaml.safe_dump(doc))
    proc = subprocess.run(
        [sys.executable, "-m", "pbs_harness", "test", "-i", str(inv), "-m", "smoke"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=dict(os.environ),
        timeout=60,
    )
    out = proc.stdout + proc.stderr
    # The reachability probe reads the SSH greeting (issue #34): the dropped connection is named there,
    # before any SSH login is tried.
    assert_refused(
        proc.returncode,
        out,
        errors.EXIT_UNREACHABLE,
        f"s1 (127.0.0.1:{rude_port}): the port accepted the connection and closed it without an SSH greeting",
    )


def test_openpbs_missing_on_the_vms(
    tmp_root: Path, greeting_port: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hosts = vm_inventory(monkeypatch, tmp_root.parent, greeting_port)
    missing = {"s1": ["/opt/pbs/sbin/pbs_server.bin", "/opt/pbs/sbin/pbs_mom"], "m1": ["/opt/pbs/sbin/pbs_mom"]}
    monkeypatch.setattr(precheck, "ssh_probe", fake_probe(missing))
    rc, out = run_cli(["test", "-i", str(hosts)], capsys)
    assert_refused(
        rc, out, errors.EXIT_PRECONDITION,
        "OpenPBS is not installed on: m1 (missing /opt/pbs/sbin/pbs_mom); "
        "s1 (missing /opt/pbs/sbin/pbs_server.bin, /opt/pbs/sbin/pbs_mom)",
        f"fix: deploy it first: pbs-harness deploy -i {hosts}",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("pytest_args", "code", "says"),
    [
        (["-k", "no_such_test_anywhere"], errors.EXIT_NOTHING_TESTED, "nothing was tested: no test was collected"),
        (["--no-such-pytest-option"], errors.EXIT_USAGE, "pytest refused the command line"),
    ],
    ids=["nothing-selected", "pytest-usage-error"],
)
def test_pytest_codes_through_the_cli(
    pytest_args: list[str],
    code: int,
    says: str,
    *,
    tmp_root: Path,
    greeting_port: int,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A real child pytest on the real suites, against VMs that pass the checks (FAKE SSH probe)."""
    hosts = vm_inventory(monkeypatch, tmp_root.parent, greeting_port)
    monkeypatch.setattr(precheck, "ssh_probe", fake_probe({}))
    rc, out = run_cli(["test", "-i", str(hosts), *pytest_args], capfd)
    assert_refused(rc, out, code, says)


@pytest.mark.parametrize(
    ("pytest_args", "says", "fix"),
    [
        (["-m", "smok"], "-m 'smok': smok is not a marker the suites register (did you mean smoke?), so it would "
         "select no test", "fix: use the suites' markers: acceptance, "),
        (["-m", "ramp_down and destructiv"], "destructiv is not a marker the suites register", "markers"),
        (["ptl_tests/ramp_dwn"], "ptl_tests/ramp_dwn: ", "fix: name a test file or folder of the checkout"),
        (["--junitxml", "mine.xml"], "--junitxml: pbs-harness test gives pytest reports/junit.xml", "leave --junitxml"),
        (["-n", "2"], "-n: pbs-harness test gives pytest one pytest-xdist worker per cluster", "one -i per cluster"),
    ],
    ids=["unknown-marker", "unknown-marker-in-expression", "missing-path", "junitxml", "workers"],
)  # fmt: skip
def test_a_line_the_run_would_not_take_is_refused_before_any_host(
    pytest_args: list[str],
    says: str,
    fix: str,
    *,
    tmp_root: Path,
    greeting_port: int,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #34: `pbs-harness test -m typo` on hosts that pass every check ran the whole way to pytest's "no
    tests collected" (exit 5). Plain `test` now judges its pytest line as `test --judge-only` does, before any
    host is probed (the SSH probe here fails the test if it is called) and before pytest starts."""
    hosts = vm_inventory(monkeypatch, tmp_root.parent, greeting_port)
    probed: list[str] = []
    monkeypatch.setattr(precheck, "ssh_probe", lambda host, command, timeout: probed.append(host.name) or "")
    kept = snapshot(tmp_root / "reports")
    rc, out = run_cli(["test", "-i", str(hosts), *pytest_args], capfd)
    assert_refused(rc, out, errors.EXIT_USAGE, says, fix)
    assert probed == []
    assert "cluster under test" not in out  # the inventory was not even loaded
    assert snapshot(tmp_root / "reports") == kept


SKIPPING_SUITE = """
import pytest

def test_needs_more_hosts():
    pytest.skip("needs 3 moms, the cluster has 2")
"""


def test_every_test_skipped_is_not_green(
    tmp_root: Path, greeting_port: int, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real child pytest whose only test skips: pytest says 0, the harness says nothing was tested."""
    hosts = vm_inventory(monkeypatch, tmp_root.parent, greeting_port)
    monkeypatch.setattr(precheck, "ssh_probe", fake_probe({}))
    suite = tmp_root.parent / "suite" / "test_skipping.py"
    suite.parent.mkdir()
    suite.write_text(SKIPPING_SUITE)
    plugins = ["-p", "pbs_harness.suite.plugin", "-p", "pbs_harness.conformance.recorder", "-p", "no:cacheprovider"]
    rc, out = run_cli(["test", "-i", str(hosts), *plugins, str(suite)], capfd)
    assert_refused(
        rc, out, errors.EXIT_NOTHING_TESTED,
        "nothing was tested: all 1 selected tests were skipped (1 x needs 3 moms, the cluster has 2)",
    )  # fmt: skip


def test_local_inventory_without_a_cluster(tmp_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = run_cli(["test", "-m", "smoke"], capsys)
    assert_refused(rc, out, errors.EXIT_PRECONDITION, "the local cluster is not up", "fix: bring it up first")


def test_plugin_skip_reason_for_vms_never_says_up() -> None:
    """`make test` runs pytest directly: its skip reason for VMs that do not answer names the inventory."""
    hosts = {"s1": InventoryHost("s1", host_vars("127.0.0.1", 9), frozenset())}
    inv = Inventory(Path("/srv/vms.yml"), hosts, {"pbs_server": ["s1"], "pbs_moms": ["s1"]})
    reason = unreachable_reason(inv)
    assert reason is not None
    assert reason.startswith(testrun.SKIP_UNREACHABLE)
    assert "ansible_host/ansible_port in /srv/vms.yml" in reason
    assert "pbs-harness up" not in reason


FAILING_SUITE = """
import pytest

@pytest.mark.parametrize("n", range(6))
def test_one_of_six_fails(n):
    assert n != 0, "the first case fails"
"""


@pytest.mark.parametrize("clusters", [1, 2], ids=["serial", "xdist"])
def test_exitfirst_stopping_at_a_failure_exits_1(
    clusters: int,
    *,
    tmp_root: Path,
    greeting_port: int,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A real child pytest (with two -i: pytest-xdist, -n 2, as `make acceptance` runs) stopped by -x at a
    failure: exit 1 and "tests failed", never 130 (#23 item 12: xdist reports -x as an interruption). The same
    inventory twice: the suite contacts no host."""
    hosts = vm_inventory(monkeypatch, tmp_root.parent, greeting_port)
    monkeypatch.setattr(precheck, "ssh_probe", fake_probe({}))
    suite = tmp_root.parent / "suite" / "test_failing.py"
    suite.parent.mkdir()
    suite.write_text(FAILING_SUITE)
    plugins = ["-p", "pbs_harness.suite.plugin", "-p", "pbs_harness.conformance.recorder", "-p", "no:cacheprovider"]
    # The suites' conftest registers the workers' plugins (--worker-inventory); this suite has none.
    plugins += ["-p", "pbs_harness.suite.parallel.binding", "-p", "pbs_harness.suite.parallel.controller"]
    rc, out = run_cli(["test", *["-i", str(hosts)] * clusters, *plugins, "-x", str(suite)], capfd)
    assert_refused(rc, out, errors.EXIT_FAILED, "pbs-harness: tests failed: ", "1 failed")
