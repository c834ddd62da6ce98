"""The acceptance suites on several clusters at once: one pytest-xdist worker per cluster.

`pbs-harness test --clusters N` (or several `-i`) starts pytest with `-n N` and one
`--worker-inventory` per cluster. Worker gwK tests the K-th cluster only (binding); the controller
hands out units of tests that stay together, longest first by the durations of the last run
(schedule, durations), and writes the one JUnit, HTML and results file of the run (the conformance
recorder reads each report's cluster); progress lines and evidence folders name the cluster.
"""
