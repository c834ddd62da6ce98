"""OpenPBS's own test framework (PTL, `test/fw` and `test/tests` of the OpenPBS source) run, unmodified,
on a harness cluster, next to our suites (`make bench-ptl`, bench/bench_ptl.py; docs/ptl.md).

- selection: which PTL files and tests stand for each feature, and how many moms each test declares;
- site: where PTL lives for a cluster and how its hosts reach each other, asked of the inventory;
- install: PTL from the cluster's own OpenPBS source into an isolated virtualenv;
- accounts: PTL's test accounts (upstream CI's list), created for a run and removed after it;
- runner: `pbs_benchpress` on the server host, detached, with PTL's JSON results;
- results: PTL's JSON results -> outcomes and counts;
- report: reports/bench-ptl.json and .md.
"""
