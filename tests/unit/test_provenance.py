"""Where OpenPBS came from (pbs_harness.conformance.provenance): the records a host may hold, read
into one provenance, and two builds of one pbs_version kept apart in the report.

The records here are written by the tests in the shapes the real writers leave (the stamp of
scripts/install-openpbs-from-source.sh, openpbs-source.json, dpkg-query lines); the stamp test at
the end runs the real script (its already-installed path, on a prefix of its own) on the real
source archives of /work/shared/openpbs when this machine has them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pbs_harness.conformance import catalogue, clusters, provenance, report

ROOT = Path(__file__).resolve().parents[2]
ARCHIVES = Path("/work/shared/openpbs")
# The upstream commits of the archives (their README), which the script must find by itself.
COMMITS = {
    "openpbs-master-cd7ab5e.tar.gz": "cd7ab5edaf03dcac2f1cb9e2f42d75eb117d468a",
    "openpbs-v23.06.06.tar.gz": "be361a18ef37652bece0811ec709f0fe4fc52710",
    "openpbs-v22.05.11.tar.gz": "08f5dd4cf8be469fcc866853e2e90aaa47f4ddda",
}
SHA = "934b2cd0bd86f2fa7ef187ebec44537b4fab26009f9bb083f078d0a1a24b036c"
COMMIT = "be361a18ef37652bece0811ec709f0fe4fc52710"


def output(json_text: str = "", stamp: str = "", dpkg: str = "", rpm: str = "") -> str:
    """What provenance.script prints on a host holding these records."""
    return f"--- json\n{json_text}\n--- stamp\n{stamp}\n--- dpkg\n{dpkg}\n--- rpm\n{rpm}\n"


def test_the_stamp_of_the_source_script_names_archive_and_commit() -> None:
    stamp = f"archive:{SHA}\nname:openpbs-v23.06.06.tar.gz\ncommit:{COMMIT}\n"
    prov = provenance.build("23.06.06", "/opt/pbs", output(stamp=stamp))
    assert (prov.kind, prov.archive, prov.sha256, prov.commit) == ("archive", "openpbs-v23.06.06.tar.gz", SHA, COMMIT)
    assert prov.found_in == "/opt/pbs/.pbs-harness-source"
    assert prov.describe() == (
        f"built from source: archive openpbs-v23.06.06.tar.gz (sha256 934b2cd0bd86); upstream commit {COMMIT} "
        "[/opt/pbs/.pbs-harness-source]"
    )
    assert prov.short() == "23.06.06 @ be361a18ef"
    assert prov.identity() == f"commit {COMMIT}"


def test_an_older_stamp_has_only_the_sha256() -> None:
    prov = provenance.build("23.06.06", "/opt/pbs", output(stamp=f"archive:{SHA}"))
    assert (prov.kind, prov.archive, prov.commit) == ("archive", "", "")
    assert "archive (name not recorded) (sha256 934b2cd0bd86)" in prov.describe()
    assert prov.identity() == f"sha256 {SHA}"
    tree = provenance.build("23.06.06", "/opt/pbs", output(stamp=f"tree:{SHA}"))
    assert tree.kind == "tree"
    assert tree.describe().startswith("built from source: a source tree (files sha256 934b2cd0bd86)")


def test_the_packages_builds_json_wins_and_the_installed_packages_are_named() -> None:
    record = {
        "format": provenance.SOURCE_JSON_FORMAT,
        "archive": "openpbs-v23.06.06.tar.gz",
        "sha256": SHA,
        "commit": COMMIT,
        "build_image": "debian-11",
        "packages": ["openpbs-server_23.06.06-1_amd64.deb"],
    }
    dpkg = "openpbs-server\t23.06.06-1\tinstalled\nopenpbs-client\t23.06.06-1\tconfig-files\n"
    prov = provenance.build("23.06.06", "/opt/pbs", output(json.dumps(record), f"archive:{'0' * 64}", dpkg))
    assert prov.kind == "packages"
    assert prov.found_in == "/opt/pbs/.pbs-harness-source.json"
    assert (prov.commit, prov.build_image, prov.package_files) == (COMMIT, "debian-11", record["packages"])
    # dpkg lists a removed package (config files left) too: only installed ones count.
    assert prov.packages == [provenance.Package("openpbs-server", "23.06.06-1")]
    assert "packages openpbs-server 23.06.06-1; built on debian-11" in prov.describe()
    assert provenance.from_dict(provenance.to_dict(prov)) == prov


def test_packages_without_a_record_and_nothing_at_all() -> None:
    rpm = "openpbs-server\t23.06.06-0\tinstalled\n"
    prov = provenance.build("23.06.06", "/opt/pbs", output(rpm=rpm))
    assert (prov.kind, prov.found_in) == ("packages", "rpm")
    assert prov.short() == "23.06.06 (packages 23.06.06-0)"
    none = provenance.build("23.06.06", "/opt/pbs", output())
    assert none.kind == "unknown"
    assert none.describe() == "installed in /opt/pbs (unknown source)"
    assert none.identity() == ""


def test_a_record_that_is_not_ours_is_not_believed() -> None:
    for text in ("{not json", json.dumps({"archive": "x.tar.gz"}), json.dumps(["format"])):
        assert provenance.build("1", "/p", output(json_text=text)).kind == "unknown"
    assert provenance.build("1", "/p", output(stamp="sha256 of something")).kind == "unknown"
    assert provenance.from_dict({"kind": 3}) is None
    assert provenance.from_dict(None) is None


def test_the_collecting_command_runs_in_a_shell(tmp_path: Path) -> None:
    """The real command of `collect`, in bash, on a prefix holding a stamp."""
    (tmp_path / ".pbs-harness-source").write_text(f"archive:{SHA}\ncommit:{COMMIT}\n")

    def run(command: str) -> str:
        return subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True).stdout

    prov = provenance.collect("23.06.06", str(tmp_path), run)
    assert (prov.kind, prov.commit, prov.found_in) == ("archive", COMMIT, f"{tmp_path}/.pbs-harness-source")


def _env(name: str, commit: str) -> dict:
    prov = provenance.Provenance("23.06.06", "archive", "/opt/pbs/.pbs-harness-source", commit=commit, sha256=SHA)
    return {
        "cluster": name,
        "pbs_version": "23.06.06",
        "provenance": provenance.to_dict(prov),
        "server": f"{name}01",
        "inventory": f"/inv/{name}",
        "hosts": [],
    }


def test_two_builds_of_one_version_get_a_verdict_each(tmp_path: Path) -> None:
    master = "cd7ab5edaf03dcac2f1cb9e2f42d75eb117d468a"
    test = {"nodeid": "t.py::test_one", "specs": ["RD-3"], "differences": []}
    results = {
        "clusters": [_env("pa", master), _env("vm", COMMIT)],
        "tests": [{**test, "outcome": "passed", "cluster": "pa"}, {**test, "outcome": "failed", "cluster": "vm"}],
    }
    split = clusters.split_by_version(results)
    assert [(label, names) for label, names, _ in split] == [
        ("23.06.06 @ cd7ab5edaf", ["pa"]),
        ("23.06.06 @ be361a18ef", ["vm"]),
    ]
    paths = report.write_all(catalogue.load(), results, tmp_path / "none", tmp_path)
    data = json.loads(paths[2].read_text())
    assert [v["provenance"]["commit"] for v in data["side_by_side"]] == [master, COMMIT]
    md = paths[1].read_text()
    assert f"upstream commit {COMMIT}" in md
    # One build on two clusters stays one verdict named by its version.
    same = {**results, "clusters": [_env("pa", COMMIT), _env("vm", COMMIT)]}
    assert [label for label, _, _ in clusters.split_by_version(same)] == ["23.06.06"]


def test_the_report_header_names_the_source(tmp_path: Path) -> None:
    results = {"environment": _env("pbsh", COMMIT), "tests": []}
    paths = report.write_all(catalogue.load(), results, tmp_path / "none", tmp_path)
    assert (
        f"- Source: built from source: archive (name not recorded) (sha256 934b2cd0bd86); upstream commit {COMMIT}"
        in (paths[1].read_text())
    )
    assert json.loads(paths[2].read_text())["header"]["provenance"]["commit"] == COMMIT
    old = {"environment": {"pbs_version": "23.06.06"}, "tests": []}  # a results file of an older harness
    paths = report.write_all(catalogue.load(), old, tmp_path / "none", tmp_path)
    assert "- Source: not recorded (a results file of a harness that did not read it)" in paths[1].read_text()


def _tools_without_git(folder: Path) -> str:
    """A PATH with what the script's already-installed path runs, but no git: it reads the commit with python3."""
    folder.mkdir()
    for tool in ("id", "apt-get", "sha256sum", "cut", "head", "cat", "basename", "gzip"):
        (folder / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    (folder / "python3").symlink_to(os.path.realpath(sys.executable))  # not a pyenv shim, which needs bash on PATH
    return str(folder)


@pytest.mark.skipif(os.geteuid() != 0, reason="the script runs as root only")
@pytest.mark.parametrize("reader", ["git", "python3"])
@pytest.mark.parametrize("archive", sorted(COMMITS))
def test_the_source_script_records_the_archives_name_and_commit(tmp_path: Path, archive: str, reader: str) -> None:
    """The script's already-installed path, on a prefix of its own holding a fake qstat and a stamp
    of the script's older version (sha256 only): it adds the archive's name and upstream commit,
    read with git get-tar-commit-id, or with python3 where git is missing."""
    source = ARCHIVES / archive
    if not source.is_file():
        pytest.skip(f"{source} is not on this machine")
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "qstat").write_text("#!/bin/sh\necho 'pbs_version = 23.06.06'\n")
    (prefix / "bin" / "qstat").chmod(0o755)
    digest = subprocess.run(["sha256sum", source], capture_output=True, text=True, check=True).stdout[:64]
    (prefix / ".pbs-harness-source").write_text(f"archive:{digest}\n")
    path = os.environ["PATH"] if reader == "git" else _tools_without_git(tmp_path / "tools")
    run = subprocess.run(
        [shutil.which("bash") or "/bin/bash", str(ROOT / "scripts/install-openpbs-from-source.sh"), str(source)],
        env={**os.environ, "OPENPBS_PREFIX": str(prefix), "PATH": path},
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "nothing to do" in run.stdout
    assert (
        prefix / ".pbs-harness-source"
    ).read_text() == f"archive:{digest}\nname:{archive}\ncommit:{COMMITS[archive]}\n"

    def shell(command: str) -> str:
        return subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True).stdout

    prov = provenance.collect("23.06.06", str(prefix), shell)
    assert (prov.archive, prov.commit) == (archive, COMMITS[archive])


def test_the_record_the_packages_build_writes_is_the_one_the_report_reads() -> None:
    """One format: pbs_harness.deploy.openpbs_source.Provenance writes it, conformance.provenance reads it."""
    from pbs_harness.deploy.openpbs_source import Provenance as Written

    kinds = {"server": "openpbs-server_23.06.06-1_amd64.deb", "execution": "openpbs-execution_23.06.06-1_amd64.deb"}
    written = Written("archive", "openpbs-v23.06.06.tar.gz", "9" * 64, COMMIT, "23.06.06", kinds, "debian-11-builder-x")
    read = provenance.parse_source_json(json.dumps(written.to_json()))
    assert read == {
        "archive": "openpbs-v23.06.06.tar.gz",
        "sha256": "9" * 64,
        "commit": COMMIT,
        "build_image": "debian-11-builder-x",
        "package_files": sorted(kinds.values()),
    }
    assert Written.from_json(written.to_json()) == written
