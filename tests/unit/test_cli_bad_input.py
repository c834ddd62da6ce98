"""Bad input through the CLI (docs/bad-input.md): arguments, the environment, report inputs.

Each test runs `pbs-harness ...` (cli.main, in this process) and checks the table's exit code, a
message naming what is wrong and the fix, no traceback, and that nothing kept was touched. The
local-cluster rows use a throwaway state directory (PBS_HARNESS_STATE_DIR) and stop before any
namespace, bridge or mount: where a bug could go further, the next step is replaced by a tripwire
that fails the test. Fakes, where used, are named in the test: canned `ip -j` output, os.geteuid(),
a PATH without a program.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pbs_harness.common import errors, shell
from pbs_harness.deploy import playbook as deploy
from pbs_harness.localcluster import network, preflight, provider
from pbs_harness.localcluster.spec import ClusterSpec
from pbs_harness.remote import inventory
from tests.unit.badinput import (
    ROOT,
    assert_refused,
    fake_ansible_inventory,
    listing,
    run_cli,
    snapshot,
    tripwire,
)
from tests.unit.loopback import loopback_port

USAGE, PRECONDITION = errors.EXIT_USAGE, errors.EXIT_PRECONDITION


def write_state(state_dir: Path, subnet: str = "10.72.0.0/24", hosts: int = 3) -> None:
    state_dir.mkdir(parents=True)
    record = {"subnet": subnet, "host_count": hosts, "prefix": "pbsh", "created_paths": []}
    (state_dir / "state.json").write_text(json.dumps(record))


# --- command-line arguments ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["up", "--hosts", "0"], "argument --hosts: 0 is out of range: use between 1 and 32 hosts"),
        (["cluster", "up", "--hosts", "33"], "argument --hosts: 33 is out of range: use between 1 and 32 hosts"),
        (["cluster", "up", "--hosts", "six"], "argument --hosts: 'six' is not a whole number of hosts (1 to 32)"),
    ],
)
def test_host_count_out_of_range(
    argv: list[str], says: str, isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_state(isolated / "state")
    kept = snapshot(isolated / "state")
    monkeypatch.setattr(provider, "up", tripwire("bring a cluster up"))
    assert_refused(*run_cli(argv, capsys), USAGE, says)
    assert snapshot(isolated / "state") == kept


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["deploy", "--connect-timeout", "-5"], "argument --connect-timeout: -5 is not a positive number of seconds"),
        (["verify", "--connect-timeout", "0"], "argument --connect-timeout: 0 is not a positive number of seconds"),
        (["deploy", "--connect-timeout", "nan"], "argument --connect-timeout: nan is not a positive number"),
        (["deploy", "--connect-timeout", "soon"], "argument --connect-timeout: 'soon' is not a number of seconds"),
    ],
)
def test_connect_timeout_must_be_positive(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert_refused(*run_cli(argv, capsys), USAGE, says)


def test_connect_timeout_through_the_real_entry_point() -> None:
    """The installed command's own process: usage, message and exit code 2, and no traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", "pbs_harness", "deploy", "--connect-timeout", "-5"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == USAGE
    assert "-5 is not a positive number of seconds" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("subnet", "says"),
    [
        ("10.71.0.1/24", "'10.71.0.1/24' is not an IPv4 network with its host bits zero"),
        ("8.8.8.0/24", "8.8.8.0/24 is not a private range"),
        ("garbage", "'garbage' is not an IPv4 network"),
        # Python calls these "private" too; the README's private /24 is RFC 1918's, one /24 of it.
        ("127.0.0.0/24", "127.0.0.0/24 is not a private range: use a /24 in 10/8, 172.16/12 or 192.168/16"),
        ("169.254.0.0/24", "169.254.0.0/24 is not a private range"),
        ("0.0.0.0/24", "0.0.0.0/24 is not a private range"),
        ("10.0.0.0/8", "10.0.0.0/8 is a /8: the local cluster takes one private /24, such as 10.0.0.0/24"),
        ("192.168.0.0/16", "192.168.0.0/16 is a /16: the local cluster takes one private /24"),
        ("10.71.0.0/28", "10.71.0.0/28 is a /28: the local cluster takes one private /24, such as 10.71.0.0/24"),
    ],
)
def test_bad_subnet(
    subnet: str, says: str, isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_state(isolated / "state")
    kept = snapshot(isolated / "state")
    monkeypatch.setattr(provider, "up", tripwire("bring a cluster up"))
    for argv in (["cluster", "up", "--subnet", subnet], ["up", "--subnet", subnet, "--hosts", "6"]):
        assert_refused(*run_cli(argv, capsys), USAGE, "argument --subnet", says)
    assert snapshot(isolated / "state") == kept


def test_unknown_deploy_tag(capsys: pytest.CaptureFixture[str]) -> None:
    from pbs_harness.cli.common import known_tags
    from pbs_harness.common import project

    rc, out = run_cli(["deploy", "--tags", "install,instal"], capsys)
    assert_refused(rc, out, USAGE, "unknown tag(s) instal", "use " + ", ".join(sorted(known_tags(project.root()))))


@pytest.mark.parametrize("argv", [["cluster", "explode"], ["deploy", "--bogus"], [], ["cluster", "crash"]], ids=str)
def test_unknown_verb_or_option(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = run_cli(argv, capsys)
    assert_refused(rc, out, USAGE, "usage: pbs-harness")


def test_unknown_options_go_to_pytest_only_for_test(monkeypatch: pytest.MonkeyPatch) -> None:
    from pbs_harness import cli

    seen: list[list[str]] = []
    monkeypatch.setattr(cli, "cmd_test", lambda args: seen.append(args.pytest_args) or 0)
    assert cli.main(["test", "-q", "-k", "smoke"]) == 0
    assert seen == [["-q", "-k", "smoke"]]
    assert cli.main(["deploy", "--bogus"]) == USAGE


# --- the environment -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["cluster", "up"],
        ["up"],
        ["cluster", "down"],
        ["down"],
        ["cluster", "status"],
        ["status"],
        ["cluster", "crash", "pbsh01"],
        ["cluster", "ssh", "pbsh01"],
    ],
    ids=" ".join,
)
def test_cluster_verbs_need_root(
    argv: list[str], isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAKE os.geteuid() of an ordinary user (uid 1000)."""
    write_state(isolated / "state")
    kept = snapshot(isolated / "state")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    rc, out = run_cli(argv, capsys)
    assert_refused(rc, out, PRECONDITION, "the local cluster needs root", "fix: run it as root")
    assert snapshot(isolated / "state") == kept


def test_state_dir_is_a_file(
    isolated: Path, as_root: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state = isolated / "state"
    state.write_text("a file a user keeps\n")
    monkeypatch.setattr(provider, "up", tripwire("bring a cluster up"))
    rc, out = run_cli(["cluster", "up"], capsys)
    assert_refused(
        rc, out, PRECONDITION,
        f"the state directory {state} (from the environment variable PBS_HARNESS_STATE_DIR, which names the local "
        "cluster's state directory) is not a directory",
        "fix: give a directory root can write (each local cluster keeps its record in a state directory of its own, "
        "named by --state-dir DIR or by the environment variable PBS_HARNESS_STATE_DIR=DIR",
    )  # fmt: skip
    assert state.read_text() == "a file a user keeps\n"


def test_state_dir_cannot_be_created(
    isolated: Path, as_root: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = isolated / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(blocker / "state"))
    monkeypatch.setattr(provider, "up", tripwire("bring a cluster up"))
    rc, out = run_cli(["cluster", "up"], capsys)
    assert_refused(rc, out, PRECONDITION, "cannot be created or written", "fix: give a directory root can write")


@pytest.mark.parametrize("argv", [["cluster", "status"], ["cluster", "down"], ["deploy"]], ids=" ".join)
def test_state_file_unreadable(
    argv: list[str], isolated: Path, as_root: None, capsys: pytest.CaptureFixture[str]
) -> None:
    state = isolated / "state"
    state.mkdir()
    (state / "state.json").write_text('{"subnet": "10.72.0.0/24", ')
    kept = snapshot(state)
    rc, out = run_cli(argv, capsys)
    assert_refused(rc, out, PRECONDITION, f"state file {state / 'state.json'} is unreadable", "fix: if no local")
    assert snapshot(state) == kept


def test_cluster_up_with_a_different_shape_leaves_the_cluster_alone(
    isolated: Path, as_root: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_state(isolated / "state", subnet="10.72.0.0/24", hosts=3)
    kept = snapshot(isolated / "state")
    monkeypatch.setattr(preflight, "run_all", tripwire("run the preflight and build a cluster"))
    rc, out = run_cli(["cluster", "up"], capsys)
    assert_refused(rc, out, PRECONDITION, "a local cluster of another shape is up")
    assert "fix: take it down first" in out
    assert snapshot(isolated / "state") == kept


def test_missing_programs(isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """FAKE: the required programs are one present program (sh) and one that no PATH has (as if its
    package were not installed), so the message does not depend on what this machine has installed
    (a fresh machine lacks tini, sshd and iptables); os.geteuid() and the preflight's root check
    report root (that check has its own row)."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(preflight, "check_root", lambda: None)
    monkeypatch.setattr(preflight, "REQUIRED_PROGRAMS", {"sh": "dash", "pbsh-no-such-tool": "pbsh-no-such-package"})
    monkeypatch.setattr(preflight, "check_netns", tripwire("go past the programs check"))
    # namespace hosts: system hosts (the default since issue #34) would first ask for --openpbs
    rc, out = run_cli(["cluster", "up", "--flavour", "namespace"], capsys)
    assert_refused(
        rc, out, PRECONDITION, "error: missing programs: pbsh-no-such-tool (Debian package pbsh-no-such-package)\n",
        "fix: install them: apt-get install -y pbsh-no-such-package\n",
    )  # fmt: skip
    assert not (isolated / "state").exists()


def test_subnet_in_use_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """FAKE `ip -j` output: eth1 holds an address of the wanted subnet."""
    addrs = [{"ifname": "eth1", "addr_info": [{"local": "10.71.0.7", "prefixlen": 24}]}]
    monkeypatch.setattr(shell, "check", fake_ip(addrs, []))
    with pytest.raises(errors.PreconditionError, match=r"10.71.0.0/24 is already in use.*eth1") as err:
        preflight.check_subnet(ClusterSpec(), ours=False)
    assert "--subnet" in err.value.hint
    assert err.value.exit_code == PRECONDITION


def test_overlapping_route_counts_and_our_bridge_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """FAKE `ip -j` output: a VPN route over the subnet; our own bridge's route is not a conflict."""
    addrs = [{"ifname": "pbsh-br0", "addr_info": [{"local": "10.71.0.1", "prefixlen": 24}]}]
    routes = [{"dst": "10.71.0.0/16", "dev": "tun0"}, {"dst": "10.71.0.0/24", "dev": "pbsh-br0"}]
    monkeypatch.setattr(shell, "check", fake_ip(addrs, routes))
    assert network.subnet_conflicts(ClusterSpec()) == ["route 10.71.0.0/16 via tun0"]


def fake_ip(addrs: list, routes: list):
    def check(argv, **_: object) -> str:
        if argv[:4] == ["ip", "-j", "-4", "addr"]:
            return json.dumps(addrs)
        if argv[:4] == ["ip", "-j", "-4", "route"]:
            return json.dumps(routes)
        raise AssertionError(f"unexpected command {argv}")

    return check


def test_harness_root_wrong(
    isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PBS_HARNESS_ROOT", str(isolated))
    rc, out = run_cli(["report"], capsys)
    assert_refused(
        rc, out, PRECONDITION, f"PBS_HARNESS_ROOT is {isolated}, which holds no pbs-harness checkout",
        "fix: set PBS_HARNESS_ROOT to the pbs-harness checkout, or unset it",
    )  # fmt: skip


def test_ansible_inventory_missing(
    isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAKE: ansible-inventory resolves to a path where no program is (as without ansible-core)."""
    monkeypatch.setattr(inventory, "_ansible_inventory", lambda: str(isolated / "bin" / "ansible-inventory"))
    hosts = isolated / "hosts.yml"
    hosts.write_text("all: {}\n")
    rc, out = run_cli(["deploy", "-i", str(hosts)], capsys)
    assert_refused(
        rc, out, PRECONDITION, "ansible-inventory is not installed", "fix: install the project's requirements"
    )


def test_ansible_playbook_missing_keeps_the_last_deploy_log(
    tmp_root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAKE ansible-inventory output (a one-host cluster answering on a loopback port this test
    listens on and greets as an SSH server does), and ansible-playbook resolved to a path where no program is."""
    with loopback_port("ssh") as port:
        data = listing(server=["s1"], moms=["s1"], hostvars={"s1": {"ansible_port": port}})
        hosts = fake_ansible_inventory(monkeypatch, tmp_root.parent, data)
        monkeypatch.setattr(deploy, "_ansible_bin", lambda name: str(tmp_root / "bin" / name))
        log = tmp_root / "reports" / "ansible-site.log"
        log.write_text("the last deploy's log\n")
        rc, out = run_cli(["deploy", "-i", str(hosts)], capsys)
    assert_refused(
        rc, out, PRECONDITION, "ansible-playbook is not installed", "fix: install the project's requirements"
    )
    assert log.read_text() == "the last deploy's log\n"


# --- report inputs ---------------------------------------------------------------------------

# A results file as the recorder writes it (test_results_schema.py proves the schema takes the real thing).
RUN = {"started": "2026-01-01T10:00:00", "finished": "2026-01-01T10:05:00", "environment": {}, "tests": []}
TEST = {"nodeid": "ptl_tests/test_x.py::test_y", "outcome": "passed", "duration": 1.5, "specs": [], "guards": []}
TEST |= {"differences": []}


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "does not exist"),
        ('{"tests": [', "is not valid JSON: Expecting value (line 1, column 12)"),
        ("[1, 2]", "is not a test run's results: it holds a JSON list, not an object"),
        (
            '{"foo": 1}',
            "is not a test run's results: has no 'started', 'finished', 'environment', 'tests'",
        ),
        (json.dumps({**RUN, "foo": 1}), "unknown keys ['foo']; known: started, finished, environment, tests, clusters"),
        (json.dumps({**RUN, "tests": [{"nodeid": "t"}]}), "tests[0]: has no 'outcome', 'duration', 'specs'"),
        (json.dumps({**RUN, "tests": [{**TEST, "outcome": "won"}]}), "tests[0]: outcome 'won' is not one of passed"),
        (json.dumps({**RUN, "tests": [{**TEST, "specs": "RD-1"}]}), "tests[0]: 'specs' is str, not a list"),
        (json.dumps({**RUN, "environment": []}), "'environment' is list, not an object"),
    ],
    ids=["missing", "bad-json", "not-an-object", "foo", "unknown-key", "no-outcome", "bad-outcome", "specs-str", "env"],
)
def test_report_results_file(
    content: str | None, says: str, tmp_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_root.parent / "results.json"
    if content is not None:
        results.write_text(content)
    kept = snapshot(tmp_root / "reports")
    rc, out = run_cli(["report", "--results", str(results)], capsys)
    assert_refused(
        rc, out, PRECONDITION, f"results file {results}", says, "fix: give the results.json a test run wrote"
    )
    assert snapshot(tmp_root / "reports") == kept


@pytest.mark.parametrize(
    ("out_dir", "says"),
    [("/dev/null/x", "cannot create report folder /dev/null/x: Not a directory"), ("FILE", "is not a folder")],
    ids=["under-a-device", "a-file"],
)
def test_report_out_unusable(out_dir: str, says: str, tmp_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if out_dir == "FILE":
        out_dir = str(tmp_root.parent / "notes.txt")
        Path(out_dir).write_text("kept\n")
    kept = snapshot(tmp_root / "reports")
    rc, out = run_cli(["report", "--out", out_dir], capsys)
    assert_refused(rc, out, PRECONDITION, says, "fix: give --out a folder this user can write")
    assert snapshot(tmp_root / "reports") == kept
    if out_dir.endswith("notes.txt"):
        assert Path(out_dir).read_text() == "kept\n"


@pytest.mark.parametrize("out_dir", ["/proc", "/sys"])
def test_report_out_an_existing_folder_no_file_can_be_made_in(
    out_dir: str, tmp_root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unwritable --out (issue #34): a folder that exists, where even root makes no file (the kernel's own
    file systems; a read-only mount is the same case). os.access says yes to root there, and the report's
    first write used to fail with a raw `[Errno 2]`/`[Errno 13]` after the results were read. Now it is
    refused with the README's code 3 before the results are even read (tripwire)."""
    from pbs_harness.conformance import results

    monkeypatch.setattr(results, "load", tripwire("read the results"))
    kept = snapshot(tmp_root / "reports")
    rc, out = run_cli(["report", "--out", out_dir], capsys)
    says = f"report folder {out_dir} is not writable"
    assert_refused(rc, out, PRECONDITION, says, "fix: give --out a folder this user can write")
    assert "[Errno" not in out
    assert snapshot(tmp_root / "reports") == kept


def test_report_without_any_results_says_so(tmp_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No results of a run at all is not an error: the report says every interface was not run."""
    (tmp_root / "reports" / "results.json").unlink()
    rc, out = run_cli(["report"], capsys)
    assert rc == errors.EXIT_OK
    assert "no results at" in out
    assert "Traceback" not in out


# --- --write-inventory -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("/dev/null/inv", "--write-inventory /dev/null/inv: cannot be created: /dev/null is not a directory"),
        ("FILE/inventory", "cannot be created: FILE is not a directory"),
        ("FILE", "--write-inventory FILE: exists and is not a directory"),
        ("FULL", "the directory holds something other than an inventory pbs-harness wrote"),
    ],
    ids=["under-a-device", "under-a-file", "a-file", "a-folder-in-use"],
)
@pytest.mark.parametrize("verb", [["up"], ["cluster", "up"], ["up", "--clusters", "auto"]], ids=" ".join)
def test_write_inventory_path_refused_before_anything_is_made(
    target: str,
    says: str,
    verb: list[str],
    *,
    isolated: Path,
    as_root: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Used to be found once the cluster was up (`up` wrote the inventory last). The network probes of
    --subnet auto and --clusters auto, and bringing a cluster up, are tripwires."""
    kept_file = isolated / "notes.txt"
    kept_file.write_text("kept\n")
    full = isolated / "full"
    full.mkdir()
    (full / "mine.txt").write_text("mine\n")
    target = target.replace("FILE", str(kept_file)).replace("FULL", str(full))
    says = says.replace("FILE", str(kept_file))
    write_state(isolated / "state")
    kept = snapshot(isolated)
    monkeypatch.setattr(provider, "up", tripwire("bring a cluster up"))
    monkeypatch.setattr(network, "machine_networks", tripwire("probe this machine's networks"))
    rc, out = run_cli([*verb, "--subnet", "auto", "--write-inventory", target], capsys)
    assert_refused(rc, out, PRECONDITION, says, "fix: give a new")
    assert snapshot(isolated) == kept
