"""The PTL test -> our test(s) mapping, kept where a reader looks for it: the "PTL scenario" tables of
docs/suites/<feature>.md (a row per PTL test: our counterpart, or why there is none).

This module reads those tables so that the mapping can be checked:
- every PTL test of the selected files has a row (`unmapped`): tests/unit/test_ptl_mapping.py against
  the PTL tests of OpenPBS cd7ab5e listed below, and bench_ptl.py against the source it runs;
- every one of our tests a row names exists in ptl_tests/ (`unknown_ours`).

A table is one whose header has a column naming PTL ("PTL", "PTL test (pbs_admin_suspend.py)"); in
that column a row names its PTL tests in full (`test_basic`) or, in the reliable_startup tables, by
their number (`t4` for test_t4). Our tests are the backquoted `test_...` names of the other columns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

_PTL_NAME = re.compile(r"\b(test_\w+|t\d+)\b")
_OUR_NAME = re.compile(r"\b(test_\w+)")
_DEF = re.compile(r"^\s*def (test_\w+)\(", re.M)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables(markdown: str) -> list[list[list[str]]]:
    """The PTL tables of a doc: for each, its rows as cells with the PTL column first."""
    found: list[list[list[str]]] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines) - 1:
        header, rule = lines[i], lines[i + 1]
        if header.startswith("|") and re.match(r"^\|[-:| ]+\|$", rule.strip()):
            heads = _cells(header)
            ptl_col = next((k for k, h in enumerate(heads) if re.match(r"^PTL\b", h)), None)
            i += 2
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                cells = _cells(lines[i])
                if ptl_col is not None and ptl_col < len(cells):
                    rows.append([cells[ptl_col], *(c for k, c in enumerate(cells) if k != ptl_col)])
                i += 1
            if ptl_col is not None:
                found.append(rows)
            continue
        i += 1
    return found


def mapped(markdown: str) -> dict[str, str]:
    """PTL test name -> the rest of its row (our tests or the reason), for every PTL table of a doc."""
    out: dict[str, str] = {}
    for rows in tables(markdown):
        for ptl, *rest in rows:
            for name in _PTL_NAME.findall(ptl):
                full = f"test_{name}" if re.fullmatch(r"t\d+", name) else name
                out.setdefault(full, " | ".join(rest))
    return out


def unmapped(ptl_tests: Iterable[str], markdown: str) -> list[str]:
    known = mapped(markdown)
    return [t for t in ptl_tests if t not in known]


def ours_named(markdown: str) -> set[str]:
    """Our test names the PTL tables cite (backquoted test_... of the non-PTL columns)."""
    return {n for rows in tables(markdown) for row in rows for cell in row[1:] for n in _OUR_NAME.findall(cell)}


# `test_x`, test_x[id] (backquoted or not), or a row's lone `[id]` / `...[id]`
_CASE = re.compile(r"\b(test_\w+)(\[[^\]`|]*\])?|`(?:\.\.\.)?(\[[^\]`]*\])`")


def counterparts(markdown: str) -> dict[str, list[str]]:
    """PTL test name -> our test cases its rows name, over every PTL table of a doc (a PTL test in several
    tables, e.g. a summary row and a detailed one, gets the union): `test_x` (every parameter of it) or
    `test_x[id]`; a row that gives only `[id]` or `...[id]` names that parameter of the test the nearest
    row above it named (the tables list one test's parameters on rows of their own). A row with a reason
    instead names nothing."""
    out: dict[str, list[str]] = {}
    for rows in tables(markdown):
        last: str | None = None
        for ptl, *rest in rows:
            cases = []
            for name, param, lone in _CASE.findall(" | ".join(rest)):
                if name:
                    last = name
                    cases.append(f"{name}{param}")
                elif lone and last:
                    cases.append(f"{last}{lone}")
            for ptl_name in _PTL_NAME.findall(ptl):
                full = f"test_{ptl_name}" if re.fullmatch(r"t\d+", ptl_name) else ptl_name
                out.setdefault(full, [])
                out[full] += [c for c in cases if c not in out[full]]
    return out


def ours_in_row(row: str) -> list[str]:
    """Our test names in a row of `mapped` (its non-PTL cells), in order, each once; [] for a reason."""
    return list(dict.fromkeys(_OUR_NAME.findall(row)))


def our_tests(suites_dir: Path) -> set[str]:
    """Every test function defined under ptl_tests/."""
    return {n for f in suites_dir.rglob("test_*.py") for n in _DEF.findall(f.read_text())}


def unknown_ours(markdown: str, suites_dir: Path) -> list[str]:
    return sorted(ours_named(markdown) - our_tests(suites_dir))


# The test methods of the whole PTL files of OpenPBS master cd7ab5e, in file order (the subsets of the
# reservation files are listed in selection.FILES). The mapping is checked against these offline;
# bench_ptl.py warns when the source it runs has others.
UPSTREAM: dict[str, tuple[str, ...]] = {
    "functional/pbs_reliable_job_startup.py": (
        "test_t1",
        "test_t2",
        "test_t3",
        "test_t4",
        "test_t5",
        "test_t6",
        "test_t7",
        "test_t8",
        "test_t9",
        "test_t10",
        "test_t11",
        "test_t12",
        "test_t13",
        "test_t14",
        "test_t15",
        "test_t16",
        "test_t17",
        "test_t18",
        "test_t19",
        "test_t20",
        "test_t21",
    ),
    "functional/pbs_node_rampdown.py": (
        "test_release_nodes_on_stageout_true",
        "test_release_nodes_on_stageout_false",
        "test_release_nodes_on_stageout_default",
        "test_release_nodes_on_stageout_true_qalter",
        "test_release_nodes_on_stageout_false_qalter",
        "test_hook_release_nodes_on_stageout_true",
        "test_hook_release_nodes_on_stageout_false",
        "test_hook2_release_nodes_on_stageout_true",
        "test_hook2_release_nodes_on_stageout_false",
        "test_release_nodes_error",
        "test_release_ms_nodes",
        "test_release_not_assigned_nodes",
        "test_release_cray_nodes",
        "test_release_nodes_all",
        "test_release_nodes_all_as_root",
        "test_release_nodes_all_inside_job",
        "test_release_nodes1",
        "test_release_nodes1_as_user",
        "test_release_nodes1_extra",
        "test_release_nodes2",
        "test_release_nodes2_extra",
        "test_release_nodes3",
        "test_release_nodes3_extra",
        "test_release_nodes4",
        "test_release_nodes4_extra",
        "test_release_nodes5",
        "test_release_nodes5_extra",
        "test_release_nodes6",
        "test_release_nodes6_extra",
        "test_release_nodes_cmd_plus_stageout",
        "test_multi_release_nodes",
        "test_release_nodes_run_next_job",
        "test_release_nodes_rerun",
        "test_release_nodes_rerun_downed_mom",
        "test_release_nodes_epilogue",
        "test_release_nodes_complex",
        "test_release_nodes_excl_server_restart_quick",
        "test_release_nodes_excl_server_restart_immed",
        "test_release_nodes_shared_server_restart_quick",
        "test_release_nodes_shared_server_restart_immed",
        "test_release_mgr_oper",
        "test_release_job_array",
        "test_release_job_states",
        "test_release_finishjob",
        "test_release_suspendjob",
        "test_release_multi_jobs",
        "test_PBS_JOBID",
        "test_release_nodes_on_stageout_diffvalues",
        "test_resc_accumulation",
        "test_release_reservations",
        "test_execjob_end_called",
    ),
    "functional/pbs_node_rampdown_keep_select.py": (
        "test_basic_use_case_ncpus",
        "test_basic_use_case_ncpus_as_root",
        "test_basic_use_case_ncpus_using_script",
        "test_with_a_custom_str_res",
        "test_with_a_custom_str_res_partial_list",
        "test_with_a_custom_bool_res",
        "test_with_a_custom_bool_res_partial_list",
        "test_with_a_custom_long_res",
        "test_with_a_custom_long_partial_list",
        "test_with_a_custom_size_res",
        "test_with_a_custom_size_partial_list",
        "test_with_a_custom_float_res",
        "test_with_a_custom_float_partial_list",
        "test_with_mixed_custom_res",
        "test_with_mixed_custom_res_partial_list",
        "test_schunk_use_case",
        "test_schunk_partial_release_use_case",
        "test_release_nodes_error",
        "test_node_count",
        "test_node_count_as_root",
        "test_node_count_using_script",
        "test_node_count_with_mixed_custom_res",
        "test_node_count_schunk_use_case",
    ),
    "functional/pbs_admin_suspend.py": (
        "test_basic",
        "test_basic_ja",
        "test_basic_restart",
        "test_cmd_perm",
        "test_wrong_state1",
        "test_wrong_state2",
        "test_deljob",
        "test_deljob_force",
        "test_rerunjob",
        "test_multivnode",
        "test_multivnode2",
        "test_multivnode_excl",
        "test_degraded_resv",
        "test_resv_jobend",
        "test_que",
        "test_resume",
        "test_admin_resume_loop",
        "test_custom_res",
        "test_list_jobs_1",
        "test_list_jobs_2",
        "test_preempt_order",
        "test_hook",
        "test_offline",
    ),
}


def selected_tests(path: str) -> tuple[str, ...]:
    """The PTL tests of a selected file as of cd7ab5e: the subset selection.FILES names, or the whole file."""
    from pbs_harness.ptl.selection import FILES

    chosen = next(f for f in FILES if f.path == path)
    return chosen.tests or UPSTREAM[path]
