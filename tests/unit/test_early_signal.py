"""Ctrl-C or SIGTERM while `pbs-harness` is still importing its CLI (issue #34: a traceback before).

The in-process tests make the import of pbs_harness.cli itself raise the interruption (a meta-path finder:
deterministic, where a timer would race the import); the subprocess test sends real signals at points
across the first half second of a real start and asserts what any of them may give: never a traceback.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from pbs_harness import __main__ as entry
from pbs_harness.common import errors

ROOT = Path(__file__).resolve().parents[2]
# A Ctrl-C in CPython's own start (its site import), before pbs_harness is imported at all.
PYTHON_OWN_START = "Fatal Python error: init_import_site"


def test_the_console_script_is_the_guarded_entry() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["pbs-harness"] == "pbs_harness.__main__:main"
    assert entry.EXIT_INTERRUPTED == errors.EXIT_INTERRUPTED


class _InterruptingImport:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def find_spec(self, name: str, path: object, target: object = None) -> None:
        if name == "pbs_harness.cli":
            raise self.exc


@pytest.mark.parametrize(
    ("exc", "how"),
    [(KeyboardInterrupt(), "Ctrl-C (SIGINT)"), (entry._TerminatedWhileStarting("signal 15"), "SIGTERM")],
)
def test_an_interruption_while_the_cli_imports_ends_with_130_and_one_line(
    exc: BaseException, how: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delitem(sys.modules, "pbs_harness.cli")
    monkeypatch.setattr(sys, "meta_path", [_InterruptingImport(exc), *sys.meta_path])
    before = signal.getsignal(signal.SIGTERM)
    assert entry.main() == 130
    assert capsys.readouterr().err == f"pbs-harness: interrupted by {how} while starting: nothing was done (exit 130)\n"
    assert signal.getsignal(signal.SIGTERM) == before


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_early_in_a_real_start_never_gives_a_traceback(signum: int) -> None:
    argv = [sys.executable, "-c", "import sys; from pbs_harness.__main__ import main; sys.exit(main())", "--version"]
    for delay in (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.6):
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)  # the point of the start the signal lands at: what is tested, not a wait
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=60)
        if err.startswith(PYTHON_OWN_START):
            continue  # CPython's own start, before any code of ours: documented in pbs_harness/__main__.py
        assert "Traceback" not in err, f"signal {signum} after {delay}s:\n{err}"
        # Done before the signal (0), interrupted by the harness (130), or killed by the signal itself
        # before Python's own startup ended (no Python code of ours ran yet: nothing printed).
        assert proc.returncode in (0, 130, -signum), (delay, proc.returncode, err)
        if proc.returncode == -signum:
            assert not err, err
