"""Daemon log line parsing (both timestamp resolutions OpenPBS can write), and which host and
directory a cluster's log readers read."""

from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

from pbs_harness.pbs.evidence.logs import mom_log, parse_line, sched_log, server_log


def test_high_resolution_line() -> None:
    line = parse_line("11/21/2026 16:20:00.123456;0100;Server@pbsh01;Job;12.pbsh01;Job Queued at request of u")
    assert line is not None
    assert line.time == datetime(2026, 11, 21, 16, 20, 0, 123456)
    assert line.event == 0x100
    assert (line.source, line.obj_class, line.obj) == ("Server@pbsh01", "Job", "12.pbsh01")
    assert line.message == "Job Queued at request of u"


def test_message_may_contain_semicolons_and_low_resolution_time() -> None:
    line = parse_line("11/21/2026 16:20:00;0008;pbs_mom;Job;3.s;a;b")
    assert line is not None
    assert line.message == "a;b"


def test_garbage() -> None:
    assert parse_line("hello") is None
    assert parse_line("xx/21/2026 16:20:00;0008;a;b;c;d") is None


def test_a_clusters_readers_read_the_daemons_directory_on_its_host() -> None:
    hosts = {"srv": SimpleNamespace(name="srv"), "ex1": SimpleNamespace(name="ex1")}
    cluster = SimpleNamespace(hosts=hosts, server=hosts["srv"], pbs_home=Path("/var/spool/pbs"))
    got = {
        reader.daemon: (reader.host.name, reader.dir)
        for reader in (server_log(cluster), sched_log(cluster), mom_log(cluster, "ex1"))  # type: ignore[arg-type]
    }
    assert got == {
        "server": ("srv", "/var/spool/pbs/server_logs"),
        "sched": ("srv", "/var/spool/pbs/sched_logs"),
        "mom": ("ex1", "/var/spool/pbs/mom_logs"),
    }
