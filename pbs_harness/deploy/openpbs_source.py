"""What `--openpbs PATH` names, and where that OpenPBS came from (its provenance).

Accepted: an OpenPBS release zip (a folder of .deb or .rpm files inside), a folder of .deb/.rpm
files, an OpenPBS source archive (.tar.gz, as `git archive` or GitHub makes them) or a source
tree (a folder with configure.ac and ci/etc/build-pbs-packages.sh). Sources are built into
packages (pbs_harness.deploy.openpbs_build); packages are used as they are.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from pbs_harness.common.errors import PreconditionError

BUILD_SCRIPT = "ci/etc/build-pbs-packages.sh"
PROVENANCE_FILE = "openpbs-source.json"
SOURCE_FORMAT = "pbs-harness/openpbs-source/1"
# Package name -> the kind of host that gets it (role openpbs_install's openpbs_install_kind).
KINDS = {"openpbs-server": "server", "openpbs-execution": "execution", "openpbs-client": "client"}
_DEB = re.compile(r"^(openpbs-(?:server|execution|client|ptl))_([^_]+)_[^_]+\.deb$")
_RPM = re.compile(r"^(openpbs-(?:server|execution|client|ptl))-(\d[^-]*)-[^-]+\.[^.]+\.rpm$")

ACCEPTED = (
    "an OpenPBS release zip, a folder of OpenPBS .deb/.rpm files, an OpenPBS source archive (.tar.gz) "
    "or an OpenPBS source tree (a folder with configure.ac)"
)


@dataclass(frozen=True)
class Source:
    """One `--openpbs` argument, judged."""

    path: Path
    form: str  # zip | packages | archive | tree
    sha256: str  # of the file, or of a tree's files (names and contents)
    commit: str | None = None  # the upstream commit, when the archive or tree tells it

    @property
    def needs_build(self) -> bool:
        return self.form in ("archive", "tree")


@dataclass
class Provenance:
    """Where the packages a cluster runs came from: written beside them as openpbs-source.json and
    copied onto each host at deploy, where the conformance report reads it back
    (pbs_harness/conformance/provenance.py reads the same format, SOURCE_FORMAT)."""

    form: str  # zip | packages | archive | tree
    archive: str  # the --openpbs file or folder name
    sha256: str
    commit: str | None
    version: str
    package_kinds: dict[str, str] = field(default_factory=dict)  # server, execution, client, ptl -> file
    build_image: str | None = None  # the image layer a source was built in

    def to_json(self) -> dict:
        return {"format": SOURCE_FORMAT, **asdict(self), "packages": sorted(self.package_kinds.values())}

    @classmethod
    def from_json(cls, data: dict) -> Provenance:
        if data.get("format") != SOURCE_FORMAT:
            raise ValueError(f"not a {SOURCE_FORMAT} record")
        return cls(**{f.name: data.get(f.name) for f in fields(cls)})


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_tree(path: Path) -> str:
    """Names and contents of every file under `path` but .git: two trees with the same files agree."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and ".git" not in p.relative_to(path).parts):
        digest.update(str(file.relative_to(path)).encode() + b"\0")
        digest.update(sha256_file(file).encode())
    return digest.hexdigest()


def archive_commit(path: Path) -> str | None:
    """The commit `git archive` records in the archive's pax header (None for other archives)."""
    try:
        with tarfile.open(path) as tar:
            comment = tar.pax_headers.get("comment", "")
    except (tarfile.TarError, OSError):
        return None
    return comment if re.fullmatch(r"[0-9a-f]{40}", comment) else None


def tree_commit(path: Path) -> str | None:
    """HEAD of a git checkout (None when it is not one or git is missing)."""
    if not (path / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=False
        )
    except OSError:
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", sha) else None


def package_files(names: list[str]) -> dict[str, tuple[str, str]]:
    """OpenPBS package files among `names`: package name -> (file name, version)."""
    found: dict[str, tuple[str, str]] = {}
    for name in names:
        match = _DEB.match(name) or _RPM.match(name)
        if match:
            found[match.group(1)] = (name, match.group(2).split("-")[0])
    return found


def _archive_is_source(path: Path) -> bool:
    """configure.ac at the archive's top, or in its one top folder; then also upstream's package build script
    there (a tarball with a configure.ac that is not OpenPBS used to be taken, and the builder image made)."""
    try:
        with tarfile.open(path) as tar:
            names = [Path(m.name) for m in tar]
    except (tarfile.TarError, OSError) as exc:
        raise PreconditionError(f"--openpbs {path} is not a readable archive: {exc}", f"name {ACCEPTED}") from exc
    tops = {n.parent for n in names if n.name == "configure.ac" and len(n.parts) <= 2}
    if not tops:
        return False
    if not any(top / BUILD_SCRIPT in names for top in tops):
        raise PreconditionError(
            f"--openpbs {path} is a source archive without {BUILD_SCRIPT} (configure.ac alone is not OpenPBS): "
            "not an OpenPBS source archive from 20.0 on",
            f"name {ACCEPTED}; for an older OpenPBS, build its packages yourself and name their folder",
        )
    return True


# The first bytes of a package file: a .deb is an ar archive, an .rpm starts with its lead's magic.
_MAGIC = {".deb": b"!<arch>\n", ".rpm": b"\xed\xab\xee\xdb"}


def _not_packages(heads: dict[str, bytes]) -> list[str]:
    """The package files (name -> its first bytes) that are not packages."""
    return [name for name, head in sorted(heads.items()) if not head.startswith(_MAGIC[Path(name).suffix])]


def _folder_heads(folder: Path) -> dict[str, bytes]:
    heads = {}
    for file, _version in package_files(sorted(p.name for p in folder.iterdir())).values():
        try:
            with (folder / file).open("rb") as f:
                heads[file] = f.read(8)
        except OSError:
            heads[file] = b""  # unreadable: not a package anyone can install
    return heads


def not_packages(folder: Path) -> list[str]:
    """The OpenPBS package files in `folder` that are not packages (empty, or not a .deb/.rpm inside): a set
    cached before pbs-harness checked them (`pbs-harness cache` calls it stale, so that --prune removes it)."""
    return _not_packages(_folder_heads(folder))


def _check_package_heads(where: Path, heads: dict[str, bytes]) -> None:
    """Each package file (name -> its first bytes) is a package: a folder or zip of zero-byte
    openpbs-*.deb files used to be taken, and cached as that OpenPBS version."""
    bad = _not_packages(heads)
    if bad:
        raise PreconditionError(
            f"--openpbs {where}: {', '.join(bad)} {'is not a package' if len(bad) == 1 else 'are not packages'} "
            "(empty, or not a .deb/.rpm file inside)",
            "name the release zip or the folder of package files as OpenPBS published or built them",
        )


def judge(path: Path) -> Source:
    """What `path` is, or a PreconditionError naming what is accepted."""
    if not path.exists():
        raise PreconditionError(f"--openpbs {path} does not exist", f"name {ACCEPTED}")
    path = path.resolve()
    if path.is_dir():
        if (path / "configure.ac").is_file():
            if not (path / BUILD_SCRIPT).is_file():
                raise PreconditionError(
                    f"--openpbs {path} is a source tree without {BUILD_SCRIPT}, the script upstream builds its "
                    "packages with",
                    "use an OpenPBS tree from 20.0 on, or build its packages yourself and name their folder",
                )
            return Source(path, "tree", sha256_tree(path), tree_commit(path))
        found = package_files(sorted(p.name for p in path.iterdir()))
        if {"openpbs-server", "openpbs-execution"} <= set(found):
            _check_package_heads(path, _folder_heads(path))
            return Source(path, "packages", sha256_tree(path))
        raise PreconditionError(
            f"--openpbs {path} is a folder with neither an OpenPBS source tree (configure.ac) nor OpenPBS packages "
            f"(openpbs-server and openpbs-execution .deb/.rpm files; found: {', '.join(sorted(found)) or 'none'})",
            f"name {ACCEPTED}",
        )
    if path.suffix == ".zip":
        if not zipfile.is_zipfile(path):
            raise PreconditionError(f"--openpbs {path} is not a zip file", f"name {ACCEPTED}")
        with zipfile.ZipFile(path) as zf:
            members = {Path(n).name: n for n in zf.namelist()}
            found = package_files(sorted(members))
            heads = {}
            for file, _version in found.values():
                with zf.open(members[file]) as f:
                    heads[file] = f.read(8)
        if {"openpbs-server", "openpbs-execution"} <= set(found):
            _check_package_heads(path, heads)
            return Source(path, "zip", sha256_file(path))
        raise PreconditionError(
            f"--openpbs {path} holds no openpbs-server and openpbs-execution packages", f"name {ACCEPTED}"
        )
    if path.name.endswith((".tar.gz", ".tgz", ".tar.xz", ".tar")):
        if _archive_is_source(path):
            return Source(path, "archive", sha256_file(path), archive_commit(path))
        raise PreconditionError(
            f"--openpbs {path} is an archive with no configure.ac at its top: not an OpenPBS source archive",
            f"name {ACCEPTED}",
        )
    raise PreconditionError(f"--openpbs {path} is none of the accepted forms", f"name {ACCEPTED}")


def main(argv: list[str]) -> int:
    """`python3 -m pbs_harness.deploy.openpbs_source PATH`: PATH judged as `--openpbs PATH` is, with Python's
    standard library alone (no venv yet), so that ./acceptance refuses an OPENPBS that is not OpenPBS before
    it installs anything: OPENPBS=/etc or a zip of empty .deb files used to go through apt-get and make venv
    first (issue #34). Exit 0, or the README's 3 with the message and its fix on stderr."""
    if len(argv) != 1:
        sys.stderr.write("usage: python3 -m pbs_harness.deploy.openpbs_source PATH\n")
        return 2
    try:
        judge(Path(argv[0]))
    except PreconditionError as exc:
        sys.stderr.write(f"{exc}\n")
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
