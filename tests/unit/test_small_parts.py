"""Small pure pieces: recap parsing, waits, quoting, job output sections, preflight checks."""

import itertools

import pytest

from pbs_harness.common.errors import PreconditionError
from pbs_harness.common.waits import WaitTimeout, wait_until
from pbs_harness.deploy.playbook import parse_recap
from pbs_harness.localcluster import preflight
from pbs_harness.remote.transport import as_user, to_shell
from ptl_tests import jobscripts

RECAP = """
PLAY RECAP *********************************************************************
pbsh01                     : ok=42   changed=3    unreachable=0    failed=0    skipped=5    rescued=0    ignored=0
pbsh02                     : ok=20   changed=0    unreachable=1    failed=0    skipped=2    rescued=0    ignored=0
"""


def test_parse_recap() -> None:
    recap = parse_recap(RECAP.splitlines())
    assert recap["pbsh01"].changed == 3
    assert recap["pbsh02"].unreachable == 1
    assert set(recap) == {"pbsh01", "pbsh02"}


def test_wait_until_returns_first_matching_value() -> None:
    counter = itertools.count()
    assert wait_until(lambda: next(counter), lambda v: v >= 3, timeout=5, describe="3", interval=0.001) == 3


def test_wait_until_timeout_reports_last_value() -> None:
    with pytest.raises(WaitTimeout, match=r"job_state=R; last observed: 'Q'") as err:
        wait_until(lambda: "Q", lambda v: v == "R", timeout=0.05, describe="job_state=R", interval=0.01)
    assert err.value.last == "Q"


def test_wait_until_raises_the_callers_error_built_from_the_last_value() -> None:
    with pytest.raises(PreconditionError, match=r"still Q") as err:
        wait_until(
            lambda: "Q",
            lambda v: v == "R",
            timeout=0.05,
            describe="job_state=R",
            interval=0.01,
            fail=lambda last: PreconditionError(f"still {last}", "wait longer"),
        )
    assert err.value.hint == "wait longer"


def test_commands_are_quoted() -> None:
    assert to_shell(["echo", "a b", "$X"]) == "echo 'a b' '$X'"
    assert as_user("qstat -f 'x y'", "pbsuser1") == "runuser -l pbsuser1 -c 'qstat -f '\"'\"'x y'\"'\"''"


def test_job_output_sections() -> None:
    text = "junk\n== nodefile\nh1\nh2\n== pbsdsh\nh2\n\nh1\n== end\n"
    assert jobscripts.section(text, "nodefile") == ["h1", "h2"]
    assert jobscripts.section(text, "pbsdsh") == ["h2", "h1"]


def test_not_root_is_refused_with_a_fix() -> None:
    with pytest.raises(PreconditionError, match="needs root") as err:
        preflight.check_root(lambda: 1000)
    assert "sudo" in err.value.hint


def test_missing_programs_name_their_debian_packages() -> None:
    with pytest.raises(PreconditionError, match="tini") as err:
        preflight.check_programs(lambda prog: None if prog == "tini" else f"/usr/bin/{prog}")
    assert "apt-get install -y tini" in err.value.hint


def test_list_hook_parsing_joins_continuation_lines() -> None:
    from pbs_harness.pbs.hooks import parse_list_hook

    text = (
        "Hook pbs_cgroups\n    type = site\n    enabled = false\n    event = execjob_begin,execjob_end,\n"
        "\texechost_startup\n    alarm = 90\n\nHook rjs_pad\n    enabled = true\n"
    )
    hooks = parse_list_hook(text)
    assert hooks["pbs_cgroups"]["event"] == "execjob_begin,execjob_end,exechost_startup"
    assert hooks["pbs_cgroups"]["alarm"] == "90"
    assert hooks["rjs_pad"] == {"enabled": "true"}


def test_job_output_tail_lists_each_spooled_file(tmp_path) -> None:
    """The evidence command for spooled job output, run by the local bash on a folder standing in
    for PBS_HOME/spool (the remote host is not involved)."""
    import subprocess

    from pbs_harness.pbs.evidence import collect

    (tmp_path / "12.s1.OU").write_text("task started\n")
    (tmp_path / "12.s1.ER").write_text("pbsdsh: tm_init failed\n")
    (tmp_path / "12.s1.JB").write_text("binary job file, not output\n")
    out = subprocess.run(
        ["bash", "-c", collect.SPOOL_TAIL.format(spool=tmp_path)], capture_output=True, text=True, check=False
    ).stdout
    assert out == f"==> {tmp_path}/12.s1.OU <==\ntask started\n==> {tmp_path}/12.s1.ER <==\npbsdsh: tm_init failed\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    quiet = subprocess.run(["bash", "-c", collect.SPOOL_TAIL.format(spool=empty)], capture_output=True, check=False)
    assert quiet.stdout == b""
