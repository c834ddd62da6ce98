"""An evidence folder's merged timeline and index.html (#35): commands, faults, daemon log lines and
accounting records in one wall-clock order; the transcript's commands carry their start time and leave
out whole-log reads; faults.txt says what its offsets are from. Built from objects made here (the log
lines and accounting records are written in OpenPBS's formats, not read from a cluster)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from pbs_harness.pbs.evidence import accounting, collect, page, timeline
from pbs_harness.pbs.evidence.logs import parse_line
from pbs_harness.remote.transport import CommandResult
from pbs_harness.suite.faults.log import FaultEvent, FaultLog

T0 = datetime(2026, 11, 28, 2, 30, 0)


def _entries() -> tuple[list[timeline.Entry], list[tuple[datetime, CommandResult]]]:
    commands = [
        (T0 + timedelta(seconds=1.5), CommandResult("pa01", "qsub -l select=2 job.sh", 0, "1.pa01\n", "", seconds=0.5)),
        (T0 + timedelta(seconds=9), CommandResult("pa01", "cat /var/spool/pbs/server_logs/20261128", 0, "a\nb\n", "")),
    ]
    faults = [FaultEvent(T0 + timedelta(seconds=3.2), 3.0, "start", "host-crash", "pa03", "cgroup", 0.2)]
    server = parse_line("11/28/2026 02:30:02;0100;Server@pa01;Job;1.pa01;enqueuing into workq, state Q hop 1")
    mom = parse_line("11/28/2026 02:30:04;0008;pbs_mom;Job;1.pa01;kill_job")
    assert server is not None
    assert mom is not None
    records = accounting.parse("11/28/2026 02:30:05;E;1.pa01;user=u Exit_status=0")
    entries = timeline.merge(
        timeline.from_commands(commands),
        timeline.from_faults(faults),
        timeline.from_logs({"pa01": {"server": [server], "comm": [server]}, "pa02": {"mom": [mom]}}),
        timeline.from_accounting(records, "pa01"),
    )
    return entries, commands


def test_the_timeline_merges_every_source_in_wall_clock_order() -> None:
    entries, _ = _entries()
    assert [(e.source, e.host) for e in entries] == [
        ("command", "pa01"),  # qsub started at 02:30:01.0 (ended 1.5 s in, took 0.5 s)
        ("server", "pa01"),
        ("fault", "pa03"),  # the crash began at 3.0 s
        ("mom", "pa02"),
        ("accounting", "pa01"),
        ("command", "pa01"),
    ]  # comm_logs left out
    assert entries[0].line().startswith("02:30:01.000 command    pa01       $ qsub -l select=2 job.sh  # rc=0")


def test_index_html_links_every_file_and_shows_the_timeline(tmp_path: Path) -> None:
    entries, commands = _entries()
    (tmp_path / "logs" / "pa01").mkdir(parents=True)
    (tmp_path / "logs" / "pa01" / "server.log").write_text("x\n")
    collect.write_transcript(tmp_path / "transcript.txt", commands)
    timeline.write(tmp_path / "timeline.txt", entries, T0)
    page.write(tmp_path, "t.py::test_x", "xfailed (a known OpenPBS bug)", "pa", entries)
    index = (tmp_path / "index.html").read_text()
    for name in ("logs/pa01/server.log", "transcript.txt", "timeline.txt"):
        assert f"href='{name}'" in index
    assert "xfailed (a known OpenPBS bug)</b> on cluster pa" in index
    assert index.count("<tr style=") == len(entries)


def test_the_transcript_times_commands_and_skips_whole_log_reads(tmp_path: Path) -> None:
    _, commands = _entries()
    collect.write_transcript(tmp_path / "transcript.txt", commands)
    text = (tmp_path / "transcript.txt").read_text()
    assert "$ [02:30:01.000] [root@pa01] qsub -l select=2 job.sh\n# rc=0 (500 ms)\n1.pa01\n" in text
    assert "# (2 log lines read; the test's window is in logs/ and accounting.txt)" in text
    assert "\na\nb\n" not in text


def test_faults_txt_says_what_its_offsets_are_from(tmp_path: Path) -> None:
    log = FaultLog()
    log.write(tmp_path / "faults.txt")
    head = (tmp_path / "faults.txt").read_text().splitlines()
    assert head[0].startswith("# offsets (+s) are seconds from the test's start, 20")
    assert head[-1] == "no fault was injected"


def test_fault_windows_run_from_start_to_heal() -> None:
    log = FaultLog()
    log.events += [
        FaultEvent(T0 + timedelta(seconds=2), 1.0, "start", "host-crash", "pa03", "cgroup", 1.0),
        FaultEvent(T0 + timedelta(seconds=9), 8.0, "heal", "host-crash", "pa03", "cgroup", 0.5),
        FaultEvent(T0 + timedelta(seconds=10), 9.0, "start", "mom-stop", "pa02", "ssh", 0.0),
    ]
    assert log.windows() == [
        {
            "kind": "host-crash",
            "target": "pa03",
            "started": "2026-11-28T02:30:01.000",
            "healed": "2026-11-28T02:30:09.000",
        },
        {"kind": "mom-stop", "target": "pa02", "started": "2026-11-28T02:30:10.000"},
    ]


def test_a_fault_action_with_its_begin_and_end_lines_is_one_timeline_entry() -> None:
    """Every fault action logs a begin line and an end line; the timeline shows it once, at its start."""
    log = FaultLog()
    log.events += [
        FaultEvent(T0 + timedelta(seconds=1), 1.0, "start", "host-crash", "pa03", "cgroup", 0.0, ended=False),
        FaultEvent(T0 + timedelta(seconds=2), 1.0, "start", "host-crash", "pa03", "cgroup", 1.0),
    ]
    assert [(e.time, e.text) for e in timeline.from_faults(log.events)] == [
        (T0 + timedelta(seconds=1), "start host-crash via cgroup")
    ]
