"""The PTL test files that stand for each feature, and what each test needs from the cluster.

Four features, nine PTL files (shared/reference/ptl-catalogue.md). Whole files for three features;
for reservation reconfirmation only the degraded/reconfirm tests of four reservation files (the rest
of those files tests other reservation features).

A PTL test declares its moms with `@requirements(num_moms=N)` on the class or the method (default 1),
and the rampdown/RJS suites also skip unless they get exactly that many. So each file is run in
groups, one `pbs_benchpress` per distinct count, each with exactly that many moms: more moms than a
test declares is not neutral either (PTL makes every mom a node, and a spare node changes a
reservation test's outcome). The counts are read from the test file itself (its AST), not copied here.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class PtlFile:
    feature: str  # our suite's marker: reliable_startup, ramp_down, admin_suspend, resv_reconfirm
    path: str  # under test/tests of the OpenPBS source
    test_class: str
    tests: tuple[str, ...] = ()  # empty: every test of the class


FILES: tuple[PtlFile, ...] = (
    PtlFile("reliable_startup", "functional/pbs_reliable_job_startup.py", "TestPbsReliableJobStartup"),
    PtlFile("ramp_down", "functional/pbs_node_rampdown.py", "TestPbsNodeRampDown"),
    PtlFile("ramp_down", "functional/pbs_node_rampdown_keep_select.py", "TestPbsNodeRampDownKeepSelect"),
    PtlFile("admin_suspend", "functional/pbs_admin_suspend.py", "TestAdminSuspend"),
    PtlFile(
        "resv_reconfirm",
        "functional/pbs_reservations.py",
        "TestReservations",
        (
            "test_degraded_standing_reservations",
            "test_degraded_advance_reservations",
            "test_degraded_standing_running_reservations",
            "test_degraded_advance_running_reservations",
            "test_degraded_standing_reservations_fail",
            "test_degraded_advance_reservations_fail",
            "test_degraded_standing_running_reservations_fail",
            "test_degraded_advance_running_reservations_fail",
            "test_degraded_advanced_reservation_superchunk",
            "test_degraded_running_only_replace",
            "test_standing_reservation_occurrence_two_not_degraded",
            "test_degraded_reservation_reconfirm_running_job",
            "test_resv_exclusive_after_node_offlined",
            "test_resv_reconfirm_holding_partial_nodes",
        ),
    ),
    PtlFile(
        "resv_reconfirm",
        "functional/pbs_maintenance_reservations.py",
        "TestMaintenanceReservations",
        (
            "test_maintenance_degrade_reservation_overlap1",
            "test_maintenance_degrade_reservation_overlap2",
            "test_maintenance_degrade_reservation_overlap3",
            "test_maintenance_degrade_reservation_overlap4",
            "test_maintenance_reconfirm_reservation_and_run",
            "test_maintenance_progressive_degrade_reservation",
            "test_maintenance_degrade_reservation_jobs_dont_run",
        ),
    ),
    PtlFile(
        "resv_reconfirm",
        "functional/pbs_resv_confirm_hook.py",
        "TestResvConfirmHook",
        ("test_degraded_resv", "test_multiple_reconfirm_hooks"),
    ),
    PtlFile(
        "resv_reconfirm", "functional/pbs_conf_resv_stale_vnode.py", "TestResvStaleVnode", ("test_stale_degraded",)
    ),
)

FEATURES: tuple[str, ...] = tuple(dict.fromkeys(f.feature for f in FILES))


@dataclass(frozen=True)
class PtlTest:
    name: str
    num_moms: int


@dataclass(frozen=True)
class Group:
    """Tests of one file run by one pbs_benchpress with exactly `num_moms` moms."""

    file: PtlFile
    num_moms: int
    tests: tuple[str, ...]

    @property
    def selector(self) -> str:
        """pbs_benchpress -t: Class.test,Class.test (the order of the file)."""
        return ",".join(f"{self.file.test_class}.{t}" for t in self.tests)


class SelectionError(ValueError):
    """The PTL file is not what the selection expects (class or test missing): another OpenPBS source."""


def _num_moms(decorators: list[ast.expr]) -> int | None:
    for dec in decorators:
        if isinstance(dec, ast.Call) and getattr(dec.func, "id", getattr(dec.func, "attr", None)) == "requirements":
            for kw in dec.keywords:
                if kw.arg == "num_moms" and isinstance(kw.value, ast.Constant):
                    return int(kw.value.value)
    return None


def read_tests(source: str, test_class: str) -> list[PtlTest]:
    """The test methods of `test_class` in a PTL file, in file order, with their declared mom count."""
    tree = ast.parse(source)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == test_class), None)
    if cls is None:
        raise SelectionError(f"class {test_class} not found")
    class_moms = _num_moms(cls.decorator_list) or 1
    return [
        PtlTest(node.name, _num_moms(node.decorator_list) or class_moms)
        for node in cls.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
    ]


def groups(file: PtlFile, source: str) -> list[Group]:
    """The file's selected tests grouped by mom count (fewest moms first), each group in file order."""
    tests = read_tests(source, file.test_class)
    known = {t.name for t in tests}
    missing = [t for t in file.tests if t not in known]
    if missing:
        raise SelectionError(f"{file.path}: {file.test_class} has no test {', '.join(missing)}")
    chosen = [t for t in tests if not file.tests or t.name in file.tests]
    counts = sorted({t.num_moms for t in chosen})
    return [Group(file, n, tuple(t.name for t in chosen if t.num_moms == n)) for n in counts]


def parse_limits(text: str) -> dict[str, int | None]:
    """`2` (the first 2 tests of every group) or `reliable_startup=3,ramp_down=2` (of those features' groups):
    tests per group by feature; a feature left out, or 0, runs whole (None)."""
    if text.isdigit():
        return dict.fromkeys(FEATURES, int(text) or None)
    out: dict[str, int | None] = {}
    for item in text.split(","):
        feature, _, count = item.partition("=")
        if feature not in FEATURES or not count.isdigit():
            raise ValueError(f"{item!r}: expected N or FEATURE=N,... with FEATURE one of {', '.join(FEATURES)}")
        out[feature] = int(count) or None
    return out
