"""Job-written files made, read and removed where they are (pbs_harness/suite/jobfiles.py), and how an
inventory says the homes are shared (Inventory.shared_home from the moms' $usecp lines).

Fakes: each host is a dict of file contents answering `cat`, `mkdir -p` and `rm -rf` as coreutils
would; a "shared" cluster gives every host the same dict (one /home, as NFS or the namespace local
cluster), a "separate" one a dict per host (system local hosts, VMs without NFS). No SSH, no PBS."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from pbs_harness.remote.inventory import parse, usecp_shares
from pbs_harness.remote.transport import CommandError, CommandResult
from pbs_harness.suite.faults import Nemesis
from pbs_harness.suite.jobfiles import JobFiles, merge
from ptl_tests import jobscripts

HOSTS = ["h1", "h2", "h3"]  # h1 is the server host, hence the client


@dataclass
class FakeHost:
    name: str
    disk: dict[str, str]  # path -> content; a directory is a path with the value "<dir>"
    log: list[str] = field(default_factory=list)
    unreadable: bool = False  # cat fails with something other than "no such file"

    def run(self, cmd, *, user=None, timeout=120, stdin=None) -> CommandResult:
        words = list(cmd)
        self.log.append(" ".join(words))
        out, err, rc = "", "", 0
        if words[:2] == ["cat", "--"]:
            path = words[2]
            if self.unreadable:
                rc, err = 1, f"cat: {path}: Permission denied"
            elif path in self.disk:
                out = self.disk[path]
            else:
                rc, err = 1, f"cat: {path}: No such file or directory"
        elif words[:2] == ["mkdir", "-p"]:
            self.disk[words[2]] = "<dir>"
        elif words[:3] == ["rm", "-rf", "--"]:
            for path in words[3:]:
                for p in [p for p in self.disk if p == path or p.startswith(path + "/")]:
                    del self.disk[p]
        else:
            raise AssertionError(f"unexpected command {words}")
        return CommandResult(self.name, " ".join(words), rc, out, err, user or "root")

    def check(self, cmd, **kwargs) -> CommandResult:
        res = self.run(cmd, **kwargs)
        if not res.ok:
            raise CommandError(res)
        return res


def inventory(usecp: list[str]):
    hostvars = {h: {"openpbs_mom_usecp": usecp} for h in HOSTS}
    data = {
        "_meta": {"hostvars": hostvars},
        "all": {"children": ["pbs_server", "pbs_moms"]},
        "pbs_server": {"hosts": ["h1"]},
        "pbs_moms": {"hosts": HOSTS},
    }
    return parse(data, Path("inv"))


def cluster(shared: bool):
    one_home: dict[str, str] = {}
    hosts = {h: FakeHost(h, one_home if shared else {}) for h in HOSTS}
    inv = inventory(["*:/home /home"] if shared else [])
    return SimpleNamespace(inventory=inv, hosts=hosts, client=hosts["h1"])


# --- the inventory says whether homes are shared ----------------------------------------------


def test_the_namespace_flavours_usecp_map_means_shared_homes_and_none_means_separate() -> None:
    assert inventory(["*:/home /home"]).shared_home
    assert not inventory([]).shared_home
    assert inventory(["*:/home /home"]).home("pbsuser1") == "/home/pbsuser1"


@pytest.mark.parametrize(
    ("lines", "shared"),
    [
        (["*:/ /"], True),  # a parent directory of the homes
        (["*:/home/ /home/"], True),  # trailing slashes
        (["h*:/home /home"], True),  # a wildcard matching every host
        (["h1:/home /home", "h[23]:/home /home"], True),  # several lines covering the hosts between them
        (["h1:/home /home"], False),  # not every host
        (["*:/home /nfs/home"], False),  # mapped somewhere else: not the same path on every host
        (["*:/home/pbsuser1 /home/pbsuser1"], False),  # one home only, not the parent of all
        (["*:/ho /ho"], False),  # a string prefix, not a parent directory
        (["garbage"], False),
    ],
)
def test_usecp_lines_share_the_homes_only_when_they_map_them_onto_themselves_for_every_host(lines, shared) -> None:
    assert usecp_shares(lines, "/home", HOSTS) is shared


def test_one_mom_without_the_map_means_the_homes_are_not_shared() -> None:
    inv = inventory(["*:/home /home"])
    inv.hosts["h3"].vars["openpbs_mom_usecp"] = []
    assert not inv.shared_home


def test_the_home_base_comes_from_the_inventory() -> None:
    inv = inventory(["*:/export/home /export/home"])
    for host in inv.hosts.values():
        host.vars["openpbs_common_home_base"] = "/export/home/"
    assert inv.home("u") == "/export/home/u"
    assert inv.shared_home


# --- merging -----------------------------------------------------------------------------------


def test_merge_keeps_every_hosts_lines_once_in_host_order_and_never_joins_two_lines() -> None:
    assert merge({"h1": "a\nb\n", "h2": None, "h3": "c"}) == "a\nb\nc\n"
    assert merge({"h1": "a", "h2": "b"}) == "a\nb\n"  # a last line without newline stays a line
    assert merge({"h1": None, "h2": ""}) == ""


# --- reading where the jobs wrote --------------------------------------------------------------


def pid_lines(c, path: str) -> None:
    """What sleepers_recording_pids leaves: the script's sleep on h2 (the primary), a task on each host."""
    for host, records in {"h2": ["h2 11 script", "h2 12 task"], "h3": ["h3 21 task"]}.items():
        c.hosts[host].disk[path] = c.hosts[host].disk.get(path, "") + "".join(r + "\n" for r in records)


@pytest.mark.parametrize("shared", [True, False], ids=["shared-homes", "separate-homes"])
def test_each_pid_record_is_read_exactly_once_on_either_kind_of_cluster(shared) -> None:
    c = cluster(shared)
    files = JobFiles(c)
    path = "/home/u/kit/as0.pids"
    pid_lines(c, path)
    records = jobscripts.pid_records(files.read(path))
    assert sorted(records) == [("h2", 11, "script"), ("h2", 12, "task"), ("h3", 21, "task")]
    if shared:  # one filesystem: read once, on the client
        assert [h for h in HOSTS if c.hosts[h].log] == ["h1"]
        assert files.where() == "on h1 (shared homes)"
    else:
        assert all(c.hosts[h].log == [f"cat -- {path}"] for h in HOSTS)
        assert files.where() == "on h1, h2, h3"


def test_a_file_no_job_wrote_yet_reads_empty_and_other_errors_are_raised() -> None:
    c = cluster(False)
    files = JobFiles(c)
    assert files.read("/home/u/none") == ""
    assert files.read_each("/home/u/none") == {"h1": None, "h2": None, "h3": None}
    c.hosts["h2"].unreadable = True
    with pytest.raises(CommandError, match="Permission denied"):
        files.read("/home/u/none")


def test_reading_some_hosts_only() -> None:
    c = cluster(False)
    pid_lines(c, "/p")
    assert JobFiles(c).read("/p", hosts=["h3"]) == "h3 21 task\n"
    assert c.hosts["h2"].log == []


@dataclass
class FakeFault:
    target: str
    kind: str

    def start(self) -> None: ...

    def heal(self) -> None: ...


def test_a_host_the_test_took_out_of_reach_is_not_read_and_is_cleaned_after_the_heal() -> None:
    c = cluster(False)
    nemesis = Nemesis()
    files = JobFiles(c, nemesis)
    files.make_dir("/home/u/kit", "u")
    pid_lines(c, "/home/u/kit/as0.pids")
    nemesis.start(FakeFault("h3", "host-pause"))
    nemesis.start(FakeFault("h2", "mom-stop"))  # only pbs_mom stopped: the host is still read
    assert files.read("/home/u/kit/as0.pids") == "h2 11 script\nh2 12 task\n"
    assert files.where() == "on h1, h2 (out of reach: h3)"
    assert "cat -- /home/u/kit/as0.pids" not in c.hosts["h3"].log

    files.remove("/home/u/kit")
    assert "/home/u/kit" not in c.hosts["h2"].disk
    assert "/home/u/kit" in c.hosts["h3"].disk  # paused: its removal waits for the heal
    assert nemesis.heal_all() == []
    assert not any(c.hosts[h].disk for h in HOSTS)


# --- directories -------------------------------------------------------------------------------


@pytest.mark.parametrize("shared", [True, False], ids=["shared-homes", "separate-homes"])
def test_the_directory_is_made_and_removed_wherever_a_job_may_write(shared) -> None:
    c = cluster(shared)
    files = JobFiles(c)
    files.make_dir("/home/u/kit", "u")
    assert all(c.hosts[h].disk == {"/home/u/kit": "<dir>"} for h in HOSTS)
    c.hosts["h2"].disk["/home/u/kit/x.pids"] = "h2 1 task\n"
    files.remove("/home/u/kit")
    assert not any(c.hosts[h].disk for h in HOSTS)
    expected = ["h1"] if shared else HOSTS
    assert [h for h in HOSTS if "mkdir -p /home/u/kit" in c.hosts[h].log] == expected
    assert [h for h in HOSTS if "rm -rf -- /home/u/kit" in c.hosts[h].log] == expected


# --- the report job's task lines ---------------------------------------------------------------


def test_the_report_jobs_tasks_need_no_file_on_the_hosts_they_run_on() -> None:
    """Each task's command is given whole on its command line (no script file that only the primary has)."""
    script = jobscripts.pruned_job_report("/opt/pbs", "/home/u/kit/rs0.report", 2, ["h1", "h2"], 600)
    assert ".sh" not in script
    assert 'pbsdsh -n "$i" -- /bin/bash -c \'echo "$1 $(hostname)" >> /home/u/kit/rs0.report.tasks\' task' in script
    assert 'pbs_tmrsh "$h" /bin/bash -c \'echo "$1 $(hostname)" >> /home/u/kit/rs0.report.tasks\' task' in script


# --- the kits on separate homes ----------------------------------------------------------------


def startup_kit(c):
    from ptl_tests.reliable_startup_helpers import StartupKit

    c.server, c.prefix, c.pbs_home = c.hosts["h1"], Path("/opt/pbs"), Path("/var/spool/pbs")
    roles = SimpleNamespace(primary="h2", owner="u")
    return StartupKit(None, c, roles)  # type: ignore[arg-type] - no job is submitted here


def test_the_startup_kits_report_holds_the_task_lines_of_every_host_once() -> None:
    """The report job ran on h2 (primary) and h3; pbs_tmrsh to h1, outside the job, was refused."""
    from ptl_tests.reliable_startup.jobs import assert_reach

    c = cluster(False)
    kit = startup_kit(c)
    assert all(c.hosts[h].disk == {kit.dir: "<dir>"} for h in HOSTS)
    report = kit.report_path("rs0")
    c.hosts["h2"].disk[report] = (
        "== nodefile\nh2\nh3\n== pbsdsh\n0 rc=0\n1 rc=0\n2 rc=0\n== tmrsh\n"
        'h1 rc=255 pbs_tmrsh: host "h1" is not a node in job <1.h1>\nh2 rc=0\nh3 rc=0\n== end\n'
    )
    c.hosts["h2"].disk[f"{report}.tasks"] = "pbsdsh-0 h2\ntmrsh-h2 h2\npbsdsh-2 h2\n"
    c.hosts["h3"].disk[f"{report}.tasks"] = "pbsdsh-1 h3\ntmrsh-h3 h3\n"
    text = kit.report("rs0", timeout=1)
    tasks = ["pbsdsh-0 h2", "tmrsh-h2 h2", "pbsdsh-2 h2", "pbsdsh-1 h3", "tmrsh-h3 h3"]  # host by host
    assert jobscripts.section(text, "tasks") == tasks
    assert_reach(text, "1.h1", ["h2", "h3"], {h: h for h in HOSTS})
    # A task that ran on a host outside the job is seen on that host, and fails the check.
    c.hosts["h1"].disk[f"{report}.tasks"] = "tmrsh-h1 h1\n"
    with pytest.raises(AssertionError):
        assert_reach(kit.report("rs0", timeout=1), "1.h1", ["h2", "h3"], {h: h for h in HOSTS})
    kit.cleanup()
    assert not any(c.hosts[h].disk for h in HOSTS)


# --- the hosts at once -------------------------------------------------------------------------


def test_separate_homes_are_made_read_and_removed_on_every_host_at_once() -> None:
    """Each fake host waits at a barrier of 3 before it answers: the three hosts' commands must be
    running together (one after another, the barrier breaks after its 5 s). Every host's copy is still
    read, in the hosts' order, and each one's own text kept."""
    import threading

    c = cluster(shared=False)
    barrier = threading.Barrier(len(HOSTS), timeout=5)
    for host in c.hosts.values():
        plain = host.run

        def waiting(cmd, *, _plain=plain, **kwargs):
            barrier.wait()
            return _plain(cmd, **kwargs)

        host.run = waiting
    files = JobFiles(c)
    files.make_dir("/home/u/t", "u")
    assert all(h.disk == {"/home/u/t": "<dir>"} for h in c.hosts.values())
    c.hosts["h3"].disk["/home/u/t/pids"] = "h3 7\n"
    c.hosts["h1"].disk["/home/u/t/pids"] = "h1 5\n"
    assert files.read_each("/home/u/t/pids") == {"h1": "h1 5\n", "h2": None, "h3": "h3 7\n"}
    assert files.read("/home/u/t/pids") == "h1 5\nh3 7\n"
    files.remove("/home/u/t")
    assert all(h.disk == {} for h in c.hosts.values())
