"""PTL side by side (pbs_harness.ptl): how a run is set up and started, without running it.

Fakes, said here: `FakeEtc` stands for a host's /etc/passwd and /etc/group as getent, groupadd,
useradd, userdel and groupdel see them (it answers those commands and nothing else); inventories are
`ansible-inventory --list` shaped dicts; the PTL source is a small tree made in tmp_path. The
script text is checked, not run."""

from __future__ import annotations

import hashlib
import re
import shlex
import subprocess
import tarfile
from pathlib import Path, PurePosixPath

import pytest

from pbs_harness.common.errors import PreconditionError
from pbs_harness.ptl import accounts, install, restore, runner, selection, site
from pbs_harness.remote.inventory import parse
from pbs_harness.remote.transport import CommandResult

UPSTREAM_LINES = """\
#!/bin/bash -x
groupadd -g 1900 tstgrp00
groupadd -g 1901 tstgrp01
useradd -m -s /bin/bash -u 4359 -g tstgrp00 -G tstgrp00 pbsuser
useradd -m -s /bin/bash -u 4361 -g tstgrp00 -G tstgrp01,tstgrp00 pbsuser1
chmod g+x,o+x /home/*
"""


def test_upstream_account_lines_give_groups_and_users_with_their_ids() -> None:
    acc = accounts.parse(UPSTREAM_LINES)
    assert acc.groups == (accounts.Group("tstgrp00", 1900), accounts.Group("tstgrp01", 1901))
    assert acc.users == (
        accounts.User("pbsuser", 4359, "tstgrp00", ()),
        accounts.User("pbsuser1", 4361, "tstgrp00", ("tstgrp01",)),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [("echo hi\n", "no useradd lines"), ("useradd -m pbsuser\n", "line 1: no numeric id"),
     ("useradd -u 1 -g g a b\n", "line 1: expected one account name")],
)  # fmt: skip
def test_account_lines_this_reader_cannot_use_are_errors(text: str, message: str) -> None:
    with pytest.raises(accounts.AccountsError, match=message):
        accounts.parse(text)


class FakeEtc:
    """A host's passwd/group databases, through the commands accounts.py sends (a stand-in for /etc)."""

    def __init__(self, users: dict[str, int], groups: dict[str, int]) -> None:
        self.users, self.groups, self.commands = dict(users), dict(groups), []
        self.busy: set[str] = set()  # users with processes left: userdel fails

    def __call__(self, cmd: str) -> CommandResult:
        self.commands.append(cmd)
        words = shlex.split(cmd.split(">", 1)[0])
        rc, out = 0, ""
        if words[0] == "getent":
            db = self.users if words[1] == "passwd" else self.groups
            key = words[2]
            match = [n for n, i in db.items() if key in (n, str(i))]
            rc, out = (0, f"{match[0]}:x:1:\n") if match else (2, "")
        elif words[0] == "groupadd":
            self.groups[words[-1]] = int(words[2])
        elif words[0] == "useradd":
            self.users[words[-1]] = int(words[words.index("-u") + 1])
        elif words[0] == "userdel":
            rc = 8 if words[-1] in self.busy else 0
            if not rc:
                del self.users[words[-1]]
        elif words[0] == "groupdel":
            del self.groups[words[-1]]
        elif words[0] != "chmod":
            raise AssertionError(f"unexpected command {cmd}")
        return CommandResult("h1", cmd, rc, out, "")


def test_missing_accounts_are_created_existing_ones_kept_and_only_what_was_made_is_removed(tmp_path: Path) -> None:
    etc = FakeEtc(users={"pbsuser1": 20001}, groups={"tstgrp00": 1900})  # the harness's pbsuser1
    record = tmp_path / "h1.json"
    made = accounts.create(etc, accounts.parse(UPSTREAM_LINES), record)
    assert (made.groups, made.users, made.kept) == (["tstgrp01"], ["pbsuser"], ["pbsuser1"])
    assert etc.users == {"pbsuser1": 20001, "pbsuser": 4359}
    assert "useradd -m -s /bin/bash -u 4359 -g tstgrp00 -G tstgrp00 pbsuser" in etc.commands
    assert accounts.Created.load(record) == made
    left = accounts.remove(etc, record)
    assert left == accounts.Created(kept=["pbsuser1"])
    assert (etc.users, etc.groups) == ({"pbsuser1": 20001}, {"tstgrp00": 1900})
    assert not record.exists()
    assert accounts.remove(etc, record) is None


def test_a_second_host_sharing_etc_creates_nothing_and_a_rerun_cleans_what_a_killed_run_left(tmp_path: Path) -> None:
    etc = FakeEtc(users={}, groups={})
    wanted = accounts.parse(UPSTREAM_LINES)
    accounts.create(etc, wanted, tmp_path / "h1.json")
    second = accounts.create(etc, wanted, tmp_path / "h2.json")  # same /etc seen from another host
    assert (second.groups, second.users) == ([], [])
    etc.busy.add("pbsuser")
    left = accounts.remove(etc, tmp_path / "h1.json")
    assert left is not None
    assert left.users == ["pbsuser"]
    assert accounts.Created.load(tmp_path / "h1.json").users == ["pbsuser"]  # kept for the next run
    etc.busy.clear()
    assert accounts.remove(etc, tmp_path / "h1.json") == accounts.Created()


def test_an_id_held_by_another_account_is_an_error_before_anything_of_it_is_made(tmp_path: Path) -> None:
    etc = FakeEtc(users={"someone": 4359}, groups={})
    with pytest.raises(accounts.AccountsError, match="user pbsuser needs UID 4359, which someone has"):
        accounts.create(etc, accounts.parse(UPSTREAM_LINES), tmp_path / "h1.json")
    assert "pbsuser" not in etc.users
    assert accounts.Created.load(tmp_path / "h1.json").groups == ["tstgrp00", "tstgrp01"]  # removable


def _inventory(server_vars: dict) -> object:
    hostvars = {"s1": {"ansible_host": "10.9.0.11", **server_vars}, "m2": {"ansible_host": "10.9.0.12"},
                "m3": {"ansible_host": "10.9.0.13"}}  # fmt: skip
    data = {
        "_meta": {"hostvars": hostvars},
        "all": {"children": ["pbs_server", "pbs_moms"]},
        "pbs_server": {"hosts": ["s1"]},
        "pbs_moms": {"hosts": ["m3", "s1", "m2"]},
    }
    return parse(data, Path("/srv/inv.yml"))


def test_static_hosts_use_the_packaged_ptl_the_inventory_names() -> None:
    where = site.of(_inventory({"ptl_prefix": "/opt/ptl", "ansible_python_interpreter": "/usr/bin/python3.12"}))
    assert where.moms == ("s1", "m3", "m2")  # the server host first: PTL's first mom (momA, the MS)
    assert (where.bin_dir, where.tests_dir) == (PurePosixPath("/opt/ptl/bin"), PurePosixPath("/opt/ptl/tests"))
    assert (where.build_dir, where.ssh_config, where.host_python) == (None, None, "/usr/bin/python3.12")
    assert where.work_dir == PurePosixPath(site.DEFAULT_WORK_DIR)
    assert where.moms_for(2) == ("s1", "m3")
    with pytest.raises(PreconditionError, match="needs 5 moms; the cluster has 3"):
        where.moms_for(5)


def test_static_hosts_without_a_ptl_prefix_are_refused_with_the_fix() -> None:
    with pytest.raises(PreconditionError, match="no PTL for the hosts") as err:
        site.of(_inventory({}))
    assert "ptl_prefix" in err.value.hint


def test_the_local_cluster_builds_ptl_in_its_state_dir_and_uses_its_own_ssh_config(tmp_path: Path) -> None:
    state_dir = tmp_path / "pt"
    (state_dir).mkdir()
    (state_dir / "state.json").write_text('{"subnet": "10.9.0.0/24", "host_count": 3, "prefix": "pt"}')
    where = site.of(_inventory({"local_cluster_host": True, "local_cluster_state_dir": str(state_dir)}))
    assert where.build_dir == state_dir / "ptl"
    assert where.bin_dir == PurePosixPath(state_dir / "ptl/venv/bin")
    assert where.tests_dir == PurePosixPath(state_dir / "ptl/src/test/tests")
    assert where.ssh_config == PurePosixPath(state_dir / "ssh/config")
    assert where.work_dir == PurePosixPath(state_dir / "ptl/runs")
    (state_dir / "state.json").write_text(
        '{"subnet": "10.9.0.0/24", "host_count": 3, "prefix": "pt", "login_user": "ops"}'
    )
    assert (
        site.of(_inventory({"local_cluster_host": True, "local_cluster_state_dir": str(state_dir)})).ssh_config is None
    )


def _where(ssh_config: str | None = "/st/ssh/config") -> site.PtlSite:
    return site.PtlSite(
        server="s1", moms=("s1", "m2", "m3", "m4", "m5"), bin_dir=PurePosixPath("/st/ptl/venv/bin"),
        tests_dir=PurePosixPath("/st/ptl/src/test/tests"), work_dir=PurePosixPath("/st/ptl/runs"),
        ssh_config=PurePosixPath(ssh_config) if ssh_config else None, build_dir=None, host_python="/usr/bin/python3",
    )  # fmt: skip


def test_the_script_runs_pbs_benchpress_upstream_s_way_with_exactly_the_group_s_moms() -> None:
    group = selection.Group(selection.FILES[1], 3, ("test_a", "test_b"))
    run = runner.group_run(_where(), "run-1", group)
    assert run.name == "pbs_node_rampdown-3moms"
    assert run.json == PurePosixPath("/st/ptl/runs/run-1/pbs_node_rampdown-3moms.json")
    text = runner.script(_where(), run, group)
    line = next(line for line in text.splitlines() if line.startswith("script -qfec "))
    script_argv = shlex.split(line)
    assert script_argv[-2:] == ["/dev/null", "&"]  # on a terminal
    record, benchpress = script_argv[2].split("; exec ")
    assert record == f"echo $$ > {run.ptl_pid}"  # its own pid: its process group's after os.setpgrp
    assert shlex.split(benchpress) == [
        "pbs_benchpress", "-t", "TestPbsNodeRampDown.test_a,TestPbsNodeRampDown.test_b", "-p", "moms=s1:m2:m3",
        "-o", str(run.log), "--db-type=json", f"--db-name={run.json}",
        "--post-analysis-data=/st/ptl/runs/run-1/pbs_node_rampdown-3moms.post"]  # fmt: skip
    assert "cd /st/ptl/src/test/tests" in text
    assert "export PATH=/st/ptl/venv/bin:/opt/pbs/bin:/opt/pbs/sbin:$PATH" in text
    rsh = re.search(r"^export PTL_RSH_CMD=(.*)$", text, re.M)[1]
    assert shlex.split(rsh)[0].startswith("ssh -F /st/ssh/config -o ControlMaster=auto")
    assert f"echo $rc > {run.rc}" in text
    assert "for h in s1 m2 m3; do" in text  # the multiplexed connections closed after the run


class FakeRunHost:
    """The server host as runner.py's file transfers see it: the commands sent, run here by bash (the
    paths of the test's tmp_path stand for the host's)."""

    name = "s1"

    def __init__(self) -> None:
        self.commands: list[str] = []

    def run(self, cmd: str, timeout: float = 0) -> CommandResult:
        self.commands.append(cmd)
        done = subprocess.run(["bash", "-c", cmd], check=False, capture_output=True, text=True, timeout=60)
        return CommandResult(self.name, cmd, done.returncode, done.stdout, done.stderr)

    def check(self, cmd: str, timeout: float = 0, stdin: str | None = None) -> CommandResult:
        self.commands.append(cmd)
        return CommandResult(self.name, cmd, 0, "", "")


def test_ptl_s_post_analysis_data_of_failed_tests_comes_back_whole_and_a_rerun_starts_without_it(
    tmp_path: Path,
) -> None:
    """The run of 29 Nov kept only PTL's log: why jobs were held or placed elsewhere was in the daemons' logs,
    gone with the cluster. PTL saves them itself per failed test (a pbs_snapshot under <Class>/<test>/);
    the directory is brought back as it is, and none is an empty result."""
    where = _where()
    group = selection.Group(selection.FILES[1], 3, ("test_a",))
    run = runner.group_run(where, "run-1", group, part=2)
    assert run.post_data == PurePosixPath("/st/ptl/runs/run-1/pbs_node_rampdown-3moms-p02.post")
    host = FakeRunHost()
    post = tmp_path / run.post_data.name
    assert runner.fetch_tree(host, PurePosixPath(post)) is None  # PTL saved nothing: no failure
    (post / "TestPbsNodeRampDown" / "test_a").mkdir(parents=True)
    (post / "TestPbsNodeRampDown" / "test_a" / "logfile_FAIL").write_text("expected R, got H\n")
    (post / "TestPbsNodeRampDown" / "test_a" / "PBS_s1.tar.gz").write_bytes(b"\x1f\x8b snapshot")
    data = runner.fetch_tree(host, PurePosixPath(post))
    assert data is not None
    (tmp_path / "got.tar.gz").write_bytes(data)
    with tarfile.open(tmp_path / "got.tar.gz") as tar:
        members = {m.name: m for m in tar.getmembers() if m.isfile()}
        assert set(members) == {
            f"{post.name}/TestPbsNodeRampDown/test_a/logfile_FAIL",
            f"{post.name}/TestPbsNodeRampDown/test_a/PBS_s1.tar.gz",
        }
        assert tar.extractfile(members[f"{post.name}/TestPbsNodeRampDown/test_a/PBS_s1.tar.gz"]).read() == (
            b"\x1f\x8b snapshot"
        )
    # PTL skips a test whose post-analysis directory exists: the run's set-up removes the last run's.
    started = FakeRunHost()
    started.run = lambda cmd, timeout=0: CommandResult("s1", cmd, 0, "0\n", "")  # its exit code is there
    assert runner.run_group(started, run, "#!/bin/bash\n", time_limit=60)[0] == 0
    assert f"rm -rf {run.rc} {run.json} {run.post_data}" in started.commands[0]


def test_without_a_cluster_ssh_config_ptl_uses_plain_ssh_and_scp_with_multiplexing_only() -> None:
    opts = runner.ssh_options(_where(None), PurePosixPath("/run/cm"))
    assert opts == "-o ControlMaster=auto -o ControlPath=/run/cm/%C -o ControlPersist=300"


def test_the_multiplexing_socket_path_fits_a_unix_socket_whatever_the_group_s_name() -> None:
    group = selection.Group(selection.FILES[2], 5, ("test_a",))  # the longest file name
    run = runner.group_run(_where(), "run-20261125-192855", group)
    # ssh creates `<ControlPath with %C expanded>.<16 random characters>` first: at most 107 bytes.
    longest = f"{runner.control_dir_of(run)}/{'0' * 40}.{'x' * 16}"
    assert len(longest) <= 107
    assert runner.control_dir_of(run) != runner.control_dir_of(runner.group_run(_where(), "run-2", group))


def test_a_group_s_time_limit_is_ptl_s_own_per_test_limit_times_its_tests_plus_a_margin() -> None:
    group = selection.Group(selection.FILES[0], 5, tuple(f"t{i}" for i in range(21)))
    assert runner.limit(group) == 21 * 900 + 600


def _source_tree(root: Path) -> Path:
    (root / "test/fw/ptl/lib").mkdir(parents=True)
    (root / "test/fw/bin").mkdir(parents=True)
    (root / "test/tests/functional").mkdir(parents=True)
    (root / "ci/etc").mkdir(parents=True)
    (root / "configure.ac").write_text("AC_INIT([OpenPBS],\n  [23.06.06],\n  [webmaster@openpbs.org])\n")
    (root / "test/fw/requirements.txt").write_text("# licence\nnose\nbeautifulsoup4\npexpect\ndefusedxml\n")
    (root / "test/fw/ptl/__init__.py.in").write_text("__version__ = '@PBS_VERSION@'\n")
    (root / "test/fw/ptl/lib/__init__.py").write_text("")
    (root / "test/fw/bin/pbs_benchpress").write_text("#!/usr/bin/env python3\nprint('ptl')\n")
    (root / "test/tests/functional/pbs_x.py").write_text("class TestX: pass\n")
    (root / "ci/etc/install-system-packages").write_text(UPSTREAM_LINES)
    (root / "src").mkdir()
    (root / "src/big.c").write_text("int main;\n")
    return root


def test_a_source_tree_s_id_is_the_install_script_s_and_an_archive_s_is_its_sha256(tmp_path: Path) -> None:
    tree = _source_tree(tmp_path / "openpbs")
    (tree / ".git").mkdir()
    (tree / ".git/HEAD").write_text("ref\n")
    pipeline = "find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum"
    # The install script's own pipeline, verbatim.
    done = subprocess.run(["bash", "-c", pipeline], cwd=tree, capture_output=True, text=True, check=True)
    expected = done.stdout[:64]
    assert install.source(tree).ident == f"tree:{expected}"
    archive = tmp_path / "openpbs.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tree, arcname="openpbs-x")
    assert install.source(archive).ident == "archive:" + hashlib.sha256(archive.read_bytes()).hexdigest()
    with pytest.raises(PreconditionError, match="not an OpenPBS source tree"):
        install.source(tmp_path)


def test_only_the_cluster_s_own_source_is_accepted(tmp_path: Path) -> None:
    src = install.Source(tmp_path, "archive:abc")
    ac = (_source_tree(tmp_path / "s") / "configure.ac").read_text()
    assert install.version_of(ac) == "23.06.06"
    assert "same source" in install.check_same_source(src, "archive:abc", "", None)
    with pytest.raises(
        PreconditionError, match=r"is not the source the cluster's OpenPBS was built from \(archive:def\)"
    ):
        install.check_same_source(src, "archive:def", "", None)
    assert "same version" in install.check_same_source(src, None, ac, "23.06.06")
    with pytest.raises(PreconditionError, match=r"is OpenPBS 23\.06\.06; the cluster runs 22\.05\.11"):
        install.check_same_source(src, None, ac, "22.05.11")


def test_ptl_s_requirements_get_the_maintained_nose_fork() -> None:
    assert install.requirements("# c\nnose\nbeautifulsoup4\n\npexpect\n") == ["pynose", "beautifulsoup4", "pexpect"]


def test_ptl_is_built_from_the_source_parts_into_a_virtualenv_of_the_hosts_python(tmp_path: Path) -> None:
    archive = tmp_path / "openpbs.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(_source_tree(tmp_path / "openpbs"), arcname="openpbs-x")
    calls: list[list[str]] = []
    build = tmp_path / "ptl"

    def fake_run(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        """Stands in for venv and pip: makes the virtualenv's site-packages and records the commands."""
        calls.append(argv)
        (build / "venv/bin").mkdir(parents=True, exist_ok=True)
        (build / "venv/lib/site").mkdir(parents=True, exist_ok=True)
        return subprocess.CompletedProcess(argv, 0, str(build / "venv/lib/site") + "\n", "")

    src = install.source(archive)
    assert install.build(src, build, "/usr/bin/python3", run=fake_run)
    assert calls[0] == ["/usr/bin/python3", "-m", "venv", str(build / "venv")]
    assert calls[1][-4:] == ["pynose", "beautifulsoup4", "pexpect", "defusedxml"]
    assert (build / "venv/lib/site/ptl/__init__.py").read_text() == "__version__ = '23.06.06'\n"
    assert not (build / "venv/lib/site/ptl/__init__.py.in").exists()
    assert (build / "venv/bin/pbs_benchpress").read_text().startswith(f"#!{build}/venv/bin/python3\nprint")
    assert sorted(p.name for p in (build / "src").iterdir()) == ["ci", "configure.ac", "test"]
    assert not (build / "src/src").exists()
    assert not install.build(src, build, "/usr/bin/python3", run=fake_run)  # same source: nothing to do
    assert len(calls) == 3


class FakeMomHost:
    """A host as restore.py sees it: `pbs_mom -s list/remove` over its config.d names, and the commands
    it was sent (a stand-in for a RemoteHost; nothing else is answered)."""

    def __init__(self, name: str, scripts: set[str]) -> None:
        self.name, self.scripts, self.commands = name, set(scripts), []

    def run(self, cmd: str, timeout: float = 0) -> CommandResult:
        self.commands.append(cmd)
        out = ""
        if cmd.endswith("pbs_mom -s list"):
            out = "".join(f"{s}\n" for s in sorted(self.scripts))
        elif " -s remove " in cmd:
            self.scripts.discard(cmd.rsplit(" ", 1)[1])
        elif cmd.endswith('qmgr -c "list sched default scheduling"'):
            out = "Sched default\n    scheduling = True\n\n"
        return CommandResult(self.name, cmd, 0, out, "")


def test_after_ptl_only_the_vnode_definitions_it_added_go_and_the_server_is_reverted_by_ptl_s_own_tool() -> None:
    server = FakeMomHost("s1", set())
    multi = FakeMomHost("m6", {"pbs_harness_vnodes"})
    hosts = [server, multi]
    before = restore.snapshot(hosts, PurePosixPath("/opt/pbs"))
    server.scripts.add("pbs_vnode_1795633596.def")
    multi.scripts.add("pbs_vnode_1795633600.def")
    scheduling = restore.sched_scheduling(server, PurePosixPath("/opt/pbs"))
    assert scheduling == "True"
    done = restore.revert(
        hosts, server, before, PurePosixPath("/opt/pbs"), PurePosixPath("/st/ptl/venv/bin"), scheduling=scheduling
    )
    assert (server.scripts, multi.scripts) == (set(), {"pbs_harness_vnodes"})
    # Every host restarted the host's way (inside pbs.service under systemd), before PTL's revert tool.
    assert server.commands[-3:] == [
        restore.RESTART_PBS,
        "PATH=/st/ptl/venv/bin:/opt/pbs/bin:/opt/pbs/sbin:$PATH pbs_config --revert-config --server --scheduler",
        '/opt/pbs/bin/qmgr -c "set sched default scheduling = True"',
    ]
    assert multi.commands[-1] == restore.RESTART_PBS
    assert "systemctl start pbs.service" in restore.RESTART_PBS
    assert "else /etc/init.d/pbs restart" in restore.RESTART_PBS
    assert done[0] == "s1: removed PTL's vnode definitions pbs_vnode_1795633596.def"
    untouched = FakeMomHost("m2", set())
    restore.revert([untouched], server, {"m2": set()}, PurePosixPath("/opt/pbs"), PurePosixPath("/b"))
    assert untouched.commands == ["/opt/pbs/sbin/pbs_mom -s list", restore.RESTART_PBS]


def test_system_hosts_get_ptl_built_here_and_copied_with_the_ssh_directory(tmp_path: Path) -> None:
    """Hosts with roots of their own share no directory with this machine: PTL is built in the state
    directory and copied into every host at the same path (SystemHost.put_tree), with the harness's ssh
    directory for root's SSH among them; the runs' files stay on the server host."""
    state_dir = tmp_path / "sy"
    state_dir.mkdir()
    (state_dir / "state.json").write_text('{"subnet": "10.9.0.0/24", "host_count": 3, "prefix": "sy"}')
    host_vars = {"pbs_harness_host_kind": "system", "local_cluster_state_dir": str(state_dir)}
    where = site.of(_inventory(host_vars))
    assert where.build_dir == state_dir / "ptl"
    assert where.bin_dir == PurePosixPath(state_dir / "ptl/venv/bin")
    assert where.ssh_config == PurePosixPath(state_dir / "ssh/config")
    assert where.copy_to_hosts == (state_dir / "ptl", state_dir / "ssh")
    assert where.work_dir == PurePosixPath(site.DEFAULT_WORK_DIR)  # not shared: read back over SSH
    namespace = site.of(_inventory({"local_cluster_host": True, "local_cluster_state_dir": str(state_dir)}))
    assert namespace.copy_to_hosts == ()  # they see this machine's /var/lib already


def test_what_ptl_s_revert_leaves_in_the_server_and_scheduler_is_put_back_as_before() -> None:
    """Seen on system hosts: after PTL and the redeploy, acl_roots, pbs_license_min and the scheduler's
    opt_backfill_fuzzy differed from before PTL (the deploy does not manage them)."""
    before = (
        "create queue workq\nset server scheduling = True\nset server pbs_license_min = 0\nset sched sched_host = s1\n"
    )
    after = (
        "create queue workq\nset server scheduling = True\nset server acl_roots = root\n"
        "set server pbs_license_min = 1\nset sched sched_host = s1\nset sched opt_backfill_fuzzy = off\n"
    )
    assert restore.config_commands(before, after) == [
        "set server pbs_license_min = 0",
        "unset server acl_roots",
        "unset sched opt_backfill_fuzzy",
    ]
    assert restore.config_commands(before, before) == []


def test_before_ptl_pbs_leaves_systemd_s_hands_and_after_it_comes_back() -> None:
    """PTL stops and starts single daemons with pbs_init.d; pbs.service (Type=forking) would run its ExecStop
    once its last daemon exited and stop those PTL started beside it. So PBS runs out of the unit during PTL
    (only where systemd runs it: namespace hosts have no systemd), and RESTART_PBS brings it back after."""
    hosts = [FakeMomHost("s1", set()), FakeMomHost("m2", set())]
    done = restore.run_pbs_the_ptl_way(hosts)
    assert [h.commands for h in hosts] == [[restore.PTL_WAY], [restore.PTL_WAY]]
    assert done == ["s1: PBS run by its init script, out of pbs.service: exit 0",
                    "m2: PBS run by its init script, out of pbs.service: exit 0"]  # fmt: skip
    assert restore.PTL_WAY.startswith("if [ -d /run/systemd/system ] && systemctl is-active --quiet pbs.service")
    assert "systemctl stop pbs.service && /etc/init.d/pbs start" in restore.PTL_WAY
    server, mom = FakeMomHost("s1", set()), FakeMomHost("m2", set())
    restore.revert([mom], server, {}, PurePosixPath("/opt/pbs"), PurePosixPath("/b"))
    assert restore.RESTART_PBS in server.commands  # the server host too, though not a mom
