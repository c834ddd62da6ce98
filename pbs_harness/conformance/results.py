"""The results file of a test run (written by the recorder), read back for `pbs-harness report`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pbs_harness.common.errors import PreconditionError
from pbs_harness.conformance import jsonfile

HINT = "give the results.json a test run wrote (reports/results.json by default, or pytest's --results-json)"


def load(path: Path) -> dict[str, Any]:
    """The results in `path`, or an error naming the file and what is wrong with it."""
    data = jsonfile.read(path, "results file", HINT)
    problem = _shape_problem(data)
    if problem:
        raise PreconditionError(f"results file {path} is not a test run's results: {problem}", HINT)
    for test in data["tests"]:  # evidence is written relative to the results file's folder
        if test.get("evidence") and not Path(test["evidence"]).is_absolute():
            test["evidence"] = str(path.parent / test["evidence"])
    return data


def evidence_href(test: dict[str, Any], base: Path) -> str:
    """The link to a test's evidence folder from a page in `base` (its index.html when it has one); "" when
    the test kept none. Shared by the conformance report and the run timeline, so both link alike."""
    where = test.get("evidence")
    if not where:
        return ""
    folder = Path(where) if Path(where).is_absolute() else base / where
    rel = os.path.relpath(folder, base)
    return f"{rel}/index.html" if (folder / "index.html").exists() else rel


# The schema of a results file, as the recorder writes it (pbs_harness.conformance.recorder.write_results):
# every key with its JSON type; the required ones must be there, and no other key may be.
_NUMBER = (int, float)
TOP_REQUIRED: dict[str, type | tuple[type, ...]] = {"started": str, "finished": str, "environment": dict, "tests": list}
TOP_OPTIONAL: dict[str, type | tuple[type, ...]] = {"clusters": list}  # runs before parallel clusters had none
TEST_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "nodeid": str,
    "outcome": str,
    "duration": _NUMBER,
    "specs": list,
    "guards": list,
    "differences": list,
}
TEST_OPTIONAL: dict[str, type | tuple[type, ...]] = {
    "markers": list,
    "cluster": str,
    "failure": str,
    "skip_reason": str,
    "xfail_reason": str,
    "evidence": str,
    "known_defects": list,
    "defect_every_attempt": int,
    "baseline_repairs": list,  # what pbs_harness.suite.baseline repaired around the test
    "not_in_release": bool,  # skipped because the release lacks a feature (pbs_harness.suite.release_features)
    "started": str,  # wall clock, ISO, the start of its (first) setup
    "finished": str,  # the end of its (last) teardown
    "faults": list,  # fault windows: {kind, target, started, healed} (pbs_harness.suite.faults.log.windows)
}
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


def _json_type(kind: type | tuple[type, ...]) -> str:
    names = {
        str: "a string",
        dict: "an object",
        list: "a list",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
    }
    return names[kind] if isinstance(kind, type) else "a number"


def _keys_problem(where: str, data: dict[str, Any], required: dict, optional: dict) -> str | None:
    missing = [k for k in required if k not in data]
    if missing:
        return f"{where}has no {', '.join(repr(k) for k in missing)} (a results file has {', '.join(required)})"
    unknown = sorted(set(data) - set(required) - set(optional))
    if unknown:
        return f"{where}unknown keys {unknown}; known: {', '.join([*required, *optional])}"
    for key, kind in {**required, **optional}.items():
        value = data.get(key)
        if key in data and (not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool)):
            return f"{where}{key!r} is {type(value).__name__}, not {_json_type(kind)}"
    return None


def _shape_problem(data: Any) -> str | None:
    if not isinstance(data, dict):
        return f"it holds a JSON {type(data).__name__}, not an object"
    problem = _keys_problem("", data, TOP_REQUIRED, TOP_OPTIONAL)
    if problem:
        return problem
    for i, test in enumerate(data["tests"]):
        if not isinstance(test, dict):
            return f"tests[{i}] is {type(test).__name__}, not an object"
        problem = _keys_problem(f"tests[{i}]: ", test, TEST_REQUIRED, TEST_OPTIONAL)
        if problem:
            return problem
        if test["outcome"] not in OUTCOMES:
            return f"tests[{i}]: outcome {test['outcome']!r} is not one of {', '.join(OUTCOMES)}"
    return None
