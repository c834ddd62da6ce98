"""Runs `pbs-harness ARGV` in this process with the steps a refused command must never reach replaced by
FAKE stand-ins that fail (reading a run's results, bringing a cluster up, probing this machine's networks):
tests/unit/test_read_only_out.py runs it in a child that sees a folder mounted read-only."""

from __future__ import annotations

import sys

from pbs_harness import cli
from pbs_harness.conformance import results
from pbs_harness.localcluster import network, provider
from tests.unit.badinput import tripwire

results.load = tripwire("read the results")
provider.up = tripwire("bring a cluster up")
network.machine_networks = tripwire("probe this machine's networks")

sys.exit(cli.main(sys.argv[1:]))
