"""conformance.json fixtures for the compare and matrix tests, written by the real report code
(pbs_harness.conformance.report.write_all) from SYNTHETIC results: the suite, test outcomes,
differences, clusters, hosts and provenance below are made up here, not observed on a cluster.
The commits and sha256 are those of the archives in /work/shared/openpbs (their README).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pbs_harness.conformance import catalogue, provenance, report

MASTER = "cd7ab5edaf03dcac2f1cb9e2f42d75eb117d468a"
V23 = "be361a18ef37652bece0811ec709f0fe4fc52710"
V22 = "08f5dd4cf8be469fcc866853e2e90aaa47f4ddda"
ARCHIVES = {
    MASTER: ("openpbs-master-cd7ab5e.tar.gz", "46a7c836d3213f5313e8e4a9f13fc4da9bcd6722496ddfc9ec1835dc544cd318"),
    V23: ("openpbs-v23.06.06.tar.gz", "934b2cd0bd86f2fa7ef187ebec44537b4fab26009f9bb083f078d0a1a24b036c"),
    V22: ("openpbs-v22.05.11.tar.gz", "9ca168250184e08e329897b4f80be1978ee881587690a0e46a615fa6979340c9"),
}

SUITE = """
import pytest


@pytest.mark.spec("RD-1", "RD-3")
@pytest.mark.guards("RD-1", "RD-3")
def test_release_middle():
    pass


@pytest.mark.spec("RD-3")
@pytest.mark.guards("RD-3")
def test_release_after_restart():
    pass


@pytest.mark.spec("AS-1")
@pytest.mark.guards("AS-1")
def test_admin_suspend():
    pass


@pytest.mark.spec("RJS-9")
@pytest.mark.guards("RJS-9")
def test_resize_event():
    pass
"""
MIDDLE = "ptl_tests/test_fx.py::test_release_middle"
AFTER_RESTART = "ptl_tests/test_fx.py::test_release_after_restart"
SUSPEND = "ptl_tests/test_fx.py::test_admin_suspend"
RESIZE = "ptl_tests/test_fx.py::test_resize_event"
SPECS = {MIDDLE: ["RD-1", "RD-3"], AFTER_RESTART: ["RD-3"], SUSPEND: ["AS-1"], RESIZE: ["RJS-9"]}
RELEASE_SKIP = "Skipped: not in this release (OpenPBS 22.05.11 on this cluster has no postqueuejob hook event)"


def suite(folder: Path) -> Path:
    tests = folder / "ptl_tests"
    tests.mkdir(parents=True, exist_ok=True)
    (tests / "test_fx.py").write_text(SUITE)
    return tests


def env(cluster: str, commit: str, version: str = "23.06.06") -> dict[str, Any]:
    """A cluster's environment as environment.of records it, built from the archive of `commit`."""
    archive, sha = ARCHIVES[commit]
    prov = provenance.Provenance(
        version, "archive", "/opt/pbs/.pbs-harness-source", "/opt/pbs", archive=archive, sha256=sha, commit=commit
    )
    return {
        "pbs_version": version,
        "build": "/opt/pbs (pbs_server.bin dated 2026-01-01)",
        "provenance": provenance.to_dict(prov),
        "inventory": f"/inv/{cluster}",
        "server": f"{cluster}01",
        "hosts": [f"{cluster}0{i}" for i in range(1, 4)],
        "cluster": cluster,
    }


def result(nodeid: str, outcome: str, cluster: str, differences: list[dict[str, str]] | None = None) -> dict:
    entry = {
        "nodeid": nodeid,
        "outcome": "skipped" if outcome == "not in this release" else outcome,
        "specs": SPECS[nodeid],
        "guards": SPECS[nodeid],
        "differences": differences or [],
        "cluster": cluster,
    }
    if outcome == "not in this release":
        entry |= {"skip_reason": RELEASE_SKIP, "not_in_release": True}
    return entry


def write(
    folder: Path,
    envs: list[dict[str, Any]],
    outcomes: dict[str, str] | list[tuple[str, str, str]],
    differences: dict[str, list[dict[str, str]]] | None = None,
) -> Path:
    """conformance.json of a run over `envs` (one cluster: outcomes by nodeid; several: (nodeid,
    outcome, cluster) triples), written by report.write_all into `folder`."""
    rows = [(n, o, envs[0]["cluster"]) for n, o in outcomes.items()] if isinstance(outcomes, dict) else outcomes
    results = {
        "started": "2026-01-01T10:00:00",
        "finished": "2026-01-01T11:00:00",
        "environment": envs[0],
        "clusters": envs,
        "tests": [result(n, o, c, (differences or {}).get(n)) for n, o, c in rows],
    }
    folder.mkdir(parents=True, exist_ok=True)
    report.write_all(catalogue.load(), results, suite(folder / "suite"), folder)
    return folder / "conformance.json"


def diff(spec: str, does: str, evidence: str = "") -> dict[str, str]:
    return {"spec": spec, "spec_says": "the spec's words", "openpbs_does": does, "evidence": evidence}


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())
