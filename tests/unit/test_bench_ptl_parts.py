"""bench/bench_ptl.py's part runner: what it copies back from the server host after one pbs_benchpress,
with runner.py's remote steps replaced by fakes (no cluster)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path, PurePosixPath
from types import ModuleType, SimpleNamespace

import pytest

from pbs_harness.ptl import pool, selection, site

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_ptl.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_ptl_under_test", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _results(status: str) -> str:
    case = {"results": {"1": {"status": status, "status_data": "why", "duration": "0:00:10"}}}
    return json.dumps({"testsuites": {"TestPbsNodeRampDown": {"testcases": {"test_a": case}}}})


@pytest.mark.parametrize(("status", "kept"), [("FAIL", True), ("ERROR", True), ("PASS", False)])
def test_a_part_with_a_failed_test_brings_back_ptl_s_post_analysis_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: str, kept: bool
) -> None:
    """The daemons' logs are what decides a failure (docs/ptl.md, the run of 29 Nov): they come back
    beside PTL's log for a part with a failed or erroring test, and are not asked for otherwise."""
    bench = _bench()
    monkeypatch.setattr(bench, "OUT_DIR", tmp_path)
    monkeypatch.setattr(bench, "say", lambda _: None)
    asked: list[str] = []
    files = {".json": _results(status), ".out": "PTL's log\n"}
    monkeypatch.setattr(bench.runner, "run_group", lambda *a, **k: (0 if status == "PASS" else 1, 12.0))
    monkeypatch.setattr(bench.runner, "fetch", lambda host, path: files.get(path.suffix))
    monkeypatch.setattr(bench.runner, "fetch_tree", lambda host, path: asked.append(str(path)) or b"tgz")
    where = site.PtlSite(
        server="s1", moms=("s1", "m2", "m3"), bin_dir=PurePosixPath("/b"), tests_dir=PurePosixPath("/t"),
        work_dir=PurePosixPath("/w"), ssh_config=None, build_dir=None, host_python="/usr/bin/python3",
    )  # fmt: skip
    cluster = SimpleNamespace(server=SimpleNamespace(name="s1"))
    part = pool.Part(selection.Group(selection.FILES[1], 3, ("test_a",)), 2, 5)
    result = bench.part_runner(cluster, where, "run-1")(part, lambda: False)
    assert [o.status for o in result.outcomes] == [status]
    assert gzip.decompress((tmp_path / "ptl" / "pbs_node_rampdown-3moms-p02.log.gz").read_bytes()) == b"PTL's log\n"
    post = tmp_path / "ptl" / "pbs_node_rampdown-3moms-p02.post.tar.gz"
    assert asked == (["/w/run-1/pbs_node_rampdown-3moms-p02.post"] if kept else [])
    assert post.exists() is kept
    if kept:
        assert post.read_bytes() == b"tgz"
