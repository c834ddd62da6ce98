"""The clusters of a run (results["clusters"]), and the verdicts they may share.

Clusters of one OpenPBS version make one verdict: their tests are pooled. Clusters of different
versions are never merged into one verdict: each version gets its own, shown side by side.
"""

from __future__ import annotations

from typing import Any

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


def split_by_version(results: dict[str, Any]) -> list[tuple[str, list[str], dict[str, Any]]]:
    """(OpenPBS version, its clusters, the results of their tests) per version; one entry when the
    run has at most one version. A test whose cluster recorded no version goes with the only
    version there is, or under `unknown` when there are several."""
    envs = environments(results)
    versions: dict[str, list[str]] = {}
    for env in envs:
        versions.setdefault(version_of(env), []).append(str(env.get("cluster") or env.get("server") or "?"))
    if len(versions) <= 1:
        version = next(iter(versions), UNKNOWN)
        return [(version, versions.get(version, []), results)]
    by_cluster = {name: version for version, names in versions.items() for name in names}
    out = []
    for version, names in [*versions.items(), (UNKNOWN, [])]:
        tests = [t for t in results.get("tests", []) if by_cluster.get(str(t.get("cluster")), UNKNOWN) == version]
        if tests or names:
            out.append((version, names, {**results, "tests": tests}))
    return out
