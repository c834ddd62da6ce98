"""Acceptance suites run against the cluster named by --inventory (default inventory/local)."""

pytest_plugins = ["pbs_harness.plugin", "pbs_harness.conformance.recorder", "pbs_harness.progress"]
