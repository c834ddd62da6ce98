"""Issue #34, inputs that were accepted silently or refused with a weak message, each refused before any
host is contacted (or, for the reachability probe, named at the probe, before Ansible or SSH login).

Real code throughout: the real ansible-inventory on real YAML files, the real reachability probe against
loopback ports this test serves (one that closes at once, one that never speaks, one that speaks HTTP),
pytest's real parser for `test`'s line. Tripwires: the SSH login check (precheck.check_cluster) and the
playbook run (deploy.run_playbook) fail the test if a refused command gets that far. The results-size
test writes a sparse file (its size is real, its bytes are not read).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pbs_harness.common import errors
from pbs_harness.deploy import playbook as deploy
from pbs_harness.localcluster import openpbs_packages, preflight, provider
from pbs_harness.remote import reachability
from pbs_harness.suite import precheck
from tests.unit.badinput import CLOSED, ROOT, assert_refused, run_cli, snapshot, tripwire, write_yaml_inventory
from tests.unit.loopback import loopback_port

USAGE, PRECONDITION, UNREACHABLE = errors.EXIT_USAGE, errors.EXIT_PRECONDITION, errors.EXIT_UNREACHABLE


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precheck, "check_cluster", tripwire("log in to the hosts"))
    monkeypatch.setattr(deploy, "run_playbook", tripwire("run ansible-playbook"))
    monkeypatch.setattr(provider, "up", tripwire("bring a cluster up"))


def hosts_yaml(names: tuple[str, ...] = ("s1", "m1"), port: int = CLOSED[1], extra: str = "") -> str:
    moms = "".join(
        f"        {n}: {{ansible_host: 127.0.0.1, ansible_port: {port}, ansible_user: root}}\n" for n in names
    )
    return (
        "all:\n  children:\n    pbs_server:\n      hosts:\n"
        f"        {names[0]}:\n"
        f"    pbs_moms:\n      hosts:\n{moms}{extra}"
    )


# --- test's own line first ---------------------------------------------------------------------------


def test_a_bad_pytest_option_is_refused_before_any_host_is_probed(
    tmp_root: Path, no_work: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`test -i UNREACHABLE --no-such-opt` used to exit 4: the hosts were probed before pytest read its line."""
    from pbs_harness.remote import inventory

    monkeypatch.setattr(inventory, "check_reachable", tripwire("probe the hosts"))
    inv = write_yaml_inventory(tmp_root.parent, hosts_yaml())
    kept = snapshot(tmp_root / "reports")
    rc, out = run_cli(["test", "-i", str(inv), "--no-such-opt"], capsys)
    assert_refused(rc, out, USAGE, "unrecognized arguments: --no-such-opt", "no host was contacted")
    assert snapshot(tmp_root / "reports") == kept


# --- inventories -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a;rm -rf x", "$(touch pwned)", "-node", "node_01-", "a..b", "x" * 64])
def test_a_host_name_that_cannot_be_a_pbs_node_name(
    name: str, tmp_path: Path, isolated: Path, no_work: None, capsys: pytest.CaptureFixture[str]
) -> None:
    quoted = "'" + name.replace("'", "''") + "'"
    inv = write_yaml_inventory(tmp_path, hosts_yaml(("s1", quoted)))
    rc, out = run_cli(["deploy", "-i", str(inv)], capsys)
    assert_refused(rc, out, PRECONDITION, f"host name {name!r} cannot be a PBS node name", "fix: name the host")
    assert not (tmp_path / "pwned").exists()


def test_a_duplicate_host_in_the_yaml_is_refused_with_its_line(
    tmp_path: Path, isolated: Path, no_work: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ansible warns and keeps the last one: which m1 did the user mean?"""
    inv = write_yaml_inventory(tmp_path, hosts_yaml(("s1", "m1", "m1")))
    rc, out = run_cli(["deploy", "-i", str(inv)], capsys)
    assert_refused(rc, out, PRECONDITION, "Found duplicate mapping key 'm1'", f"({inv} line 10, column 9)")


def test_broken_group_vars_yaml_is_named_with_file_and_line(
    tmp_path: Path, isolated: Path, no_work: None, capsys: pytest.CaptureFixture[str]
) -> None:
    inv = write_yaml_inventory(tmp_path, hosts_yaml())
    gv = inv.parent / "group_vars" / "all.yml"
    gv.parent.mkdir()
    gv.write_text("openpbs_server_start_sched: true\nfoo: [1, 2\nbar: x: y\n")
    rc, out = run_cli(["deploy", "-i", str(inv.parent)], capsys)
    assert_refused(
        rc, out, PRECONDITION, f"a variables file is not valid YAML: {gv} line 3, column 4", "fix: fix that file"
    )


def test_an_empty_inventory_folder_says_so(
    tmp_path: Path, isolated: Path, no_work: None, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "inv" / "group_vars").mkdir(parents=True)
    rc, out = run_cli(["deploy", "-i", str(tmp_path / "inv")], capsys)
    assert_refused(rc, out, PRECONDITION, "is a folder with no inventory file in it", "fix: put a hosts.yml in it")
    assert "fix that file" not in out


def test_deploy_honours_pbs_harness_inventory(
    tmp_path: Path, isolated: Path, no_work: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`test` took PBS_HARNESS_INVENTORY and `deploy` ignored it (deploying to the local cluster instead)."""
    inv = write_yaml_inventory(tmp_path, hosts_yaml())
    monkeypatch.setenv("PBS_HARNESS_INVENTORY", str(inv))
    rc, out = run_cli(["deploy"], capsys)
    assert_refused(rc, out, UNREACHABLE, f"inventory {inv} (from PBS_HARNESS_INVENTORY)", "127.0.0.1:9")


@pytest.mark.parametrize("argv", [["up", "-i", "INV"], ["-i", "INV", "up"]])
def test_up_with_an_inventory_is_refused(
    argv: list[str], isolated: Path, no_work: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """`up -i INV` used to bring up a local cluster, then deploy to INV."""
    rc, out = run_cli(argv, capsys)
    assert_refused(rc, out, USAGE, "up brings up a local cluster and deploys to it; -i INV names other hosts")
    assert "pbs-harness deploy -i INV" in out
    assert not (isolated / "state").exists()


# --- a port that is open but is not SSH --------------------------------------------------------------


@pytest.fixture(params=["close", "silent", "http"])
def not_ssh(request: pytest.FixtureRequest) -> Iterator[tuple[str, int]]:
    with loopback_port(request.param) as port:
        yield request.param, port


def test_a_port_that_is_open_but_not_ssh_fails_the_probe(not_ssh: tuple[str, int]) -> None:
    kind, port = not_ssh
    failures = reachability.probe({"m1": ("127.0.0.1", port)}, within=1)
    says = {
        "close": "the port accepted the connection and closed it without an SSH greeting",
        "silent": "the port accepted the connection but sent no SSH greeting within 1s",
        "http": "closed it without an SSH greeting: it sent b'HTTP/1.1 400 Bad Request",
    }[kind]
    assert says in failures["m1"]


def test_an_ssh_greeting_passes_the_probe() -> None:
    with loopback_port("ssh") as port:
        assert reachability.probe({"m1": ("127.0.0.1", port)}, within=2) == {}


def test_deploy_to_a_port_that_is_not_ssh_stops_at_the_probe(
    not_ssh: tuple[str, int], tmp_path: Path, isolated: Path, no_work: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """ansible-playbook and testinfra used to start against it."""
    _kind, port = not_ssh
    inv = write_yaml_inventory(tmp_path, hosts_yaml(port=port))
    rc, out = run_cli(["deploy", "-i", str(inv), "--connect-timeout", "1"], capsys)
    assert_refused(rc, out, UNREACHABLE, f"m1 (127.0.0.1:{port}): the port accepted the connection", "fix: check")


# --- report inputs -----------------------------------------------------------------------------------


def test_a_huge_results_file_is_refused_by_its_size(tmp_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """294 MB used to take 15 s and 2 GB of memory before it was refused."""
    huge = tmp_root.parent / "huge.json"
    with huge.open("wb") as f:
        f.truncate(300 * 2**20)  # sparse: its size is what is judged, not its bytes
    kept = snapshot(tmp_root / "reports")
    rc, out = run_cli(["report", "--results", str(huge)], capsys)
    assert_refused(
        rc, out, PRECONDITION, f"results file {huge} is 300 MiB, more than any test run writes (at most 64 MiB"
    )
    assert snapshot(tmp_root / "reports") == kept


# --- --openpbs ---------------------------------------------------------------------------------------


def test_a_tarball_with_configure_ac_that_is_not_openpbs_is_refused(
    tmp_path: Path, isolated: Path, as_root: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It used to be taken as a source, and the builder image was made."""
    import tarfile

    from pbs_harness.deploy import openpbs_build
    from pbs_harness.localcluster.containers import images

    monkeypatch.setattr(openpbs_build, "ensure", tripwire("build packages"))
    monkeypatch.setattr(images, "ensure", tripwire("make an image"), raising=False)
    tree = tmp_path / "other-1.0"
    tree.mkdir()
    (tree / "configure.ac").write_text("AC_INIT([other], [1.0])\n")
    archive = tmp_path / "other-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tree, arcname="other-1.0")
    rc, out = run_cli(["up", "--flavour", "system", "--openpbs", str(archive)], capsys)
    assert_refused(
        rc, out, PRECONDITION, f"--openpbs {archive} is a source archive without ci/etc/build-pbs-packages.sh"
    )
    assert not (isolated / "state").exists()


@pytest.mark.parametrize("form", ["folder", "zip"])
@pytest.mark.usefixtures("as_root")
def test_zero_byte_packages_are_refused(
    form: str, tmp_path: Path, isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A zip or folder of zero-byte openpbs-{server,execution,client} .debs used to be cached as "OpenPBS 23.06.06"."""
    import zipfile

    from pbs_harness.deploy import openpbs_build

    monkeypatch.setattr(openpbs_build, "ensure", tripwire("cache the packages"))
    names = [f"openpbs-{k}_23.06.06-1_amd64.deb" for k in ("server", "execution", "client")]
    if form == "folder":
        given = tmp_path / "debs"
        given.mkdir()
        for name in names:
            (given / name).write_bytes(b"")
    else:
        given = tmp_path / "openpbs_23.06.06.zip"
        with zipfile.ZipFile(given, "w") as zf:
            for name in names:
                zf.writestr(f"openpbs_23.06.06/{name}", b"")
    rc, out = run_cli(["up", "--flavour", "system", "--openpbs", str(given)], capsys)
    assert_refused(rc, out, PRECONDITION, f"--openpbs {given}: ", "are not packages (empty, or not a .deb/.rpm")
    assert not (isolated / "state").exists()


# --- hook lists --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "says", "fix"),
    [
        (
            {"events": ["no_such_event"]},
            "hook rjs_pad: unknown event(s) 'no_such_event'",
            "fix: use OpenPBS hook events",
        ),
        ({"events": []}, "hook rjs_pad: events [] is not an event or a list of them", "fix: see the item format"),
        ({"order": -5}, "hook rjs_pad: order -5 is not a whole number from 1 to 1000", "fix: give a site hook's run"),
        ({"order": True}, "hook rjs_pad: order True is not a whole number", "fix: give a site hook's run"),
        ({"alarm": "banana"}, "hook rjs_pad: alarm 'banana' is not a whole number of seconds", "fix: give the seconds"),
        ({"enabled": "maybe"}, "hook rjs_pad: enabled 'maybe' is not true or false", "fix: write enabled: true"),
    ],
    ids=["unknown-event", "no-events", "negative-order", "boolean-order", "word-alarm", "maybe-enabled"],
)
def test_hook_item_values_are_judged_before_any_host(
    change: dict[str, object], says: str, fix: str, *, tmp_path: Path, isolated: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from pbs_harness.remote import inventory
    from tests.unit.test_hook_config_bad_input import deploy_with, shipped_hook_list

    monkeypatch.setattr(inventory, "check_reachable", tripwire("probe the hosts"))
    import shutil

    hooks = tmp_path / "hooks"
    shutil.copytree(ROOT / "hooks", hooks)
    hook_list = shipped_hook_list()
    hook_list[0].update(change)
    rc, out = deploy_with(monkeypatch, isolated, hooks, hook_list, capsys)
    assert_refused(rc, out, PRECONDITION, says, fix)


# --- the cache folder --------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["file", "under-a-file"])
@pytest.mark.parametrize("argv", [["cache"], ["cache", "--prune"]])
@pytest.mark.usefixtures("isolated")
def test_a_cache_folder_that_is_a_file(
    where: str, argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cache` used to say "empty", and `up` a raw `[Errno 20] Not a directory`."""
    blocker = tmp_path / "cache"
    blocker.write_text("kept\n")
    monkeypatch.setenv("PBS_HARNESS_CACHE_DIR", str(blocker if where == "file" else blocker / "sub"))
    rc, out = run_cli(argv, capsys)
    says = "is a file, not a folder" if where == "file" else f"cannot be a folder: {blocker} is a file"
    assert_refused(rc, out, PRECONDITION, "the cache folder", "(from $PBS_HARNESS_CACHE_DIR)", says)
    assert "fix: point $PBS_HARNESS_CACHE_DIR at a folder" in out
    assert "empty" not in out
    assert "Errno" not in out
    assert blocker.read_text() == "kept\n"


@pytest.mark.usefixtures("as_root")
def test_up_with_a_cache_folder_that_is_a_file(
    tmp_path: Path, isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pbs_harness.deploy import openpbs_build

    monkeypatch.setattr(openpbs_build, "ensure", tripwire("build or cache packages"))
    blocker = tmp_path / "cache"
    blocker.write_text("kept\n")
    monkeypatch.setenv("PBS_HARNESS_CACHE_DIR", str(blocker))
    debs = tmp_path / "debs"
    debs.mkdir()
    for kind in ("server", "execution", "client"):
        (debs / f"openpbs-{kind}_23.06.06-1_amd64.deb").write_bytes(b"!<arch>\n")
    rc, out = run_cli(["up", "--flavour", "system", "--openpbs", str(debs)], capsys)
    assert_refused(rc, out, PRECONDITION, f"the cache folder {blocker} (from $PBS_HARNESS_CACHE_DIR) is a file")
    assert "Errno" not in out
    assert not (isolated / "state").exists()


@pytest.mark.parametrize("argv", [["up", "--flavour", "namespace"], ["cluster", "up", "--flavour", "namespace"]])
def test_namespace_hosts_without_this_machines_openpbs_are_refused_before_any_host(
    argv: list[str],
    isolated: Path,
    as_root: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Namespace hosts run this machine's /opt/pbs: with none there, `up` used to bring the hosts up and the
    deploy found it missing afterwards. FAKE: this machine's /opt/pbs is an empty folder here."""
    empty = isolated / "opt-pbs"
    empty.mkdir()
    monkeypatch.setattr(openpbs_packages, "THIS_MACHINES_OPENPBS", empty)
    monkeypatch.setattr(preflight, "run_all", tripwire("run the preflight"))
    monkeypatch.setattr(provider, "up", tripwire("bring a cluster up"))
    rc, out = run_cli(argv, capsys)
    assert_refused(
        rc, out, errors.EXIT_PRECONDITION,
        f"namespace hosts run this machine's OpenPBS, and {empty}/bin/qstat is not there",
        "fix: install OpenPBS here first", "--flavour system --openpbs PATH",
    )  # fmt: skip
    assert not (isolated / "state").exists()
