"""The suites' own mutation check (issue #30): would our suites catch this change to OpenPBS?

A mutant is a small change to the OpenPBS source the cluster was built from: one of ours
(bench/mutants.yaml: a file, the smallest exact text to find, its replacement, the behaviour it
breaks) or a user's own unified diff. bench/bench_mutants.py applies it (patch), rebuilds only the
daemon or Python file it touches in a configured build tree kept in the cache (buildtree), puts
that file into every system host and restarts PBS through systemd (hosts), runs the matching
suite, then restores the packaged file and checks the cluster is back at a clean baseline.
"""
