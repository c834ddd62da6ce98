"""`pbs-harness` (the console script) and `python -m pbs_harness`: the CLI's imports run under the same
signal rules as its verbs.

Importing pbs_harness.cli takes a few tenths of a second (argparse, the verbs' modules). A Ctrl-C or
SIGTERM in that time came before the CLI's own handling and printed a Python traceback (issue #34);
here it ends with the README's code for an interruption and one line saying nothing was done.
Left: the first few hundredths of a second are CPython's own start (its `site` import), before any
code of ours runs; a Ctrl-C there is CPython's "Fatal Python error: init_import_site" (docs/bad-input.md).
"""

from __future__ import annotations

import signal
import sys

EXIT_INTERRUPTED = 130  # README's table; pbs_harness.common.errors.EXIT_INTERRUPTED, not imported yet


class _TerminatedWhileStarting(KeyboardInterrupt):
    pass


def _terminated(signum: int, _frame: object) -> None:
    raise _TerminatedWhileStarting(f"signal {signum}")


def main() -> int:
    noted: list[int] = []

    def _note(signum: int, _frame: object) -> None:
        noted.append(signum)

    # Noted, not raised, while the CLI imports: an interruption raised inside the import machinery (a
    # module lock's weakref callback) is printed by CPython as "Exception ignored in ... Traceback" and
    # lost, and the start goes on (seen under load by tests/unit/test_early_signal.py).
    previous = {signum: signal.signal(signum, _note) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        from pbs_harness.cli import main as cli_main
    except KeyboardInterrupt as exc:
        noted.append(signal.SIGTERM if isinstance(exc, _TerminatedWhileStarting) else signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous[signal.SIGINT])
        # Until the CLI's own SIGTERM handler is in place (pbs_harness.cli.main), SIGTERM ends the start as
        # Ctrl-C does; left at its default it killed the process silently (exit 143) in between.
        signal.signal(signal.SIGTERM, _terminated)
    try:
        if noted:
            how = "SIGTERM" if noted[0] == signal.SIGTERM else "Ctrl-C (SIGINT)"
            print(f"pbs-harness: interrupted by {how} while starting: nothing was done (exit 130)", file=sys.stderr)  # noqa: T201
            return EXIT_INTERRUPTED
        return cli_main()
    except KeyboardInterrupt as exc:  # in the CLI's own set-up, before its verbs' handling
        terminated = isinstance(exc, _TerminatedWhileStarting) or type(exc).__name__ == "Terminated"
        how = "SIGTERM" if terminated else "Ctrl-C (SIGINT)"
        print(f"pbs-harness: interrupted by {how} (exit 130)", file=sys.stderr)  # noqa: T201 - the CLI's output
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous[signal.SIGTERM])


if __name__ == "__main__":
    sys.exit(main())
