"""The arithmetic of parallel runs, as pure functions: units and their order, the clusters of a fleet
(names, subnets), the memory preflight and the default number of clusters, and one report over
several clusters. Nothing is faked except the inputs: memory figures, known clusters and this
machine's networks are given as values."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pbs_harness.common.errors import PreconditionError
from pbs_harness.conformance import catalogue, clusters, report
from pbs_harness.localcluster import capacity, fleet, registry, state
from pbs_harness.localcluster.spec import ClusterSpec
from pbs_harness.suite.parallel import binding, durations, schedule

ROOT = Path(__file__).resolve().parents[2]

# --- units and their order ----------------------------------------------------------------------


def test_each_test_is_a_unit_unless_tests_declare_a_group() -> None:
    found = schedule.units(
        [
            ("ptl_tests/test_a.py::test_1", None),
            ("ptl_tests/test_a.py::test_2[x]", None),
            ("ptl_tests/test_b.py::test_1", "occurrences"),
            ("ptl_tests/test_c.py::test_9", "occurrences"),
        ]
    )
    assert found == {
        "ptl_tests/test_a.py::test_1": "ptl_tests/test_a.py::test_1",
        "ptl_tests/test_a.py::test_2[x]": "ptl_tests/test_a.py::test_2[x]",
        "ptl_tests/test_b.py::test_1": "group occurrences",
        "ptl_tests/test_c.py::test_9": "group occurrences",
    }


def test_units_go_longest_first_and_unrecorded_tests_count_as_the_median() -> None:
    work = {"small": ["s1"], "new": ["n1", "n2"], "big": ["b1", "b2"]}
    last = {"s1": 5.0, "b1": 300.0, "b2": 200.0}  # median 200: "new" counts 400
    assert schedule.expected(["n1", "n2"], last) == 400.0
    assert schedule.longest_first(work, last) == ["big", "new", "small"]
    assert schedule.expected(["a"], {}) == schedule.DEFAULT_SECONDS  # nothing recorded yet
    # Ties keep the given order.
    assert schedule.longest_first({"x": ["1"], "y": ["2"]}, {"1": 3.0, "2": 3.0}) == ["x", "y"]


def test_plan_is_longest_processing_time_first() -> None:
    """The suites' serial times of issue 16 (s), one unit each, on 4 clusters."""
    times = {"resv": 807, "ramp": 708, "rs_faults": 501, "rs": 391, "admin": 304, "harness": 72, "smoke": 19}
    work = {name: [name] for name in times}
    plan = schedule.plan(work, {k: float(v) for k, v in times.items()}, workers=4)
    assert plan == [["resv"], ["ramp"], ["rs_faults", "harness", "smoke"], ["rs", "admin"]]
    assert max(sum(times[u] for u in worker) for worker in plan) == 807  # the longest unit bounds the run


def test_durations_of_a_run_replace_those_of_the_tests_that_ran() -> None:
    assert durations.merged({"a": 10.0, "b": 20.0}, {"b": 25.123, "c": 1.0}) == {"a": 10.0, "b": 25.12, "c": 1.0}


def test_a_worker_takes_the_inventory_of_its_index() -> None:
    inventories = ["/inv/pa", "/inv/pab", "/inv/pac"]
    assert [binding.inventory_for(f"gw{k}", inventories) for k in range(3)] == inventories
    with pytest.raises(pytest.UsageError, match="worker gw3 has no cluster"):
        binding.inventory_for("gw3", inventories)


# --- the clusters of a fleet ----------------------------------------------------------------------


def test_fleet_members_take_a_letter_the_next_subnets_and_a_state_dir_of_their_own() -> None:
    base = ClusterSpec(subnet="10.81.0.0/24", prefix="pa", login_user="ops")
    members = fleet.members(base, Path("/var/lib/pbs-harness/pa"), 3)
    assert [(m.index, m.name, m.spec.subnet, str(m.root)) for m in members] == [
        (1, "pa", "10.81.0.0/24", "/var/lib/pbs-harness/pa"),
        (2, "pab", "10.81.1.0/24", "/var/lib/pbs-harness/pab"),
        (3, "pac", "10.81.2.0/24", "/var/lib/pbs-harness/pac"),
    ]
    assert {m.spec.login_user for m in members} == {"ops"}
    assert [h.name for h in members[2].spec.hosts][:2] == ["pac01", "pac02"]
    # The default cluster keeps its place as member 1.
    default = fleet.members(ClusterSpec(), Path("/var/lib/pbs-harness/local"), 2)
    assert [(m.name, m.spec.subnet, m.root.name) for m in default] == [
        ("pbsh", "10.71.0.0/24", "local"),
        ("pbshb", "10.71.1.0/24", "pbshb"),
    ]


def test_fleet_names_and_subnets_that_cannot_be_made_are_refused() -> None:
    with pytest.raises(PreconditionError, match="leaves no room for the other clusters' letter"):
        fleet.member_spec(ClusterSpec(prefix="abcdefgh"), 2)
    with pytest.raises(PreconditionError, match="leave the private range before cluster 2"):
        fleet.member_spec(ClusterSpec(subnet="10.255.255.0/24"), 2)
    with pytest.raises(PreconditionError, match="out of range"):
        fleet.members(ClusterSpec(), Path("/x"), fleet.MAX_CLUSTERS + 1)


def test_a_free_base_subnet_skips_clusters_and_networks_in_use() -> None:
    base = ClusterSpec(subnet="10.71.0.0/24")
    taken = [
        registry.KnownCluster("/var/lib/pbs-harness/w", "w", "10.71.2.0/24", (), (), None),
        registry.KnownCluster("/var/lib/pbs-harness/x", "x", "10.72.1.0/24", (), (), None),
    ]
    machine = [(ipaddress.IPv4Network("10.73.0.0/16"), "address 10.73.0.5/16 on eth1", "eth1")]
    free = fleet.free_base(base, 3, taken, machine)
    assert free is not None
    assert free.subnet == "10.74.0.0/24"


def _up_args(clusters: int | str | None = None) -> tuple[ClusterSpec, int | str | None, Callable[[str], None]]:
    """fleet.auto_subnet's arguments as `up --hosts 6 --name-prefix ci1a2b [--clusters N]` gives them."""
    return ClusterSpec(host_count=6, prefix="ci1a2b"), clusters, lambda _line: None


def test_subnet_auto_takes_the_first_free_base_for_all_the_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--subnet auto` (CI's clusters beside another checkout's): faked are the recorded state (none),
    the known clusters and this machine's networks."""
    monkeypatch.setattr(fleet.state, "load", lambda root=None: None)
    monkeypatch.setattr(
        fleet.registry,
        "known",
        lambda: [registry.KnownCluster("/var/lib/pbs-harness/local", "pbsh", "10.71.0.0/24", (), (), None)],
    )
    monkeypatch.setattr(fleet.network, "machine_networks", lambda: [])
    assert fleet.auto_subnet(*_up_args()) == ("10.72.0.0/24", None)
    assert fleet.auto_subnet(*_up_args(clusters=3)) == ("10.72.0.0/24", 3)


def test_subnet_auto_keeps_the_subnet_of_the_cluster_already_up(monkeypatch: pytest.MonkeyPatch) -> None:
    class Up:
        spec = ClusterSpec(subnet="10.80.0.0/24", prefix="ci1a2b")

    monkeypatch.setattr(fleet.state, "load", lambda root=None: Up())
    assert fleet.auto_subnet(*_up_args(clusters=2)) == ("10.80.0.0/24", 2)


def test_subnet_auto_with_no_free_base_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fleet.state, "load", lambda root=None: None)
    monkeypatch.setattr(fleet.registry, "known", lambda: [])
    everything = [(ipaddress.IPv4Network("10.0.0.0/8"), "address 10.0.0.1/8 on eth0", "eth0")]
    monkeypatch.setattr(fleet.network, "machine_networks", lambda: everything)
    with pytest.raises(PreconditionError, match=r"no base 10\.X\.0\.0/24 has 1 free subnets") as err:
        fleet.auto_subnet(*_up_args())
    assert "--subnet explicitly" in err.value.hint


def _fleet_on_disk(tmp_path: Path) -> list[Path]:
    """Three members' records (real state files under tmp_path): pa lists pab and pac, each names pa."""
    roots = [tmp_path / name for name in ("pa", "pab", "pac")]
    first = state.ClusterState.from_spec(ClusterSpec(subnet="10.81.0.0/24", prefix="pa"))
    first.fleet = [str(r) for r in roots[1:]]
    state.save(first, roots[0])
    for index, root in enumerate(roots[1:], start=2):
        member = state.ClusterState.from_spec(fleet.member_spec(first.spec, index))
        member.member_of = str(roots[0])
        state.save(member, root)
    return roots


def test_fleet_down_takes_the_other_members_down_first_then_member_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Faked: provider.down (it would remove the hosts; here it removes the record, as it does at its end)."""
    roots = _fleet_on_disk(tmp_path)
    taken: list[Path] = []

    def down(report: Callable[[str], None], root: Path | None = None) -> bool:
        where = state.state_dir(root)
        taken.append(where)
        (where / "state.json").unlink()
        return True

    monkeypatch.setattr(fleet.provider, "down", down)
    monkeypatch.setenv(state.STATE_DIR_ENV, str(roots[0]))
    lines: list[str] = []
    assert fleet.down(lines.append) is True
    assert taken == [roots[2], roots[1], roots[0]]
    assert [line.split(" (")[0] for line in lines] == ["removing cluster 3", "removing cluster 2"]


def test_a_member_taken_down_alone_leaves_its_fleets_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    roots = _fleet_on_disk(tmp_path)
    monkeypatch.setattr(fleet.provider, "down", lambda report, root=None: True)
    monkeypatch.setenv(state.STATE_DIR_ENV, str(roots[1]))
    fleet.down(lambda _line: None)
    first = state.load(roots[0])
    assert first is not None
    assert first.fleet == [str(roots[2])]


# --- memory: the preflight and the default number -------------------------------------------------


def test_a_cluster_needs_its_hosts_measured_or_estimated_plus_its_tests() -> None:
    estimated = capacity.need(6, None)
    assert estimated.per_cluster_mib == 6 * capacity.HOST_ESTIMATE_MIB + capacity.WORKER_MIB
    assert "estimated: 6 hosts x" in estimated.how
    measured = capacity.need(6, {"pbsh01..": 110.0, "pa01..": 130.0})
    assert measured.per_cluster_mib == 130.0 + capacity.WORKER_MIB
    assert "pa01.. 130 MiB" in measured.how
    assert "pbsh01.. 110 MiB" in measured.how


def test_memory_preflight_refuses_with_the_numbers() -> None:
    need = capacity.Need(500.0, "estimated")
    capacity.check_memory(total=4, new_clusters=3, need_=need, available_mib=2000.0)  # 1600 usable: 3 fit
    with pytest.raises(PreconditionError) as err:
        capacity.check_memory(total=6, new_clusters=5, need_=need, available_mib=2000.0)
    assert "6 clusters do not fit in this machine's memory: 5 more would need 2500 MiB (500 MiB each" in str(err.value)
    assert "1600 MiB of the 2000 MiB available may be used (20% kept free)" in str(err.value)
    assert err.value.hint == "use --clusters 4"  # the 1 already up + 3 that fit
    with pytest.raises(PreconditionError) as err:
        capacity.check_memory(total=1, new_clusters=1, need_=need, available_mib=100.0)
    assert "no further cluster fits" in err.value.hint


def test_the_default_number_follows_the_cores_within_memory() -> None:
    need = capacity.Need(500.0, "estimated")
    assert capacity.default_count(cores=2, available_mib=24000.0, need_=need, most=12) == 4
    assert capacity.default_count(cores=8, available_mib=24000.0, need_=need, most=12) == 12
    assert capacity.default_count(cores=8, available_mib=2000.0, need_=need, most=12) == 3
    assert capacity.default_count(cores=1, available_mib=100.0, need_=need, most=12) == 1


def test_pss_of_processes_is_summed_from_smaps_rollup(tmp_path: Path) -> None:
    """A /proc tree written by the test (FAKE of /proc): two processes, one gone meanwhile."""
    (tmp_path / "10").mkdir()
    (tmp_path / "10" / "smaps_rollup").write_text("Rss: 9000 kB\nPss: 2048 kB\nPss_Anon: 1000 kB\n")
    assert capacity.pss_mib([10, 11], proc=tmp_path) == 2.0


# --- one report over several clusters -------------------------------------------------------------


def _env(name: str, version: str) -> dict:
    return {"cluster": name, "pbs_version": version, "server": f"{name}01", "inventory": f"/inv/{name}", "hosts": []}


def _test(nodeid: str, outcome: str, cluster: str) -> dict:
    return {"nodeid": nodeid, "outcome": outcome, "specs": ["RD-3"], "differences": [], "cluster": cluster}


def test_clusters_of_one_version_make_one_verdict_naming_each_tests_cluster(tmp_path: Path) -> None:
    results = {
        "clusters": [_env("pa", "23.06.06"), _env("pab", "23.06.06")],
        "tests": [_test("t.py::test_one", "passed", "pa"), _test("t.py::test_two", "passed", "pab")],
    }
    assert [(v, names) for v, names, _ in clusters.split_by_version(results)] == [("23.06.06", ["pa", "pab"])]
    report.write_all(catalogue.load(), results, tmp_path / "none", tmp_path)
    md = (tmp_path / "conformance.md").read_text()
    assert "- Cluster pa: OpenPBS **23.06.06**" in md
    assert "- Cluster pab: OpenPBS **23.06.06**" in md
    assert "test_one on pa: passed<br>test_two on pab: passed" in md
    assert "side by side" not in md


def test_clusters_of_different_versions_are_never_merged_into_one_verdict(tmp_path: Path) -> None:
    results = {
        "clusters": [_env("pa", "23.06.06"), _env("vm", "22.05.11")],
        "tests": [_test("t.py::test_one", "passed", "pa"), _test("t.py::test_one", "failed", "vm")],
    }
    split = clusters.split_by_version(results)
    assert [(v, names, [t["outcome"] for t in r["tests"]]) for v, names, r in split] == [
        ("23.06.06", ["pa"], ["passed"]),
        ("22.05.11", ["vm"], ["failed"]),
    ]
    paths = report.write_all(catalogue.load(), results, tmp_path / "none", tmp_path)
    md = paths[1].read_text()
    assert "one verdict per build, side by side, never merged" in md
    assert "| OpenPBS 23.06.06 | OpenPBS 22.05.11 |" in md
    row = next(line for line in md.splitlines() if line.startswith("| RD-3 |"))
    assert "**pass**<br>test_one on pa: passed" in row
    assert "**fail**<br>test_one on vm: failed" in row
    data = json.loads(paths[2].read_text())
    assert [v["openpbs_version"] for v in data["side_by_side"]] == ["23.06.06", "22.05.11"]
    assert "interfaces" not in data
    assert "OpenPBS 22.05.11" in paths[0].read_text()


def test_a_serial_runs_results_file_keeps_its_one_cluster() -> None:
    results = {"environment": _env("pbsh", "23.06.06"), "tests": []}
    assert clusters.environments(results) == [_env("pbsh", "23.06.06")]
    assert len(clusters.split_by_version(results)) == 1


def test_a_test_moved_to_another_module_keeps_its_recorded_duration() -> None:
    last = {
        "ptl_tests/test_a.py::test_slow": 600.0,
        "ptl_tests/test_a.py::test_quick": 10.0,
        "ptl_tests/test_b.py::test_quick": 40.0,
        "ptl_tests/test_b.py::test_other": 20.0,
    }
    known = durations.with_names(last)
    assert schedule.typical_of(known) == 30.0  # the aliases do not count twice in the median
    # test_slow moved into a package: found by its bare name; test_quick is ambiguous: the median.
    assert schedule.expected(["ptl_tests/a/test_part.py::test_slow"], known) == 600.0
    assert schedule.expected(["ptl_tests/a/test_part.py::test_quick"], known) == 30.0
    assert durations.merged(last, {}) == last  # nothing of the aliases is saved
