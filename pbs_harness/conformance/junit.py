"""The run's junit.xml, made to say what CI dashboards need (#35), from the run's results.json:

- An xfail is a known OpenPBS bug pinned by a test that passed its own assertion: pytest writes it
  as <skipped type="pytest.xfail">, which Jenkins, GitLab and GitHub test reporters all count as
  "skipped" (9 skipped in a run where nothing was skipped). It becomes a passed testcase with a
  property `xfail` carrying the bug (the reason), and the suite's skipped count drops by one each.
  A strict xfail that passed (XPASS) is already a failure; nothing else changes.
- Every testcase gets properties `started` and `finished` (wall clock, ISO) and `cluster` (the one
  that ran it), so the run's timeline can be read from the JUnit file too.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

XFAIL_TYPE = "pytest.xfail"


def key_of(nodeid: str) -> tuple[str, str]:
    """(classname, name) as pytest's junitxml writes them for a node id."""
    parts = nodeid.split("::")
    module = parts[0].removesuffix(".py").replace("/", ".")
    return ".".join([module, *parts[1:-1]]), parts[-1]


def _set_property(case: ET.Element, name: str, value: str) -> None:
    props = case.find("properties")
    if props is None:
        props = ET.Element("properties")
        case.insert(0, props)
    for prop in props.findall("property"):
        if prop.get("name") == name:
            prop.set("value", value)
            return
    ET.SubElement(props, "property", {"name": name, "value": value})


def annotate(path: Path, results: dict[str, Any]) -> int:
    """Rewrite `path` in place; returns how many xfails became passes with an `xfail` property."""
    tree = ET.parse(path)  # noqa: S314 - the file our own pytest run just wrote
    by_key = {key_of(t["nodeid"]): t for t in results.get("tests", [])}
    converted = 0
    for suite in tree.getroot().iter("testsuite"):
        turned = 0
        for case in suite.iter("testcase"):
            test = by_key.get((case.get("classname", ""), case.get("name", "")), {})
            for name in ("started", "finished", "cluster"):
                if test.get(name):
                    _set_property(case, name, str(test[name]))
            skipped = case.find("skipped")
            if skipped is not None and skipped.get("type") == XFAIL_TYPE:
                case.remove(skipped)
                _set_property(case, "xfail", skipped.get("message", "") or "known OpenPBS bug")
                turned += 1
        if turned:
            suite.set("skipped", str(max(0, int(suite.get("skipped", "0")) - turned)))
        converted += turned
    tree.write(path, encoding="utf-8", xml_declaration=True)
    return converted
