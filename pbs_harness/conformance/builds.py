"""The OpenPBS builds a conformance.json holds, read back for `report --compare` and `--matrix`.

A report of one build has its interfaces at the top level; a run over clusters of several builds
has one verdict per build under `side_by_side`. Each becomes a Build: its name, its source (the
provenance of pbs_harness.conformance.provenance, when the run recorded one), its run, and its
interfaces by id. A file that is not a conformance report is refused naming what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pbs_harness.common.errors import PreconditionError
from pbs_harness.conformance import jsonfile, provenance

HINT = "give the conformance.json that `pbs-harness test` or `pbs-harness report` wrote (reports/conformance.json)"


@dataclass
class Build:
    """One OpenPBS build's verdict in one report."""

    path: Path  # the conformance.json
    name: str  # pbs_version, and its source when the report held two builds of that version
    source: str  # one line: where OpenPBS came from
    provenance: provenance.Provenance | None
    run: str  # "<started> to <finished>"
    clusters: list[str]
    interfaces: dict[str, dict[str, Any]] = field(default_factory=dict)  # by id, in report order
    counts: dict[str, int] = field(default_factory=dict)
    hosts: list[str] = field(default_factory=list)  # every host of the report's clusters

    @property
    def short(self) -> str:
        """A column head: the version with a short source when it is known."""
        return self.provenance.short() if self.provenance and self.provenance.kind != "unknown" else self.name

    def status(self, ident: str) -> str:
        row = self.interfaces.get(ident)
        return str(row.get("label") or row.get("status")) if row else "absent"


def load(path: Path) -> list[Build]:
    """The builds of the conformance report in `path`, or an error naming the file and what is wrong."""
    data = jsonfile.read(path, "conformance report", HINT)
    problem = _shape_problem(data)
    if problem:
        raise PreconditionError(f"{path} is not a conformance report: {problem}", HINT)
    header = data["header"]
    run = f"{header.get('started') or '?'} to {header.get('finished') or '?'}"
    hosts = _hosts(header)
    if "side_by_side" not in data:
        prov = provenance.from_dict(header.get("provenance"))
        names = [str(c.get("name")) for c in header.get("clusters", []) if isinstance(c, dict)]
        return [
            Build(
                path=path,
                name=str(header.get("openpbs_version", "unknown")),
                source=str(header.get("openpbs_source") or "not recorded"),
                provenance=prov,
                run=run,
                clusters=names,
                interfaces=_by_id(data["interfaces"]),
                counts=dict(data.get("counts") or {}),
                hosts=hosts,
            )
        ]
    builds = []
    for verdict in data["side_by_side"]:
        prov = provenance.from_dict(verdict.get("provenance"))
        builds.append(
            Build(
                path=path,
                name=str(verdict.get("openpbs_version", "unknown")),
                source=prov.describe() if prov else "not recorded",
                provenance=prov,
                run=run,
                clusters=[str(c) for c in verdict.get("clusters", [])],
                interfaces=_by_id(verdict["interfaces"]),
                counts=dict(verdict.get("counts") or {}),
                hosts=hosts,
            )
        )
    return builds


def _hosts(header: dict[str, Any]) -> list[str]:
    clusters = [c for c in header.get("clusters", []) if isinstance(c, dict)]
    found = [*header.get("hosts", []), *(h for c in clusters for h in c.get("hosts", []))]
    return list(dict.fromkeys(str(h) for h in found if h))


def _by_id(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(r["id"]): r for r in rows}


def _interfaces_problem(rows: Any, where: str) -> str | None:
    if not isinstance(rows, list):
        return f"{where}'interfaces' is not a list"
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("id"), str) or not isinstance(row.get("status"), str):
            return f"{where}interfaces[{i}] has no 'id' and 'status' strings"
        if not all(isinstance(row.get(k, []), list) for k in ("tests", "untested", "differences")):
            return f"{where}interfaces[{i}]: 'tests', 'untested' and 'differences' must be lists"
    return None


def _verdicts_problem(verdicts: Any) -> str | None:
    if not isinstance(verdicts, list) or not verdicts:
        return "'side_by_side' is not a list of verdicts"
    for i, verdict in enumerate(verdicts):
        where = f"side_by_side[{i}]"
        problem = _interfaces_problem(verdict.get("interfaces"), f"{where}.") if isinstance(verdict, dict) else None
        if problem or not isinstance(verdict, dict):
            return problem or f"{where} is not an object"
    return None


def _shape_problem(data: Any) -> str | None:
    if not isinstance(data, dict):
        return f"it holds a JSON {type(data).__name__}, not an object"
    if not isinstance(data.get("header"), dict):
        return "it has no 'header' object"
    if "side_by_side" in data:
        return _verdicts_problem(data["side_by_side"])
    if "interfaces" not in data:
        # e.g. the run's results.json, which has 'tests' but no verdicts
        hint = (
            " (it looks like a results.json: `pbs-harness report --results` turns it into one)"
            if "tests" in data
            else ""
        )
        return f"it has neither 'interfaces' nor 'side_by_side'{hint}"
    return _interfaces_problem(data["interfaces"], "")
