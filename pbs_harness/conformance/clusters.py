"""The clusters of a run (results["clusters"]), and the verdicts they may share.

Clusters of one OpenPBS build make one verdict: their tests are pooled. Clusters of different
builds are never merged into one verdict: each build gets its own, shown side by side. A build is
its pbs_version plus its source (pbs_harness.conformance.provenance): master and the v23.06.06 tag
share a version, and are still two builds.
"""

from __future__ import annotations

from typing import Any

from pbs_harness.conformance import provenance

UNKNOWN = "unknown"


def environments(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every cluster the run reached (a results file of a serial run has only `environment`)."""
    found = results.get("clusters")
    if isinstance(found, list) and found:
        return [e for e in found if isinstance(e, dict)]
    env = results.get("environment")
    return [env] if isinstance(env, dict) and env else []


def version_of(env: dict[str, Any]) -> str:
    return str(env.get("pbs_version") or UNKNOWN)


def source_of(env: dict[str, Any]) -> provenance.Provenance | None:
    return provenance.from_dict(env.get("provenance"))


def _name(env: dict[str, Any]) -> str:
    return str(env.get("cluster") or env.get("server") or "?")


def build_labels(envs: list[dict[str, Any]]) -> list[str]:
    """Each cluster's build: its version, and its source too where clusters of one version differ in it."""
    identities: dict[str, set[str]] = {}
    for env in envs:
        source = source_of(env)
        identities.setdefault(version_of(env), set()).add(source.identity() if source else "")
    labels = []
    for env in envs:
        source = source_of(env)
        several = len(identities[version_of(env)]) > 1
        labels.append(source.short() if several and source else version_of(env))
    return labels


def split_by_version(results: dict[str, Any]) -> list[tuple[str, list[str], dict[str, Any]]]:
    """(OpenPBS build, its clusters, the results of their tests) per build; one entry when the run
    has at most one. A build is named by its version, and by its source too when two builds share
    a version. A test whose cluster recorded no version goes with the only build there is, or
    under `unknown` when there are several."""
    envs = environments(results)
    builds: dict[str, list[str]] = {}
    for env, label in zip(envs, build_labels(envs), strict=True):
        builds.setdefault(label, []).append(_name(env))
    if len(builds) <= 1:
        label = next(iter(builds), UNKNOWN)
        return [(label, builds.get(label, []), results)]
    by_cluster = {name: label for label, names in builds.items() for name in names}
    out = []
    for label, names in [*builds.items(), (UNKNOWN, [])]:
        tests = [t for t in results.get("tests", []) if by_cluster.get(str(t.get("cluster")), UNKNOWN) == label]
        if tests or names:
            out.append((label, names, {**results, "tests": tests}))
    return out


def source_of_clusters(results: dict[str, Any], names: list[str]) -> dict[str, Any] | None:
    """The provenance (as recorded) of the first of these clusters, or of the run's one cluster."""
    envs = environments(results)
    for env in envs:
        if _name(env) in names and isinstance(env.get("provenance"), dict):
            return env["provenance"]
    if len(envs) == 1 and isinstance(envs[0].get("provenance"), dict):
        return envs[0]["provenance"]
    return None
