"""pbs_harness.common.fanout, and the per-test reads that use it (the baseline snapshot, the leak check's
reads, the mom listings), over stand-ins: SimpleNamespace objects play pbs.server/queues/nodes/hooks/
jobs/resv and each mom (FAKED: only the shapes the code reads). What it proves: the reads overlap (each
stand-in waits at a barrier that only opens when all of them are waiting at once: one after another,
it would time out), every read is still made and its result used where it was before, and a read that
fails fails the caller as it did (never taken for an empty result)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pbs_harness.common.fanout import each, together
from pbs_harness.suite import baseline, leaks


def test_results_come_in_the_order_given() -> None:
    assert together(lambda: 1, lambda: "two", lambda: [3]) == [1, "two", [3]]
    assert each([3, 1, 2], lambda n: n * 10) == [30, 10, 20]
    assert together() == []
    assert together(lambda: 5) == [5]


def test_the_calls_overlap() -> None:
    barrier = threading.Barrier(4, timeout=5)
    started = time.monotonic()
    assert each(range(4), lambda n: (barrier.wait(), n)[1]) == [0, 1, 2, 3]
    assert time.monotonic() - started < 5


def test_every_call_ends_then_the_first_error_in_order_is_raised() -> None:
    done: list[str] = []

    def slow_ok() -> str:
        time.sleep(0.2)
        done.append("slow")
        return "ok"

    def fails(text: str):
        def call() -> None:
            done.append(text)
            raise RuntimeError(text)

        return call

    with pytest.raises(RuntimeError, match=r"^first$"):
        together(slow_ok, fails("first"), fails("second"))
    assert sorted(done) == ["first", "second", "slow"]  # the slow read was not abandoned


def _barrier_pbs(*, moms: dict[str, str], parties: int, hook_names=(), mom_hooks=None, mom_jobs=None):
    """A stand-in whose every read waits at one barrier of `parties` (0: none): the reads of one call of
    the code under test must all be running at once, or the barrier breaks (BrokenBarrierError)."""
    barrier = threading.Barrier(parties, timeout=5) if parties else SimpleNamespace(wait=lambda: None)
    calls: list[str] = []

    def read(name: str, value):
        def call(*args, **kwargs):
            calls.append(name)
            barrier.wait()
            return value

        return call

    def mom(name: str) -> SimpleNamespace:
        def run(cmd, **kwargs):
            calls.append(f"{name}: {' '.join(cmd)}")
            barrier.wait()
            if cmd[0] == "cat":
                return SimpleNamespace(stdout=moms[name], ok=True)
            folder = Path(cmd[1]).name
            files = (mom_hooks or {}).get(name, []) if folder == "hooks" else (mom_jobs or {}).get(name, [])
            return SimpleNamespace(stdout="\n".join(files), ok=True)

        return SimpleNamespace(name=name, check=run, run=run)

    hosts = [mom(n) for n in sorted(moms)]
    pbs = SimpleNamespace(
        server=SimpleNamespace(
            status=read("server", {"scheduling": "True", "total_jobs": 0, "resources_assigned": {"ncpus": 0}}),
            queues=read("queues", {"workq": {"enabled": "True", "total_jobs": 0}}),
        ),
        nodes=SimpleNamespace(all=read("nodes", {"v1": {"state": "free", "resources_assigned": {}}})),
        hooks=SimpleNamespace(attributes=read("hooks", {"h": {"enabled": "true"}}), names=read("names", hook_names)),
        jobs=SimpleNamespace(all=read("jobs", {})),
        resv=SimpleNamespace(all=read("resv", {})),
        mom_config=SimpleNamespace(read=lambda host: host.check(["cat", "/var/spool/pbs/mom_priv/config"]).stdout),
        cluster=SimpleNamespace(moms=hosts, pbs_home=Path("/var/spool/pbs")),
    )
    return pbs, calls


def test_the_snapshot_reads_everything_at_once_and_keeps_every_part() -> None:
    pbs, calls = _barrier_pbs(moms={"m1": "$clienthost a\n", "m2": "$clienthost b\n"}, parties=8)
    snap = baseline.take(pbs)
    assert len(calls) == 8  # server, queues, vnodes, hooks, jobs, reservations, 2 mom configs
    assert snap.server == {"scheduling": "True"}  # volatile counters left out, as before
    assert snap.queues == {"workq": {"enabled": "True"}}
    assert snap.nodes["v1"]["state"] == "free"
    assert snap.hooks == {"h": {"enabled": "true"}}
    assert snap.mom_configs == {"m1": "$clienthost a\n", "m2": "$clienthost b\n"}  # each mom's own text
    assert (snap.jobs, snap.reservations) == ((), ())


def test_the_leak_checks_reads_run_at_once_and_still_find_a_kept_hook() -> None:
    # assignments: jobs, vnodes, server, queues at once
    pbs, calls = _barrier_pbs(moms={"m1": "", "m2": ""}, parties=4)
    assert leaks.assignments(pbs) == []
    assert sorted(calls) == ["jobs", "nodes", "queues", "server"]
    # the server's hook names and both moms' listings at once
    kept = {"m2": ["rd_end.HK", "PBS_power.HK"]}
    pbs, calls = _barrier_pbs(moms={"m1": "", "m2": ""}, parties=3, mom_hooks=kept)
    assert leaks.stale_mom_hooks(pbs) == {"m2": ["rd_end"]}
    assert len(calls) == 3
    # the whole check, both halves at once, finds it with its events
    pbs, _ = _barrier_pbs(moms={"m1": "", "m2": ""}, parties=0, mom_hooks=kept)
    assert [f"{x.where} {x.what}" for x in leaks.find(pbs)] == ["mom m2 hook rd_end"]


def test_the_moms_holding_jobs_are_listed_at_once() -> None:
    pbs, calls = _barrier_pbs(moms={"m1": "", "m2": "", "m3": ""}, parties=3, mom_jobs={"m3": ["7.sv.JB"]})
    assert leaks.moms_holding_jobs(pbs) == {"m3": ["7.sv"]}
    assert len(calls) == 3


def test_a_read_that_fails_fails_the_snapshot() -> None:
    pbs, calls = _barrier_pbs(moms={"m1": ""}, parties=0)

    def qstat_fails(**kwargs):
        raise AssertionError("qstat exited 1")

    pbs.jobs.all = qstat_fails
    with pytest.raises(AssertionError, match="qstat exited 1"):
        baseline.take(pbs)
    assert len(calls) == 6  # the other reads ran to their end: nothing is left running behind the error
