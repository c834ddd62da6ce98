"""The job kit (ptl_tests/kit.py) and the suites' kits: the exact commands they send, so one shared
`submit` keeps each suite's jobs as they were (names, output files, defaults, working directory,
what cleanup removes). A scripted fake host records the command lines; no OpenPBS, no cluster."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from pbs_harness.pbs.client import Pbs
from pbs_harness.pbs.substates import RUNNING
from pbs_harness.remote.transport import CommandResult
from ptl_tests.admin_suspend_helpers import SuspendKit
from ptl_tests.kit import JobKit
from ptl_tests.reliable_startup_helpers import ORIGINAL_SELECT, StartupKit

BIN = "/opt/pbs/bin"
QSUB = f"{BIN}/qsub"


@dataclass
class Host:
    """qsub answers <n>.s; qstat shows a job running until qdel -W force ends it; every
    (user, line, stdin) is logged."""

    name: str = "client"
    log: list[tuple[str | None, str, str | None]] = field(default_factory=list)
    submitted: int = 0
    deleted: set[str] = field(default_factory=set)

    def run(self, cmd, *, user=None, timeout=120, stdin=None) -> CommandResult:
        text = cmd if isinstance(cmd, str) else " ".join(cmd)
        self.log.append((user, text, stdin))
        out = ""
        if "/qsub " in text:
            self.submitted += 1
            out = f"{self.submitted}.s\n"
        elif "/qdel -W force " in text:
            self.deleted.add(text.split()[-1])
        elif "/qstat " in text:
            job = text.split()[-1]
            state = {"job_state": "F"} if job in self.deleted else {"job_state": "R", "substate": RUNNING}
            out = json.dumps({"Jobs": {job: state}})
        return CommandResult(self.name, text, 0, out, "")

    check = run


@pytest.fixture
def host() -> Host:
    return Host()


def parts(host: Host):
    """A cluster whose homes are shared (as the namespace local cluster's): the kit acts on the client alone."""
    cluster = SimpleNamespace(
        client=host,
        server=host,
        prefix=Path("/opt/pbs"),
        pbs_home=Path("/var/spool/pbs"),
        hosts={"client": host, "p": host},
        inventory=SimpleNamespace(home=lambda user: f"/home/{user}", shared_home=True),
    )
    return Pbs(cluster, host), cluster  # type: ignore[arg-type]


def test_the_admin_suspend_kit_submits_as_before(host) -> None:
    kit = SuspendKit(*parts(host), "alice")
    d = kit.dir
    assert d.startswith("/home/alice/pbsh-as-")
    assert len(d) == len("/home/alice/pbsh-as-") + 8
    assert kit.next_name == "as0"
    kit.submit(select="1:ncpus=1:host=h1", args=["-h"])
    kit.submit(queue="R5")
    kit.submit("echo hi\n", select="1:ncpus=1", place="excl", array="1-2", resources={"walltime": "1:00"}, user="bob")
    kit.running(select="1:ncpus=1", queue="q", args=["-h"])
    assert kit.jobs == ["1.s", "2.s", "3.s", "4.s"]
    assert kit.next_name == "as4"
    sleep = "-- /bin/sleep 600"
    assert host.log == [
        ("alice", f"mkdir -p {d}", None),
        ("alice", f"{QSUB} -l select=1:ncpus=1:host=h1 -N as0 -j oe -o {d}/as0.out -h {sleep}", None),
        ("alice", f"{QSUB} -N as1 -j oe -o {d}/as1.out -q R5 {sleep}", None),
        (
            "bob",
            f"{QSUB} -l select=1:ncpus=1 -l place=excl -l walltime=1:00 -J 1-2 -N as2 -j oe -o {d}/as2.out",
            "echo hi\n",
        ),
        ("alice", f"{QSUB} -l select=1:ncpus=1 -N as3 -j oe -o {d}/as3.out -h -q q {sleep}", None),
        (None, f"{BIN}/qstat -fx -F json 4.s", None),  # running() waits until it runs
    ]
    host.log.clear()
    kit.cleanup()
    purges = [
        line
        for job in ("1.s", "2.s", "3.s", "4.s")
        for line in (f"{BIN}/qdel -W force {job}", f"{BIN}/qstat -fx -F json {job}", f"{BIN}/qdel -x -W force {job}")
    ]
    assert [line for _, line, _ in host.log] == [*purges, f"rm -rf -- {d}"]  # deleted AND purged from the history
    assert kit.jobs == []


def test_the_reliable_startup_kit_submits_the_standard_job_from_its_directory(host) -> None:
    kit = StartupKit(*parts(host), SimpleNamespace(primary="p", owner="alice"))  # type: ignore[arg-type]
    d = kit.dir
    assert d.startswith("/home/alice/pbsh-rs-")
    assert (kit.user, kit.primary, kit.report_path("rs0")) == ("alice", "p", f"{d}/rs0.report")
    kit.submit()
    kit.submit("echo hi\n")
    kit.submit(select="ncpus=1", place=None)  # None: no place at all, not the default
    kit.submit(select="x", array="1-2", attributes={"max_run_subjobs": 1}, args=["-h"], user="bob")
    std = f"-l select={ORIGINAL_SELECT} -l place=scatter"
    cd, sleep = f"cd {d} && {QSUB}", "-- /bin/sleep 600"
    assert host.log == [
        ("alice", f"mkdir -p {d}", None),
        ("alice", f"{cd} {std} -N rs0 -j oe -o {d}/rs0.out {sleep}", None),
        ("alice", f"{cd} {std} -N rs1 -j oe -o {d}/rs1.out", "echo hi\n"),
        ("alice", f"{cd} -l select=ncpus=1 -N rs2 -j oe -o {d}/rs2.out {sleep}", None),
        (
            "bob",
            f"{cd} -l select=x -l place=scatter -W max_run_subjobs=1 -J 1-2 -N rs3 -j oe -o {d}/rs3.out -h {sleep}",
            None,
        ),
    ]
    host.log.clear()
    kit.cleanup()  # the baseline restore deletes the suite's jobs: cleanup only removes the directory
    assert host.log == [(None, f"rm -rf -- {d}", None)]


def test_the_base_kit_asks_for_nothing_it_was_not_given(host) -> None:
    kit = JobKit(*parts(host), "carol")
    assert kit.submit() == "1.s"
    assert host.log[-1] == ("carol", f"{QSUB} -N job0 -j oe -o {kit.dir}/job0.out -- /bin/sleep 600", None)
