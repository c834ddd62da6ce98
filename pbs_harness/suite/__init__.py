"""The pytest plugin and what it runs on: sessions, baseline, leaks, topology, faults, outcome, parallel runs."""
