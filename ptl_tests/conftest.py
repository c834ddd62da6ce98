"""Acceptance suites run against the cluster named by --inventory (default inventory/local)."""

from pathlib import Path

import pytest

# The suites' helper modules (every module here but tests, conftests, hook files and child tests):
# pytest rewrites their assertions as it does the tests', so a failing helper shows the values it
# compared, not a bare AssertionError. Registered before anything imports them.
_ROOT = Path(__file__).resolve().parent
HELPER_MODULES = sorted(
    ".".join(path.relative_to(_ROOT.parent).with_suffix("").parts)
    for path in _ROOT.rglob("*.py")
    if not path.name.startswith("test_")
    and path.name not in ("conftest.py", "__init__.py")
    and not {"hooks", "children"} & set(path.relative_to(_ROOT).parts)
)
pytest.register_assert_rewrite(*HELPER_MODULES)

pytest_plugins = [
    # A test that met a known OpenPBS race runs again on a fresh job (--defect-retries).
    # Before the plugin, which imports it: registered first, pytest can still rewrite its asserts.
    "pbs_harness.suite.defect_retry",
    # Several clusters at once (pbs-harness test --clusters N): worker binding (imported by the
    # plugin, so registered before it, like defect_retry), scheduling, durations.
    "pbs_harness.suite.parallel.binding",
    "pbs_harness.suite.plugin",
    "pbs_harness.conformance.recorder",
    "pbs_harness.suite.progress",
    "pbs_harness.suite.parallel.durations",
    "pbs_harness.suite.parallel.controller",
]
