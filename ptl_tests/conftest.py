"""Acceptance suites run against the cluster named by --inventory (default inventory/local)."""

pytest_plugins = [
    # A test that met a known OpenPBS race runs again on a fresh job (--defect-retries).
    # Before the plugin, which imports it: registered first, pytest can still rewrite its asserts.
    "pbs_harness.defect_retry",
    "pbs_harness.plugin",
    "pbs_harness.conformance.recorder",
    "pbs_harness.progress",
    # Several clusters at once (pbs-harness test --clusters N): worker binding, scheduling, durations.
    "pbs_harness.parallel.binding",
    "pbs_harness.parallel.durations",
    "pbs_harness.parallel.controller",
]
