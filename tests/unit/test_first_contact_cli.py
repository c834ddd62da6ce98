"""Issue #34, the command line: values refused before anything runs, no abbreviations, the verb's own usage,
the exit codes in every --help, and Ctrl-C/SIGTERM while `test --help` asks pytest for its options.

Each test runs `pbs-harness ...` (cli.main, in this process) and checks the README's exit code, the message,
no traceback, and that nothing started: the next step (loading an inventory, bringing a cluster up, taking
one down) is a tripwire that fails the test. The signal tests FAKE the pytest child of `test --help`
(subprocess.run) with a function that raises Ctrl-C, or sends this process a real SIGTERM.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pbs_harness.cli import argv as cli_argv
from pbs_harness.common import errors
from pbs_harness.localcluster import provider
from pbs_harness.remote import inventory
from tests.unit.badinput import ROOT, assert_refused, run_cli

USAGE = errors.EXIT_USAGE


@pytest.fixture
def nothing_starts(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    def tripwire(*_: object, **__: object) -> None:
        raise AssertionError("the refused command went on to real work")

    monkeypatch.setattr(inventory, "load", tripwire)
    monkeypatch.setattr(provider, "up", tripwire)
    monkeypatch.setattr(provider, "down", tripwire, raising=False)
    return isolated


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        # 1e9 and 3000000 used to end in `OverflowError: timeout is too large` (exit 1, a traceback)
        (["deploy", "--connect-timeout", "1e9"], "1e9 is out of range: give between 0.1 and 3600 seconds"),
        (["verify", "--connect-timeout", "3000000"], "3000000 is out of range: give between 0.1 and 3600 seconds"),
        # 1e-9 used to be taken: every host then "did not answer"
        (["deploy", "--connect-timeout", "1e-9"], "1e-9 is out of range: give between 0.1 and 3600 seconds"),
        (["up", "--connect-timeout", "7200"], "7200 is out of range"),
    ],
)
def test_connect_timeout_out_of_range(
    argv: list[str], says: str, nothing_starts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_refused(*run_cli(argv, capsys), USAGE, "argument --connect-timeout: " + says)


def test_connect_timeout_overflow_through_the_real_entry_point() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pbs_harness", "deploy", "--connect-timeout", "1e9", "-i", "/nonexistent"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == USAGE, proc.stderr
    assert "1e9 is out of range" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["down", "--state-dir", ""],
        ["status", "--state-dir", " "],
        ["up", "--state-dir", ""],
        ["cluster", "up", "--state-dir", ""],
        ["cluster", "down", "--state-dir="],
        ["test", "--state-dir", "", "--clusters", "2"],
    ],
)
def test_empty_state_dir_is_refused_not_the_default(
    argv: list[str], nothing_starts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--state-dir "$DIR"` with DIR unset used to act on $PBS_HARNESS_STATE_DIR's or the default cluster."""
    rc, out = run_cli(argv, capsys)
    assert_refused(rc, out, USAGE, "argument --state-dir: an empty path names no state directory")
    assert "leave --state-dir out" in out
    assert not (nothing_starts / "state").exists()


@pytest.mark.parametrize("value", ["", ",", "install,", "install,,hooks"])
def test_an_empty_tag_is_named(value: str, nothing_starts: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = run_cli(["deploy", "--tags", value], capsys)
    assert_refused(rc, out, USAGE, f"argument --tags: {value!r} holds an empty tag name", "install")


def test_tags_help_lists_every_tag_deploy_takes(capsys: pytest.CaptureFixture[str]) -> None:
    from pbs_harness.cli.common import known_tags

    rc, out = run_cli(["deploy", "--help"], capsys)
    assert rc == 0
    flat = " ".join(out.split())
    assert ", ".join(sorted(known_tags(ROOT))) in flat


@pytest.mark.parametrize("verb", ["up", "deploy"])
def test_the_readme_cli_block_lists_every_option(verb: str) -> None:
    """#34's done-when: the README's CLI block lists every option of `up` (it lacked --flavour, --image and
    --openpbs, later --idempotence); deploy's too. Read from the real parser, so a new option fails here until
    the README names it."""
    from pbs_harness import cli

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")  # argparse keeps its verbs nowhere public
    block = (ROOT / "README.md").read_text()
    missing = []
    for action in sub.choices[verb]._actions:
        names = [o for o in action.option_strings if o != "-h"]
        if names and not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", block) for o in names):
            missing.append(names[-1])
    assert not missing, f"README's CLI block does not list {verb}'s {', '.join(missing)}"


@pytest.mark.parametrize(
    ("argv", "verb", "unknown"),
    [
        (["deploy", "--conn", "2"], "deploy", "--conn 2"),  # used to be taken as --connect-timeout
        (["up", "--host", "3"], "up", "--host 3"),  # used to be taken as --hosts
        (["cluster", "up", "--sub", "10.71.0.0/24"], "cluster up", "--sub"),
        (["verify", "--no-such-opt"], "verify", "--no-such-opt"),
        (["report", "--resul", "x.json"], "report", "--resul"),
    ],
)
def test_no_abbreviations_and_the_verbs_own_usage(
    argv: list[str], verb: str, unknown: str, nothing_starts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out = run_cli(argv, capsys)
    assert_refused(rc, out, USAGE, f"usage: pbs-harness {verb}", f"unrecognized arguments: {unknown}")
    assert "usage: pbs-harness [-h]" not in out  # not the top-level usage


@pytest.mark.parametrize("argv", [["--help"], ["deploy", "--help"], ["up", "--help"], ["cluster", "up", "--help"]])
def test_every_help_lists_the_exit_codes(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = run_cli(argv, capsys)
    assert rc == 0
    assert "exit codes:" in out
    for code, meaning in errors.EXIT_CODES:
        assert f"{code:>3}  {meaning}" in out


def test_top_level_help_speaks_to_users(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = run_cli(["--help"], capsys)
    assert rc == 0
    assert "One module per concern" not in out
    assert "pbs-harness up" in out
    assert "pbs-harness test" in out
    assert "local cluster of namespaced hosts" not in out  # `cluster` runs system hosts too


def test_test_help_shows_the_exit_codes_too(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(cli_argv, "_pytest_help", lambda *_: "PYTEST OPTIONS")
    rc, out = run_cli(["test", "--help"], capsys)
    assert rc == 0
    assert "exit codes:" in out
    assert "PYTEST OPTIONS" in out


def test_ctrl_c_during_test_help(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while pytest prints its options used to end in a traceback from argparse/subprocess."""

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_argv, "_pytest_help", interrupted)
    rc, out = run_cli(["test", "--help"], capsys)
    assert rc == errors.EXIT_INTERRUPTED
    assert "interrupted by Ctrl-C (SIGINT): stopped while reading the command line; nothing was started" in out
    assert "Traceback" not in out


def test_sigterm_during_test_help(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A real SIGTERM to this process while `test --help` waits on pytest: used to exit 143 with no word."""

    def terminated(*_: object, **__: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the verb")

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(cli_argv, "_pytest_help", terminated)
    rc, out = run_cli(["test", "--help"], capsys)
    assert rc == errors.EXIT_INTERRUPTED
    assert "interrupted by SIGTERM: stopped while reading the command line; nothing was started (exit 130)" in out
    assert "Traceback" not in out
    assert signal.getsignal(signal.SIGTERM) == before  # the handler is put back


def test_ctrl_c_while_the_parser_is_built(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Building the parser imports the verbs' modules (most of a second on a loaded machine): Ctrl-C there,
    "one second into `test --help`" as issue #34 did it, still ended in a traceback. FAKE build_parser: it
    is interrupted."""
    import pbs_harness.cli as cli_module

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_module, "build_parser", interrupted)
    rc, out = run_cli(["test", "--help"], capsys)
    assert rc == errors.EXIT_INTERRUPTED
    assert "interrupted by Ctrl-C (SIGINT): stopped while reading the command line; nothing was started" in out
    assert "Traceback" not in out


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_inside_popen_still_ends_pytest_help(signum: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The signal lands after the fork, before Popen() has returned a process object (the window
    test_sigterm_during_test_help_through_the_real_entry_point hit: its leak check found the pytest --help
    child still running). Popen is wrapped to send the signal to this process right there; the child (a real
    process that sleeps in place of pytest) must be ended and reaped, and the signal reach the caller."""
    real_popen = subprocess.Popen
    started: list[int] = []

    def popen_then_signal(*args: object, **kwargs: object) -> subprocess.Popen:
        proc = real_popen(*args, **kwargs)  # type: ignore[call-overload]
        started.append(proc.pid)
        os.kill(os.getpid(), signum)
        return proc

    class Stop(KeyboardInterrupt):
        pass

    def stop(*_: object) -> None:
        raise Stop

    monkeypatch.setattr(subprocess, "Popen", popen_then_signal)
    before = signal.signal(signum, stop)
    try:
        with pytest.raises(Stop):
            cli_argv._pytest_help([sys.executable, "-c", "import time; time.sleep(60)"], ROOT)
    finally:
        signal.signal(signum, before)
    assert started, "no child was started"
    with pytest.raises(ProcessLookupError):  # ended and reaped: no such process any more
        os.kill(started[0], 0)


def test_sigterm_during_test_help_through_the_real_entry_point(tmp_path: Path) -> None:
    """The installed command in its own process, SIGTERM while pytest (the real one) prints its options."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pbs_harness", "test", "--help"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Signalled once its pytest child runs: the line is being parsed then (the handler is set before that).
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    deadline = time.monotonic() + 60
    while not children.read_text().split() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.fail("pytest --help finished before the signal: nothing was tested")
    assert proc.returncode == errors.EXIT_INTERRUPTED, err
    assert "Traceback" not in out + err
