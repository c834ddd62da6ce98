"""Reading a JSON file a user names (a results file, a conformance report): each way it can be wrong
becomes one PreconditionError naming the file as `what` and the fix `hint`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pbs_harness.errors import PreconditionError


def read(path: Path, what: str, hint: str) -> Any:
    """The parsed JSON of `path`, e.g. what="results file" gives "results file PATH is not valid JSON: ..."."""
    if not path.is_file():
        raise PreconditionError(f"{what} {path} does not exist (or is not a file)", hint)
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise PreconditionError(f"cannot read {what} {path}: {exc.strerror}", hint) from exc
    except UnicodeDecodeError as exc:
        raise PreconditionError(f"{what} {path} is not text: {exc.reason}", hint) from exc
    except json.JSONDecodeError as exc:
        raise PreconditionError(
            f"{what} {path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", hint
        ) from exc
