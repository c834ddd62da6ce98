"""The mutation check's own logic (pbs_harness.deploy.mutants, bench/bench_mutants.py), without a cluster or a build.

Real: the find/replace and GNU patch applied to small trees in tmp folders, and taken back; the
stage comparison; putting files into host roots that are tmp folders, and restoring them; reading
a junit file pytest wrote; bench/mutants.yaml as shipped, and — when the OpenPBS source archive CI
uses is on this machine — each of its find texts against that source. Nothing is faked: these
functions touch only the folders they are given.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tarfile
from pathlib import Path

import pytest

from pbs_harness.common import project
from pbs_harness.common.errors import PreconditionError
from pbs_harness.deploy.mutants import buildtree, hosts, patch

ROOT = project.root()
ARCHIVE = ROOT.parent / "shared" / "openpbs" / "openpbs-master-cd7ab5e.tar.gz"

MUTANTS_YAML = """
mutants:
  - name: one
    file: src/a.c
    find: "x = y - z;"
    replace: "x = y;"
    breaks: x loses z
    suite: ramp_down
"""


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "src-tree"
    (tree / "src").mkdir(parents=True)
    (tree / "src/a.c").write_text("int f(void)\n{\n\tx = y - z;\n\treturn x;\n}\n")
    (tree / "src/b.c").write_text("\tcall(a);\n\t\tcall(a);\n")
    return tree


def _mutant(**kw: str) -> patch.Mutant:
    base = {"name": "m", "breaks": "b", "suite": "ramp_down", "file": "src/a.c", "find": "y - z", "replace": "y"}
    return patch.Mutant(**{**base, **kw})


def test_find_replace_changes_the_one_place_and_revert_gives_back_the_bytes(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    before = (tree / "src/a.c").read_bytes()
    applied = patch.apply(_mutant(), tree)
    assert (tree / "src/a.c").read_text() == "int f(void)\n{\n\tx = y;\n\treturn x;\n}\n"
    applied.revert()
    assert (tree / "src/a.c").read_bytes() == before


@pytest.mark.parametrize(("find", "count"), [("absent text", 0), ("call(a);", 2)])
def test_find_text_must_occur_exactly_once(tmp_path: Path, find: str, count: int) -> None:
    tree = _tree(tmp_path)
    before = (tree / "src/b.c").read_bytes()
    with pytest.raises(PreconditionError, match=f"occurs {count} times, not exactly once"):
        patch.apply(_mutant(file="src/b.c", find=find), tree)
    assert (tree / "src/b.c").read_bytes() == before  # nothing written


def test_indentation_and_newline_make_a_find_text_unique(tmp_path: Path) -> None:
    # bench/mutants.yaml's launch-hook mutant relies on this: the deeper lines contain the shallower one.
    tree = _tree(tmp_path)
    patch.apply(_mutant(file="src/b.c", find="\n\t\tcall(a);", replace="\n\t\tcall(0);"), tree)
    assert (tree / "src/b.c").read_text() == "\tcall(a);\n\t\tcall(0);\n"


def test_a_file_outside_the_tree_or_missing_is_refused(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    with pytest.raises(PreconditionError, match="is not a file of the source tree"):
        patch.apply(_mutant(file="src/none.c"), tree)
    with pytest.raises(PreconditionError, match="must be a path inside the source tree"):
        patch.apply(_mutant(file="../etc/passwd"), tree)


def test_load_reads_the_fields_and_refuses_what_is_missing_or_repeated(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(MUTANTS_YAML)
    (m,) = patch.load(path)
    assert (m.name, m.file, m.find, m.replace, m.suite, m.select) == ("one", "src/a.c", "x = y - z;", "x = y;",
                                                                        "ramp_down", "")  # fmt: skip
    path.write_text(MUTANTS_YAML.replace("    breaks: x loses z\n", ""))
    with pytest.raises(PreconditionError, match="missing or empty: breaks"):
        patch.load(path)
    path.write_text(MUTANTS_YAML + MUTANTS_YAML.split("mutants:\n")[1])
    with pytest.raises(PreconditionError, match="not a unique lower-case name"):
        patch.load(path)
    path.write_text(MUTANTS_YAML.replace('replace: "x = y;"', 'replace: "x = y - z;"'))
    with pytest.raises(PreconditionError, match="find and replace are the same text"):
        patch.load(path)
    path.write_text(MUTANTS_YAML.replace("suite: ramp_down", "suite: ramp_down\n    colour: red"))
    with pytest.raises(PreconditionError, match="unknown field"):
        patch.load(path)


DIFF = """diff --git a/src/a.c b/src/a.c
--- a/src/a.c
+++ b/src/a.c
@@ -1,5 +1,5 @@
 int f(void)
 {
-\tx = y - z;
+\tx = y + z;
 \treturn x;
 }
"""


def test_a_users_diff_is_applied_with_patch_and_reverted(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    before = (tree / "src/a.c").read_bytes()
    path = tmp_path / "My Change.diff"
    path.write_text(DIFF)
    m = patch.from_diff(path, "ramp_down")
    assert (m.name, m.files, m.suite) == ("my-change", ["src/a.c"], "ramp_down")
    applied = patch.apply(m, tree)
    assert "\tx = y + z;\n" in (tree / "src/a.c").read_text()
    applied.revert()
    assert (tree / "src/a.c").read_bytes() == before


def test_a_diff_that_does_not_apply_leaves_the_tree_as_it_was(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    (tree / "src/a.c").write_text("something else entirely\n")
    path = tmp_path / "p.diff"
    path.write_text(DIFF)
    with pytest.raises(PreconditionError, match="does not apply"):
        patch.apply(patch.from_diff(path, "ramp_down"), tree)
    assert (tree / "src/a.c").read_text() == "something else entirely\n"
    assert sorted(p.name for p in (tree / "src").iterdir()) == ["a.c", "b.c"]  # no .rej or .orig left


def test_a_file_that_is_no_diff_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just words\n")
    with pytest.raises(PreconditionError, match="is not a unified diff"):
        patch.from_diff(path, "ramp_down")


def test_ours_name_the_two_required_mutants_in_few_tokens() -> None:
    mutants = {m.name: m for m in patch.load(ROOT / "bench/mutants.yaml")}
    by_file = {m.file: m for m in mutants.values()}
    assert by_file["src/resmom/start_exec.c"].suite == "reliable_startup"
    assert "vnode_list_fail" in by_file["src/resmom/start_exec.c"].breaks
    assert by_file["src/server/accounting.c"].suite == "ramp_down"
    assert "cumulative walltime" in by_file["src/server/accounting.c"].breaks
    for m in mutants.values():  # a few tokens of OpenPBS, never a block of its code
        assert len(m.find) <= 60, m.name
        assert m.find.count("\n") <= 1, m.name


@pytest.mark.skipif(not ARCHIVE.is_file(), reason=f"the OpenPBS source {ARCHIVE} is not on this machine")
def test_ours_each_find_exactly_one_place_in_the_source_the_clusters_are_built_from() -> None:
    with tarfile.open(ARCHIVE) as tar:
        top = tar.getnames()[0].split("/")[0]
        for m in patch.load(ROOT / "bench/mutants.yaml"):
            member = tar.extractfile(f"{top}/{m.file}")
            assert member is not None
            assert member.read().decode().count(m.find) == 1, m.name


def test_the_stage_comparison_keeps_only_changed_files(tmp_path: Path) -> None:
    pristine, mutant = tmp_path / "p", tmp_path / "m"
    for stage, mom in ((pristine, b"old"), (mutant, b"new")):
        (stage / "opt/pbs/sbin").mkdir(parents=True)
        (stage / "opt/pbs/sbin/pbs_mom").write_bytes(mom)
        (stage / "opt/pbs/sbin/pbs_comm").write_bytes(b"same")
        (stage / "opt/pbs/sbin/x.pyc").write_bytes(mom)
    assert buildtree.changed_files(pristine, mutant) == ["opt/pbs/sbin/pbs_mom"]


def test_make_dir_is_the_nearest_folder_with_a_makefile(tmp_path: Path) -> None:
    tree = buildtree.BuildTree(tmp_path, "1")
    (tmp_path / "build/src/modules/python").mkdir(parents=True)
    (tmp_path / "build/src/modules/python/Makefile").write_text("")
    assert buildtree.make_dir(tree, "src/modules/python/pbs/v1/_svr.py") == "src/modules/python"
    with pytest.raises(PreconditionError, match="no Makefile of the build tree builds"):
        buildtree.make_dir(tree, "doc/x.txt")


def test_put_backs_up_the_packaged_file_and_restore_brings_it_back(tmp_path: Path) -> None:
    roots = {name: tmp_path / name for name in ("h1", "h2")}
    for root in roots.values():
        (root / "opt/pbs/sbin").mkdir(parents=True)
        (root / "opt/pbs/sbin/pbs_mom").write_bytes(b"packaged mom")
        (root / "opt/pbs/sbin/pbs_mom").chmod(0o755)
    (roots["h1"] / "opt/pbs/sbin/pbs_server.bin").write_bytes(b"packaged server")
    stage = tmp_path / "stage"
    (stage / "opt/pbs/sbin").mkdir(parents=True)
    (stage / "opt/pbs/sbin/pbs_mom").write_bytes(b"mutant mom")
    (stage / "opt/pbs/sbin/pbs_server.bin").write_bytes(b"mutant server")
    r = hosts.Roots(tmp_path / "state", roots)
    placed = hosts.put(r, stage, ["opt/pbs/sbin/pbs_mom", "opt/pbs/sbin/pbs_server.bin"])
    assert placed == {"h1": ["opt/pbs/sbin/pbs_mom", "opt/pbs/sbin/pbs_server.bin"], "h2": ["opt/pbs/sbin/pbs_mom"]}
    assert (roots["h2"] / "opt/pbs/sbin/pbs_mom").read_bytes() == b"mutant mom"
    assert (roots["h2"] / "opt/pbs/sbin/pbs_mom").stat().st_mode & 0o777 == 0o755
    hosts.put(r, stage, ["opt/pbs/sbin/pbs_mom"])  # a second mutant: the backup stays the packaged file
    assert hosts.backups(r)["h2"] == ["opt/pbs/sbin/pbs_mom"]
    assert hosts.restore(r) == placed
    assert (roots["h1"] / "opt/pbs/sbin/pbs_mom").read_bytes() == b"packaged mom"
    assert (roots["h1"] / "opt/pbs/sbin/pbs_server.bin").read_bytes() == b"packaged server"
    assert hosts.backups(r) == {}
    (stage / "opt/pbs/sbin/pbs_sched").write_bytes(b"x")
    with pytest.raises(PreconditionError, match="no host of the cluster has /opt/pbs/sbin/pbs_sched"):
        hosts.put(r, stage, ["opt/pbs/sbin/pbs_sched"])


def _bench():
    spec = importlib.util.spec_from_file_location("bench_mutants", ROOT / "bench/bench_mutants.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="ptl_tests.ramp_down.t" name="test_a"><failure message="boom">x</failure></testcase>
<testcase classname="ptl_tests.ramp_down.t" name="test_b"/>
<testcase classname="ptl_tests.ramp_down.t" name="test_c"><skipped type="pytest.xfail" message="{why}"/></testcase>
</testsuite></testsuites>"""


@pytest.mark.parametrize(
    ("why", "exit_code", "caught", "verdict"),
    [
        ("strict: OpenPBS bug X", 1, True, "caught"),
        ("OpenPBS defect (intermittent): met on every one of 3 attempts", 1, False, "red, but 1 test"),
    ],
)
def test_a_mutant_is_caught_only_by_failures_not_by_retried_race_xfails(
    tmp_path: Path, why: str, exit_code: int, caught: bool, verdict: str
) -> None:
    bench = _bench()
    junit = tmp_path / "j.xml"
    junit.write_text(JUNIT.format(why=why))
    result = bench.Result("m", ["f"], "b", "ramp_down", "")
    result.failed, result.xfailed = bench.read_junit(junit)
    result.exit = exit_code
    bench.judge(result)
    assert result.failed == ["ptl_tests.ramp_down.t::test_a"]
    assert result.xfailed == {"ptl_tests.ramp_down.t::test_c": why}
    assert result.caught is caught
    assert result.verdict.startswith(verdict)


def test_a_green_suite_does_not_catch() -> None:
    bench = _bench()
    result = bench.Result("m", ["f"], "b", "ramp_down", "")
    result.exit = 0
    bench.judge(result)
    assert not result.caught
    assert result.verdict == "NOT caught: the suite stayed green"


def test_a_run_is_appended_to_the_runs_the_results_file_keeps(tmp_path: Path) -> None:
    """reports/bench-mutants.json is the measured history docs/mutants.md cites: a run used to replace it
    with its own {"meta", "mutants"} (found on 28 Nov: the four kept runs were gone after one bench run)."""
    bench = _bench()
    out = tmp_path / "bench-mutants.json"
    assert bench.kept_runs(out) == []  # no file yet
    first = {"meta": {"date": "1"}, "mutants": []}
    out.write_text(json.dumps(first))  # one run in the first layout: kept as that run
    assert bench.kept_runs(out) == [first]
    second = {"meta": {"date": "2"}, "mutants": [{"mutant": "m"}]}
    out.write_text(json.dumps(bench.with_run(bench.kept_runs(out), second)))
    kept = json.loads(out.read_text())
    assert kept["about"] == bench.ABOUT
    assert kept["runs"] == [first, second]
    assert bench.kept_runs(out) == [first, second]


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"something": "else"}'])
def test_a_results_file_that_is_no_record_of_runs_is_refused(tmp_path: Path, text: str) -> None:
    bench = _bench()
    out = tmp_path / "bench-mutants.json"
    out.write_text(text)
    with pytest.raises(PreconditionError, match=r"--out .*bench-mutants\.json") as info:
        bench.kept_runs(out)
    assert info.value.exit_code == 3
    assert out.read_text() == text  # left as it was


def test_the_kept_results_file_is_a_record_of_runs() -> None:
    bench = _bench()
    runs = bench.kept_runs(ROOT / "reports" / "bench-mutants.json")
    assert runs
    assert all({"meta", "mutants"} <= run.keys() for run in runs)
