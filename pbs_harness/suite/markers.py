"""The suites' markers: one marker per suite (SUITES) and every marker the plugin registers (MARKERS).

Apart from the plugin so that what summarises by suite (suite/progress.py) and what checks the catalogue
import them without importing the plugin, which imports nearly everything (issue #31).
"""

from __future__ import annotations

# One marker per suite (a suite may span modules); pbs_harness.suite.progress summarises by these.
SUITES = {
    "smoke": "minimal end-to-end check of a deployed cluster",
    "harness": "self-tests of the harness's own machinery on a real cluster",
    "reliable_startup": "reliable job startup suite",
    "ramp_down": "node ramp-down suite",
    "admin_suspend": "admin-suspend / maintenance suite",
    "resv_reconfirm": "degraded reservation reconfirmation suite",
}
MARKERS = {
    "acceptance": "runs against a real OpenPBS cluster",
    **SUITES,
    "destructive": "changes the cluster beyond what the baseline restore repairs quickly",
    "ci": "subset run in CI",
    "needs_moms(n)": "skip unless the cluster has at least n moms",
    "needs_faults(*names)": "skip unless every host's kind declares these faults (crash, boot, pause, partition, "
    "reboot: pbs_harness.hosts.base; the fault layer refuses undeclared ones)",
    "requires_feature(*names)": "skip, as not in this release, unless the cluster's OpenPBS has these features "
    "(pbs_harness.suite.release_features)",
    "spec(*ids)": "spec interfaces (catalogue ids) the test exercises",
    "guards(*ids)": "spec interfaces (of its spec ids) whose regression the test's own assertions would catch",
    "leak_of(cls)": "the test reproduces the OpenPBS bug of this Leaked subclass (pbs_harness.suite.leaks): a leak "
    "matching it raises it (the test's strict xfail), and seen after a body that failed it is repaired and reported",
}
