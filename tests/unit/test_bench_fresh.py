"""bench/bench_fresh.py's own logic (#33), without a cluster: splitting `pbs-harness up`'s timestamped
lines into stages, naming ./acceptance's commands, and judging the targets.

Real: the parsing functions on lines in the harness's own formats (copied from a real `up --idempotence`
run of 28 Nov 2026, one cluster, and from a fleet's `[cluster]`-prefixed lines); `./acceptance --dry-run`
of this checkout; the bench's argument checks. Faked: nothing runs a cluster, so the seconds are the
lines' given times — this proves the arithmetic and the matching, not any measured figure.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from pbs_harness.common import project

ROOT = project.root()


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_fresh", ROOT / "bench/bench_fresh.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_fresh"] = module
    spec.loader.exec_module(module)
    return module


def _lines(bench, timed: list[tuple[float, str]]):
    return [bench.Line(t, text) for t, text in timed]


ONE_CLUSTER_WARM = [
    (0.4, "[06:10:03] OpenPBS 23.06.06 packages of openpbs-master-cd7ab5e.tar.gz: cached in /var/cache/x"),
    (0.5, "[06:10:03] network: bridge pbsp-br0 10.85.0.1/24"),
    (2.5, "[06:10:05] local cluster up: 6 debian-12 system hosts pbsp01.. on 10.85.0.0/24 in 2.0s"),
    (3.0, "[06:10:06] deploying OpenPBS to 6 hosts (server pbsp01)"),
    (5.0, "[06:10:08]   play: Preflight"),
    (117.0, "[06:12:00] deploy finished in 113.8s, changed=110 (log: /x/reports/ansible-site.log)"),
    (117.1, "[06:12:00] idempotence gate: deploying again, every host must report changed=0"),
    (178.0, "[06:13:01] idempotence gate: second deploy in 60.5s, changed=0 on all 6 hosts"),
    (178.1, "[06:13:01] verifying hosts (testinfra)"),
    (186.0, "[06:13:09] verify: all checks passed"),
]


def test_warm_one_cluster(bench):
    stages = bench.up_stages(_lines(bench, ONE_CLUSTER_WARM))
    assert stages["image_layers_s"] == 0
    assert stages["image_layers"] == {}
    assert stages["openpbs_packages"] == "cached"
    assert stages["openpbs_packages_s"] == 0
    assert stages["hosts_up_s"] == 2.0
    assert stages["deploy_s"] == 114.0  # wall: the start line to the finished line
    assert stages["deploy_per_cluster"] == {"": {"seconds": 113.8, "changed": 110}}
    assert stages["idempotence_gate_s"] == 60.9
    assert stages["idempotence_gate"] == "passed"
    assert stages["idempotence_gate_per_cluster_s"] == {"": 60.5}
    assert stages["verify_s"] == 7.9
    assert stages["up_deploy_s"] == 117.0


FRESH_FLEET = [
    (3.0, "[05:00:03] image layer debian-12-base-39e31ffdb402: debootstrap bookworm from http://m (about a minute)"),
    (46.0, "[05:00:46] image layer debian-12-base-39e31ffdb402 made in 43s"),
    (147.0, "[05:02:27] image layer debian-12-builder-2d5a0b73e731 made in 101s"),
    (148.0, "[05:02:28] building OpenPBS packages from x.tar.gz in debian-12-builder-2d5a0b73e731 ..."),
    (765.0, "[05:12:45] OpenPBS packages built in 617s: openpbs-server_23.06.06-1_amd64.deb"),
    (812.0, "[05:13:32] image layer debian-12-host-92904e1129fc made in 46s"),
    (816.0, "[05:13:36] image layer debian-12-deps-40c5f2e2e583 made in 4s"),
    (880.0, "[05:14:40] 2 local clusters up in 114.0s:"),
    (881.0, "[05:14:41] [pbsha] deploying OpenPBS to 6 hosts (server pbsha01)"),
    (882.0, "[05:14:42] [pbshb] deploying OpenPBS to 6 hosts (server pbshb01)"),
    (1100.0, "[05:18:20] [pbsha] deploy finished in 219.0s, changed=108 (log: x)"),
    (1101.0, "[05:18:21] [pbsha] idempotence gate: deploying again, every host must report changed=0"),
    (1150.0, "[05:19:10] [pbshb] deploy finished in 268.0s, changed=108 (log: y)"),
    (1151.0, "[05:19:11] [pbshb] idempotence gate: deploying again, every host must report changed=0"),
    (1200.0, "[05:20:00] [pbsha] idempotence gate: second deploy in 99.0s, changed=0 on all 6 hosts"),
    (1201.0, "[05:20:01] [pbsha] verifying hosts (testinfra)"),
    (1230.0, "[05:20:30] [pbshb] idempotence gate: second deploy in 79.0s, changed=0 on all 6 hosts"),
    (1231.0, "[05:20:31] [pbshb] verifying hosts (testinfra)"),
    (1240.0, "[05:20:40] [pbsha] verify: all checks passed"),
    (1250.0, "[05:20:50] [pbshb] verify: all checks passed"),
]


def test_fresh_fleet(bench):
    stages = bench.up_stages(_lines(bench, FRESH_FLEET))
    assert stages["image_layers"] == {
        "debian-12-base-39e31ffdb402": 43,
        "debian-12-builder-2d5a0b73e731": 101,
        "debian-12-host-92904e1129fc": 46,
        "debian-12-deps-40c5f2e2e583": 4,
    }
    assert stages["image_layers_s"] == 194
    assert stages["openpbs_packages"] == "built"
    assert stages["openpbs_packages_s"] == 617
    # The host and deps layers are made inside the fleet's "up in 114s": boot is what is left.
    assert stages["hosts_up_s"] == 64.0
    assert stages["deploy_s"] == 269.0  # the first start to the last cluster's end
    assert stages["deploy_per_cluster"] == {
        "pbsha": {"seconds": 219.0, "changed": 108},
        "pbshb": {"seconds": 268.0, "changed": 108},
    }
    assert stages["idempotence_gate_per_cluster_s"] == {"pbsha": 99.0, "pbshb": 79.0}
    assert stages["idempotence_gate_s"] == 129.0
    assert stages["verify_s"] == 49.0
    assert stages["up_deploy_s"] == 1150.0


def test_failed_gate_and_missing_lines(bench):
    lines = _lines(bench, [*ONE_CLUSTER_WARM[:7], (170.0, "[06:13:00] idempotence gate FAILED: a second deploy ...")])
    stages = bench.up_stages(lines)
    assert stages["idempotence_gate"] == "failed"
    assert stages["idempotence_gate_s"] is None
    assert stages["verify_s"] is None
    empty = bench.up_stages([])
    assert empty["hosts_up_s"] is None
    assert empty["deploy_s"] is None
    assert empty["openpbs_packages"] == "not seen"


def test_pytest_summary(bench):
    summary = "===== 61 passed, 3 xfailed, 10 skipped in 880.21s (0:14:40) ====="
    lines = _lines(bench, [(1.0, "noise"), (900.0, summary)])
    assert bench.pytest_summary(lines) == "61 passed, 3 xfailed, 10 skipped"
    assert bench.pytest_summary(_lines(bench, [(1.0, "no summary")])) is None


def test_acceptance_dry_run_commands(bench, tmp_path):
    """The commands of this checkout's ./acceptance, as the bench names them (it fails on one it does not know).
    OPENPBS is a folder of two package files that pass the judge's checks (name and ar magic only; nothing is
    installed in a dry run): the checkout itself is not OpenPBS, and ./acceptance refuses it before anything."""
    for name in ("openpbs-server_23.06.06-1_amd64.deb", "openpbs-execution_23.06.06-1_amd64.deb"):
        (tmp_path / name).write_bytes(b"!<arch>\n")
    out = subprocess.run(
        ["./acceptance", "--dry-run", "CLUSTERS=1", f"OPENPBS={tmp_path}", "UP_ARGS=--name-prefix bf --subnet auto"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    commands = bench.acceptance_commands(out.stdout)
    assert [c.name for c in commands] == ["system-packages", "venv", "test-line", "up", "test"]
    up = commands[3].argv
    assert up[:2] == [".venv/bin/pbs-harness", "up"]
    assert "--idempotence" in up
    assert up[-4:] == ["--name-prefix", "bf", "--subnet", "auto"]
    with pytest.raises(ValueError, match="does not know"):
        bench.acceptance_commands("rm -rf /\n")


def _phase(bench, rc=0, whole=500.0, **stages):
    base = {"system_packages_s": 1.0, "venv_s": 30.0, "image_layers_s": 0.0, "openpbs_packages_s": 0.0,
            "hosts_up_s": 10.0, "deploy_s": 100.0, "idempotence_gate_s": 60.0, "verify_s": 8.0,
            "suites_s": 300.0, "up_deploy_s": 115.0}  # fmt: skip
    return {"rc": rc, "whole_s": whole, "stages": {**base, **stages}}


def test_judge(bench):
    phases = {"fresh": _phase(bench, whole=1500.0, openpbs_packages_s=617.0), "warm": _phase(bench)}
    verdicts = bench.judge(phases, clusters=4, scope="acceptance")
    assert verdicts["fresh_whole_s"] == "missed: 1500.0s, largest stage openpbs_packages_s"
    assert verdicts["warm_whole_s"] == "met"
    assert verdicts["warm_up_deploy_4_clusters_s"] == "missed: 115.0s, largest stage deploy_s"
    partial = bench.judge({"warm": _phase(bench)}, clusters=1, scope="up")
    assert partial["fresh_whole_s"] == "not judged: no fresh phase in this run"
    assert partial["warm_whole_s"] == "not judged: --scope up leaves the suites out"
    assert partial["warm_up_deploy_4_clusters_s"] == "not judged: 1 cluster(s), the target is for 4"
    failed = bench.judge({"warm": _phase(bench, rc=1)}, clusters=4, scope="acceptance")
    assert failed["warm_whole_s"] == "not judged: the warm run failed (exit 1)"


def test_arguments(bench, tmp_path):
    args = bench.parse_args(["--phases", "warm", "--openpbs", str(tmp_path), "--workdir", str(tmp_path / "w")])
    assert args.phase_list == ["warm"]
    assert args.cache_dir is None
    args = bench.parse_args(["--openpbs", str(tmp_path), "--workdir", str(tmp_path / "w")])
    assert args.cache_dir == str(tmp_path / "w" / "cache")  # fresh: a new cache of its own
    full = tmp_path / "full"
    full.mkdir()
    (full / "images").mkdir()
    with pytest.raises(SystemExit):
        bench.parse_args(["--cache-dir", str(full), "--openpbs", str(tmp_path)])
    with pytest.raises(SystemExit):
        bench.parse_args(["--phases", "cold", "--openpbs", str(tmp_path)])
    with pytest.raises(SystemExit):
        bench.parse_args(["--phases", "warm", "--import-packages", str(tmp_path / "x.tar.gz"), "--openpbs", "x"])
