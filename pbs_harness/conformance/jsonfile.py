"""Reading a JSON file a user names (a results file, a conformance report): each way it can be wrong
becomes one PreconditionError naming the file as `what` and the fix `hint`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pbs_harness.common.errors import PreconditionError

# The largest file read: a whole run's results are about 150 KB (every suite, 2026-11-28), a conformance
# report less. Without a bound a 294 MB file took 15 s and 2 GB of memory before it was refused, and Ctrl-C
# waited for the parse.
MAX_BYTES = 64 * 1024 * 1024


def read(path: Path, what: str, hint: str, max_bytes: int = MAX_BYTES) -> Any:
    """The parsed JSON of `path`, e.g. what="results file" gives "results file PATH is not valid JSON: ..."."""
    if not path.is_file():
        raise PreconditionError(f"{what} {path} does not exist (or is not a file)", hint)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise PreconditionError(
                f"{what} {path} is {size / 2**20:.0f} MiB, more than any test run writes "
                f"(at most {max_bytes // 2**20} MiB is read): it is not one",
                hint,
            )
        return json.loads(path.read_text())
    except OSError as exc:
        raise PreconditionError(f"cannot read {what} {path}: {exc.strerror}", hint) from exc
    except UnicodeDecodeError as exc:
        raise PreconditionError(f"{what} {path} is not text: {exc.reason}", hint) from exc
    except json.JSONDecodeError as exc:
        raise PreconditionError(
            f"{what} {path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", hint
        ) from exc
