"""Ctrl-C or SIGTERM while `pbs-harness` is still importing its CLI (issue #34: a traceback before).

The in-process tests make the import of pbs_harness.cli itself raise the interruption (a meta-path finder:
deterministic, where a timer would race the import); the subprocess test sends real signals at points
across the first half second of a real start and asserts what any of them may give: never a traceback.
"""

from __future__ import annotations

import os
import select
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
SETTLED = 0.02  # s: main()'s first two statements install its handlers; under load they took a few ms


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
    """Real signals across a real start, the CLI's import included. What is judged is a signal that landed
    once main() was called (SETTLED s before): the program writes a byte to a pipe just before it calls
    main(). One that landed before (CPython's own start, then the console script's import of
    pbs_harness.__main__: no handler of ours can be in place yet) is not judged. The delays follow this
    machine's start, timed first (under load it took over a second), and one at least must land after."""
    to_main = _time_to_main()
    judged = 0
    for delay in (0.05, 0.1, 0.2, *(to_main + d for d in (0.03, 0.06, 0.1, 0.15, 0.2, 0.3, 0.45, 0.7, 1.0, 1.5))):
        started_r, started_w = os.pipe()
        program = (
            f"import os, sys; from pbs_harness.__main__ import main; os.write({started_w}, b'm'); sys.exit(main())"
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", program, "--version"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            pass_fds=(started_w,),
        )
        os.close(started_w)
        # Until the point of the start the signal lands at (what is tested, not a wait), watching for the
        # moment main() is called.
        t0 = time.monotonic()
        main_called_at = None
        while (now := time.monotonic()) - t0 < delay:
            if main_called_at is None and select.select([started_r], [], [], 0.005)[0]:
                main_called_at = now
            elif main_called_at is not None:
                time.sleep(0.005)
        proc.send_signal(signum)
        # Judged: a signal sent at least SETTLED s after main() was called (its handlers are in place by then).
        main_called = main_called_at is not None and time.monotonic() - main_called_at >= SETTLED
        out, err = proc.communicate(timeout=60)
        os.close(started_r)
        if not main_called:
            continue
        judged += 1
        assert "Traceback" not in err, f"signal {signum} after {delay}s:\n{err}"
        # Done before the signal (0), interrupted by the harness (130), or done (its version printed, main()
        # returned) and killed by the signal during Python's own exit, after the handlers were put back.
        done_then_killed = proc.returncode == -signum and out.startswith("pbs-harness") and not err
        assert proc.returncode in (0, 130) or done_then_killed, (delay, proc.returncode, out, err)
    assert judged >= 1, f"{judged} signals landed after main() was called (its start took {to_main:.2f} s)"


def _time_to_main() -> float:
    """Seconds from the start of `python -c` to its call of main() (median of three starts, no signal)."""
    times = []
    for _ in range(3):
        started_r, started_w = os.pipe()
        program = (
            f"import os, sys; from pbs_harness.__main__ import main; os.write({started_w}, b'm'); sys.exit(main())"
        )
        t0 = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-c", program, "--version"], cwd=ROOT, stdout=subprocess.PIPE, pass_fds=(started_w,)
        )
        os.close(started_w)
        select.select([started_r], [], [], 60)
        times.append(time.monotonic() - t0)
        proc.communicate(timeout=60)
        os.close(started_r)
    return sorted(times)[1]
