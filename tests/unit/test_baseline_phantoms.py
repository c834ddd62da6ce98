"""baseline.phantom_assignments over pbsnodes/qstat-shaped dicts (stubs stand in for pbs.nodes.all,
pbs.jobs.all, pbs.server.status and pbs.server.queues), and restore's repair of them by a server restart."""

from types import SimpleNamespace

import pytest

from pbs_harness.common.waits import WaitTimeout
from pbs_harness.pbs.server import VnodesNotReported
from pbs_harness.suite import baseline


def stub(nodes: dict, *, jobs: dict | None = None, server: dict | None = None, queues: dict | None = None):
    return SimpleNamespace(
        nodes=SimpleNamespace(all=lambda: nodes),
        jobs=SimpleNamespace(all=lambda history=False: jobs or {}),
        server=SimpleNamespace(status=lambda: server or {}, queues=lambda: queues or {}),
    )


def test_every_consumable_resource_assigned_on_a_vnode_with_no_job_is_a_phantom() -> None:
    """Not only ncpus and mem: ngpus, a custom consumable, a size in any unit; zero in any unit is none."""
    nodes = {
        "pbsh02": {"resources_assigned": {"ncpus": 2, "mem": "0kb"}},
        "pbsh03": {"resources_assigned": {"ncpus": 0, "mem": "0gb", "vmem": "0b"}},
        "pbsh04": {"resources_assigned": {"ncpus": 1}, "jobs": ["12.pbsh01/0"]},
        "pbsh05": {},
        "pbsh06": {"resources_assigned": {"mem": "1048576kb", "ngpus": 1, "scratch_gb": "4gb"}},
    }
    found = baseline.phantom_assignments(stub(nodes, jobs={"12.pbsh01": {}}))  # type: ignore[arg-type]
    assert found == [
        "vnode pbsh02: resources_assigned.ncpus = 2",
        "vnode pbsh06: resources_assigned.mem = 1048576kb",
        "vnode pbsh06: resources_assigned.ngpus = 1",
        "vnode pbsh06: resources_assigned.scratch_gb = 4gb",
    ]


def test_with_no_job_a_vnode_still_listing_one_is_a_leak() -> None:
    nodes = {"pbsh02": {"jobs": ["12.pbsh01/0"], "resources_assigned": {"ncpus": 1}}}
    assert baseline.phantom_assignments(stub(nodes)) == ["vnode pbsh02: jobs = ['12.pbsh01/0']"]  # type: ignore[arg-type]


def test_with_no_job_the_server_and_queue_totals_must_be_zero_too() -> None:
    server = {"resources_assigned": {"ncpus": 1, "mem": "0kb", "nodect": 0}}  # nodect counts too, when not 0
    queues = {
        "workq": {"resources_assigned": {"ncpus": 0, "mem": "0gb", "nodect": 0}},  # what an idle server shows
        "R5": {"resources_assigned": {"mem": "1gb"}},
    }
    found = baseline.phantom_assignments(stub({}, server=server, queues=queues))  # type: ignore[arg-type]
    assert found == ["server: resources_assigned.ncpus = 1", "queue R5: resources_assigned.mem = 1gb"]
    # A job still there (its totals are real): only vnodes are judged.
    assert baseline.phantom_assignments(stub({}, jobs={"1.s": {}}, server=server, queues=queues)) == []  # type: ignore[arg-type]


class RestartingServer:
    """FAKE pbs.server whose restart is recorded (and may find a vnode that never reports)."""

    def __init__(self, vnodes_report: bool) -> None:
        self.vnodes_report = vnodes_report
        self.restarts: list[dict] = []

    def restart(self, shutdown: str = "quick", *, timeout: float = 90, schedule: bool = False) -> dict:
        self.restarts.append({"shutdown": shutdown, "timeout": timeout, "schedule": schedule})
        if not self.vnodes_report:
            raise VnodesNotReported("every vnode reported", timeout, {"n1": {"state": "down"}})
        return {}


@pytest.mark.parametrize("vnodes_report", [True, False], ids=["vnodes-report", "a-vnode-stays-down"])
def test_phantoms_are_repaired_by_the_clients_server_restart(
    vnodes_report: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """restore's repair: pbs.server.restart (qterm -t quick, no scheduling kick), the server's attributes
    restored again, then the baseline waited for; a vnode that did not report within the timeout leaves
    the baseline read once, so its leak is reported within the same bound as before the restart waited
    for vnodes. Everything but the restart's sequence is FAKED (the snapshot, the waits' outcomes)."""
    base = baseline.Snapshot(server={}, queues={}, nodes={}, hooks={}, mom_configs={}, jobs=(), reservations=())
    server = RestartingServer(vnodes_report)
    pbs = SimpleNamespace(server=server, jobs=SimpleNamespace(all=lambda history=False: {}))
    waits: list[float] = []
    phantoms = ["n1 resources_assigned {'ncpus': 1}"]

    def phantom_wait(probe, predicate, *, timeout, describe):
        raise WaitTimeout(describe, timeout, phantoms)

    monkeypatch.setattr(baseline, "clear_workload", lambda *args: None)
    monkeypatch.setattr(baseline, "_restore_configs", lambda *args: [])  # nothing to put back
    monkeypatch.setattr(baseline, "_restore_server", lambda *args: ([], []))  # every attribute already as declared
    monkeypatch.setattr(baseline, "take", lambda pbs: base)
    monkeypatch.setattr(baseline, "_wait_for", lambda pbs, base, timeout: waits.append(timeout) or [])
    monkeypatch.setattr(baseline, "repair_stale_mom_hooks", lambda pbs: None)
    monkeypatch.setattr(baseline, "repair_kept_jobs", lambda pbs: None)  # no mom keeps a job
    monkeypatch.setattr(baseline, "wait_until", phantom_wait)
    monkeypatch.setattr(baseline, "phantom_assignments", lambda pbs: [])
    told: list[str] = []
    restored = baseline.restore(pbs, base, timeout=90, repaired=told.append)  # type: ignore[arg-type]
    assert restored == baseline.Restored(left=[], leaks=phantoms)  # the leak is returned as a finding
    assert server.restarts == [{"shutdown": "quick", "timeout": 90, "schedule": False}]
    assert waits == [90, 90 if vnodes_report else 0]
    assert told == [f"resources assigned but no job ({phantoms[0]}): pbs_server restarted, cleared"]


def test_what_a_test_changed_is_reported_when_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every repair is reported: hook and mom-config resets, server attributes, vnode state, comment
    and resources (FAKED: the restore's helpers, the snapshot and the waits)."""
    base = baseline.Snapshot(
        server={}, queues={}, nodes={"n1": {"state": "free", "comment": None}}, hooks={}, mom_configs={}, jobs=(),
        reservations=(),
    )  # fmt: skip
    now = baseline.Snapshot(
        server={}, queues={}, nodes={"n1": {"state": "offline", "comment": "left"}}, hooks={}, mom_configs={},
        jobs=(), reservations=(),
    )  # fmt: skip
    calls: list[str] = []
    nodes = SimpleNamespace(clear_offline=lambda name: calls.append(f"clear {name}"))
    server = SimpleNamespace(unset=lambda *a, **k: calls.append("unset comment"))
    pbs = SimpleNamespace(nodes=nodes, server=server, jobs=SimpleNamespace(all=lambda history=False: {"1.s": {}}))
    monkeypatch.setattr(baseline, "clear_workload", lambda *args: None)
    monkeypatch.setattr(baseline, "_restore_configs", lambda *args: ["mom config of n1 put back as before the test"])
    monkeypatch.setattr(
        baseline, "_restore_server", lambda *args: (["server log_events = 511 (declared: 2047): set"], [])
    )
    monkeypatch.setattr(baseline, "take", lambda pbs: now)
    monkeypatch.setattr(baseline, "_wait_for", lambda pbs, base, timeout: [])
    told: list[str] = []
    baseline.restore(pbs, base, repaired=told.append)  # type: ignore[arg-type]
    assert told == [
        "after the test: mom config of n1 put back as before the test",
        "after the test: server log_events = 511 (declared: 2047): set",
        "after the test: vnode n1 offline: offline cleared",
        "after the test: vnode n1 comment = 'left' (baseline: None): put back",
    ]
    assert calls == ["clear n1", "unset comment"]
