"""The acceptance suites name no host and no test account: they ask the topology by role, so the
same suite runs on any cluster (docs/test-core.md, "Hosts by role"). Reads ptl_tests/ as text."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from pbs_harness.localcluster.spec import DEFAULT_PREFIX

ROOT = Path(__file__).resolve().parents[2]


def _inventory_names() -> set[str]:
    """Host and account names of the shipped inventories (cloud.example hosts, the test users)."""
    names: set[str] = set()
    cloud = yaml.safe_load((ROOT / "inventory" / "cloud.example" / "hosts.yml").read_text())

    def walk(group: dict) -> None:
        names.update((group or {}).get("hosts", {}) or {})
        for child in ((group or {}).get("children", {}) or {}).values():
            walk(child)

    walk(cloud["all"])
    users = yaml.safe_load((ROOT / "inventory" / "local" / "group_vars" / "all" / "openpbs_common.yml").read_text())
    names.update(u["name"] for u in users["openpbs_common_users"])
    return names


def test_suites_name_no_host_and_no_account() -> None:
    literal = re.compile(
        rf"\b{DEFAULT_PREFIX}\d\d\b|" + "|".join(rf"\b{re.escape(n)}\b" for n in sorted(_inventory_names()))
    )
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "ptl_tests").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if literal.search(line)
    ]
    assert not found, "ask the topology fixture by role instead:\n" + "\n".join(found)
