"""baseline.phantom_assignments over pbsnodes/qstat-shaped dicts (stubs stand in for pbs.nodes.all,
pbs.jobs.all, pbs.server.status and pbs.server.queues)."""

from types import SimpleNamespace

from pbs_harness import baseline


def stub(nodes: dict, *, jobs: dict | None = None, server: dict | None = None, queues: dict | None = None):
    return SimpleNamespace(
        nodes=SimpleNamespace(all=lambda: nodes),
        jobs=SimpleNamespace(all=lambda history=False: jobs or {}),
        server=SimpleNamespace(status=lambda: server or {}, queues=lambda: queues or {}),
    )


def test_vnode_with_assigned_cpus_and_no_job_is_a_phantom() -> None:
    nodes = {
        "pbsh02": {"resources_assigned": {"ncpus": 2, "mem": "0kb"}},
        "pbsh03": {"resources_assigned": {"ncpus": 0, "mem": "0kb"}},
        "pbsh04": {"resources_assigned": {"ncpus": 1}, "jobs": ["12.pbsh01/0"]},
        "pbsh05": {},
        "pbsh06": {"resources_assigned": {"mem": "1048576kb"}},
    }
    found = baseline.phantom_assignments(stub(nodes, jobs={"12.pbsh01": {}}))  # type: ignore[arg-type]
    assert [line.split()[0] for line in found] == ["pbsh02", "pbsh06"]


def test_with_no_job_the_server_and_queue_totals_must_be_zero_too() -> None:
    server = {"resources_assigned": {"ncpus": 1, "mem": "0kb", "nodect": 0}}
    queues = {
        "workq": {"resources_assigned": {"ncpus": 0, "mem": "0gb", "nodect": 0}},  # what an idle server shows
        "R5": {"resources_assigned": {"mem": "1gb"}},
    }
    found = baseline.phantom_assignments(stub({}, server=server, queues=queues))  # type: ignore[arg-type]
    assert found == [
        "server resources_assigned {'ncpus': 1, 'mem': '0kb', 'nodect': 0}",
        "queue R5 resources_assigned {'mem': '1gb'}",
    ]
    # A job still there (its totals are real): only vnodes are judged.
    assert baseline.phantom_assignments(stub({}, jobs={"1.s": {}}, server=server, queues=queues)) == []  # type: ignore[arg-type]
