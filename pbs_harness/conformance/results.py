"""The results file of a test run (written by the recorder), read back for `pbs-harness report`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pbs_harness.errors import PreconditionError

HINT = "give the results.json a test run wrote (reports/results.json by default, or pytest's --results-json)"


def load(path: Path) -> dict[str, Any]:
    """The results in `path`, or an error naming the file and what is wrong with it."""
    if not path.is_file():
        raise PreconditionError(f"results file {path} does not exist (or is not a file)", HINT)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise PreconditionError(f"cannot read results file {path}: {exc.strerror}", HINT) from exc
    except UnicodeDecodeError as exc:
        raise PreconditionError(f"results file {path} is not text: {exc.reason}", HINT) from exc
    except json.JSONDecodeError as exc:
        raise PreconditionError(
            f"results file {path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", HINT
        ) from exc
    problem = _shape_problem(data)
    if problem:
        raise PreconditionError(f"results file {path} is not a test run's results: {problem}", HINT)
    return data


def _shape_problem(data: Any) -> str | None:
    if not isinstance(data, dict):
        return f"it holds a JSON {type(data).__name__}, not an object"
    if not isinstance(data.get("tests", []), list):
        return "'tests' is not a list"
    if not isinstance(data.get("environment", {}), dict):
        return "'environment' is not an object"
    for i, test in enumerate(data.get("tests", [])):
        if (
            not isinstance(test, dict)
            or not isinstance(test.get("nodeid"), str)
            or not isinstance(test.get("outcome"), str)
        ):
            return f"tests[{i}] has no 'nodeid' and 'outcome' strings"
        if not all(isinstance(test.get(key, []), list) for key in ("specs", "guards", "differences")):
            return f"tests[{i}]: 'specs', 'guards' and 'differences' must be lists"
    return None
