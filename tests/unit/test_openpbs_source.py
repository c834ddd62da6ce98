"""`--openpbs PATH` judged (pbs_harness.deploy.openpbs_source): which form it is, and every refusal with its fix.

Faked: the OpenPBS inputs are small fixtures made in tmp_path — a source archive holding only
TOP/configure.ac and TOP/ci/etc/build-pbs-packages.sh (with the pax 'comment' header `git archive`
writes), a source tree of the same two files, a release zip and a folder of empty files named like
OpenPBS packages. Real: the archives in /work/shared/openpbs/ (read, never unpacked), checked against
the commits and sha256 sums their README lists.
"""

from __future__ import annotations

import hashlib
import io
import re
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from pbs_harness.common.errors import PreconditionError
from pbs_harness.deploy.openpbs_source import BUILD_SCRIPT, archive_commit, judge, package_files, sha256_tree

# FAKE package files: the first bytes of a .deb (an ar archive), which --openpbs checks; nothing more.
FAKE_DEB = b"!<arch>\n"

SHARED = Path("/work/shared/openpbs")
COMMIT = "0123456789abcdef0123456789abcdef01234567"
VERSION = "23.06.06"
DEBS = [f"openpbs-{kind}_{VERSION}-1_amd64.deb" for kind in ("server", "execution", "client", "ptl")]


def make_archive(path: Path, members: dict[str, str], comment: str | None = COMMIT) -> Path:
    """A .tar.gz of `members` (name -> text); with `comment`, the pax global header `git archive` writes."""
    headers = {"comment": comment} if comment else {}
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT, pax_headers=headers) as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


SOURCE_MEMBERS = {"openpbs-abc/configure.ac": "AC_INIT\n", f"openpbs-abc/{BUILD_SCRIPT}": "#!/bin/bash -xe\n"}


def make_tree(path: Path, build_script: bool = True) -> Path:
    (path / "ci" / "etc").mkdir(parents=True)
    (path / "configure.ac").write_text("AC_INIT\n")
    if build_script:
        (path / BUILD_SCRIPT).write_text("#!/bin/bash -xe\n")
    return path


def make_zip(path: Path, names: list[str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name in names:
            zf.writestr(name, FAKE_DEB + b"not a real package")
    return path


def refused(path: Path) -> PreconditionError:
    with pytest.raises(PreconditionError) as err:
        judge(path)
    return err.value


# --- accepted forms ------------------------------------------------------------------------


def test_a_source_archive_is_judged_with_the_commit_git_archive_recorded(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "openpbs-abc.tar.gz", SOURCE_MEMBERS)
    source = judge(archive)
    assert (source.form, source.path, source.commit) == ("archive", archive, COMMIT)
    assert source.sha256 == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert source.needs_build


def test_archive_commit_reads_the_pax_comment_and_nothing_else(tmp_path: Path) -> None:
    assert archive_commit(make_archive(tmp_path / "a.tar.gz", SOURCE_MEMBERS)) == COMMIT
    # GitHub's and hand-made archives carry no such header, or another comment.
    assert archive_commit(make_archive(tmp_path / "b.tar.gz", SOURCE_MEMBERS, comment=None)) is None
    assert archive_commit(make_archive(tmp_path / "c.tar.gz", SOURCE_MEMBERS, comment="made by hand")) is None
    (tmp_path / "d.tar.gz").write_bytes(b"not gzip")
    assert archive_commit(tmp_path / "d.tar.gz") is None
    assert judge(tmp_path / "b.tar.gz").commit is None


def shared_readme_rows() -> list[tuple[str, str, str]]:
    """(file, commit, sha256) of each row of /work/shared/openpbs/README.md's table."""
    rows = []
    for line in (SHARED / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].endswith(".tar.gz"):
            rows.append((cells[0], cells[1].split()[0], cells[4]))
    return rows


@pytest.mark.skipif(not (SHARED / "README.md").is_file(), reason="no /work/shared/openpbs on this machine")
def test_the_shared_openpbs_archives_give_the_commits_and_sums_their_readme_lists() -> None:
    rows = shared_readme_rows()
    assert {name for name, _, _ in rows} == {p.name for p in SHARED.glob("*.tar.gz")}
    for name, commit, sha256 in rows:
        assert re.fullmatch(r"[0-9a-f]{40}", commit), (name, commit)
        source = judge(SHARED / name)
        assert (source.form, source.commit, source.sha256) == ("archive", commit, sha256), name


def test_a_source_tree_is_judged_and_its_sum_ignores_git(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "openpbs")
    source = judge(tree)
    assert (source.form, source.path, source.commit) == ("tree", tree, None)
    assert source.needs_build
    # The same files elsewhere sum the same; a changed file does not; .git is not part of the sum.
    twin = make_tree(tmp_path / "twin")
    assert sha256_tree(twin) == source.sha256
    (twin / ".git").mkdir()
    (twin / ".git" / "HEAD").write_text("ref: refs/heads/master\n")
    assert sha256_tree(twin) == source.sha256
    (twin / "configure.ac").write_text("AC_INIT changed\n")
    assert sha256_tree(twin) != source.sha256


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to make a checkout")
def test_a_git_checkout_gives_its_head_commit(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "openpbs")
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "fixture"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    assert judge(tree).commit == head


def test_a_release_zip_with_packages_in_a_folder_is_a_zip(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "openpbs_23.06.06.ubuntu_20.04.zip", [f"openpbs_23.06.06/{d}" for d in DEBS])
    source = judge(archive)
    assert (source.form, source.commit, source.needs_build) == ("zip", None, False)
    assert source.sha256 == hashlib.sha256(archive.read_bytes()).hexdigest()


def test_a_folder_of_packages_is_packages(tmp_path: Path) -> None:
    for name in [*DEBS, "README.txt"]:
        (tmp_path / name).write_bytes(FAKE_DEB)
    source = judge(tmp_path)
    assert (source.form, source.needs_build) == ("packages", False)


def test_package_files_reads_deb_and_rpm_names_and_their_versions() -> None:
    found = package_files(
        [
            "openpbs-server_23.06.06-1_amd64.deb",
            "openpbs-execution-23.06.06-0.x86_64.rpm",
            "openpbs-ptl_23.06.06-1_all.deb",
            "openpbs-devel_23.06.06-1_amd64.deb",  # not a kind the harness installs
            "pbspro-server_19.1.3-1_amd64.deb",
            "notes.txt",
        ]
    )
    assert found == {
        "openpbs-server": ("openpbs-server_23.06.06-1_amd64.deb", "23.06.06"),
        "openpbs-execution": ("openpbs-execution-23.06.06-0.x86_64.rpm", "23.06.06"),
        "openpbs-ptl": ("openpbs-ptl_23.06.06-1_all.deb", "23.06.06"),
    }


# --- refusals: each names what is wrong and what is accepted ------------------------------


def test_a_missing_path_is_refused(tmp_path: Path) -> None:
    err = refused(tmp_path / "nowhere.zip")
    assert err.message == f"--openpbs {tmp_path / 'nowhere.zip'} does not exist"
    for accepted in ("release zip", "folder of OpenPBS .deb/.rpm files", "source archive", "source tree"):
        assert accepted in err.hint


def test_a_folder_without_packages_or_source_is_refused_naming_what_it_found(tmp_path: Path) -> None:
    err = refused(tmp_path)
    assert "is a folder with neither an OpenPBS source tree (configure.ac) nor OpenPBS packages" in err.message
    assert "found: none" in err.message
    assert err.hint.startswith("name an OpenPBS release zip")
    (tmp_path / DEBS[2]).write_bytes(b"")  # the client package alone
    assert "found: openpbs-client)" in refused(tmp_path).message


def test_a_zip_without_packages_is_refused(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "docs.zip", ["README.md", "openpbs/openpbs-client_23.06.06-1_amd64.deb"])
    err = refused(archive)
    assert err.message == f"--openpbs {archive} holds no openpbs-server and openpbs-execution packages"
    assert "release zip" in err.hint


def test_a_file_named_zip_that_is_not_one_is_refused(tmp_path: Path) -> None:
    (tmp_path / "fake.zip").write_text("hello")
    assert refused(tmp_path / "fake.zip").message == f"--openpbs {tmp_path / 'fake.zip'} is not a zip file"


def test_an_archive_without_configure_ac_at_its_top_is_refused(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "other.tar.gz", {"top/README": "x\n", "top/sub/configure.ac": "AC_INIT\n"})
    err = refused(archive)
    assert err.message == (
        f"--openpbs {archive} is an archive with no configure.ac at its top: not an OpenPBS source archive"
    )
    assert "source archive (.tar.gz)" in err.hint


def test_an_unreadable_archive_is_refused(tmp_path: Path) -> None:
    (tmp_path / "broken.tar.gz").write_bytes(b"\x1f\x8b not really gzip")
    err = refused(tmp_path / "broken.tar.gz")
    assert "is not a readable archive" in err.message
    assert "release zip" in err.hint


def test_a_tree_without_the_build_script_is_refused_with_the_fix(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "old-openpbs", build_script=False)
    err = refused(tree)
    assert err.message == (
        f"--openpbs {tree} is a source tree without {BUILD_SCRIPT}, the script upstream builds its packages with"
    )
    assert err.hint == "use an OpenPBS tree from 20.0 on, or build its packages yourself and name their folder"


def test_a_file_of_another_kind_is_refused(tmp_path: Path) -> None:
    (tmp_path / "openpbs.deb").write_bytes(b"")
    err = refused(tmp_path / "openpbs.deb")
    assert err.message == f"--openpbs {tmp_path / 'openpbs.deb'} is none of the accepted forms"
    assert "folder of OpenPBS .deb/.rpm files" in err.hint
