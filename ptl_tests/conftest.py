"""Acceptance suites run against the cluster named by --inventory (default inventory/local)."""

pytest_plugins = [
    "pbs_harness.plugin",
    # A test that met a known OpenPBS race runs once more on a fresh job (--defect-retries).
    "pbs_harness.defect_retry",
    "pbs_harness.conformance.recorder",
    "pbs_harness.progress",
    # Several clusters at once (pbs-harness test --clusters N): worker binding, scheduling, durations.
    "pbs_harness.parallel.binding",
    "pbs_harness.parallel.durations",
    "pbs_harness.parallel.controller",
]
