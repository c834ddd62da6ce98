"""Acceptance suites run against the cluster named by --inventory (default inventory/local)."""

pytest_plugins = [
    # A test that met a known OpenPBS race runs again on a fresh job (--defect-retries).
    # Before the plugin, which imports it: registered first, pytest can still rewrite its asserts.
    "pbs_harness.defect_retry",
    # Several clusters at once (pbs-harness test --clusters N): worker binding (imported by the
    # plugin, so registered before it, like defect_retry), scheduling, durations.
    "pbs_harness.parallel.binding",
    "pbs_harness.plugin",
    "pbs_harness.conformance.recorder",
    "pbs_harness.progress",
    "pbs_harness.parallel.durations",
    "pbs_harness.parallel.controller",
]
