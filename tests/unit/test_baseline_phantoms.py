"""baseline.phantom_assignments over pbsnodes-shaped dicts (a stub stands in for pbs.nodes.all)."""

from types import SimpleNamespace

from pbs_harness import baseline


def stub(nodes: dict) -> SimpleNamespace:
    return SimpleNamespace(nodes=SimpleNamespace(all=lambda: nodes))


def test_vnode_with_assigned_cpus_and_no_job_is_a_phantom() -> None:
    nodes = {
        "pbsh02": {"resources_assigned": {"ncpus": 2, "mem": "0kb"}},
        "pbsh03": {"resources_assigned": {"ncpus": 0, "mem": "0kb"}},
        "pbsh04": {"resources_assigned": {"ncpus": 1}, "jobs": ["12.pbsh01/0"]},
        "pbsh05": {},
        "pbsh06": {"resources_assigned": {"mem": "1048576kb"}},
    }
    found = baseline.phantom_assignments(stub(nodes))  # type: ignore[arg-type]
    assert [line.split()[0] for line in found] == ["pbsh02", "pbsh06"]
