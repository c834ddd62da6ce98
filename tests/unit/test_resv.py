"""pbs_rstat -F parsing and the time formats of pbs_rstat / pbs_rsub."""

from __future__ import annotations

import time

from pbs_harness.pbs.resv import parse_rstat, rstat_epoch, rsub_time

RSTAT = """Resv ID: R12.pbsh01
Reserve_Name = NULL
Reserve_Owner = pbsuser1@pbsh01
reserve_state = RESV_DEGRADED
reserve_substate = 10
reserve_start = Sat Nov 21 19:40:05 2026
resv_nodes = (pbsh02:ncpus=2)+(pbsh03:ncpus=2)
reserve_retry = Sat Nov 21 18:50:15 2026

Resv ID: S13.pbsh01
reserve_state = RESV_CONFIRMED
"""


def test_parse_rstat_keeps_every_reservation_and_value() -> None:
    parsed = parse_rstat(RSTAT)
    assert set(parsed) == {"R12.pbsh01", "S13.pbsh01"}
    assert parsed["R12.pbsh01"]["reserve_substate"] == "10"
    assert parsed["R12.pbsh01"]["resv_nodes"] == "(pbsh02:ncpus=2)+(pbsh03:ncpus=2)"
    assert parsed["R12.pbsh01"]["reserve_retry"] == "Sat Nov 21 18:50:15 2026"


def test_rstat_epoch_reads_the_local_time_pbs_rstat_prints() -> None:
    epoch = int(time.mktime((2026, 11, 21, 18, 50, 15, 0, 0, -1)))
    assert rstat_epoch("Sat Nov 21 18:50:15 2026") == epoch
    # ctime-style space padding of the day (the server log) reads the same.
    assert rstat_epoch("Sun Nov  1 08:00:00 2026") == int(time.mktime((2026, 11, 1, 8, 0, 0, 0, 0, -1)))


def test_rsub_time_round_trips_whole_seconds() -> None:
    now = int(time.time())
    text = rsub_time(now + 0.7)
    assert len(text) == len("202611211850.15")
    assert int(time.mktime(time.strptime(text, "%Y%m%d%H%M.%S"))) == now
