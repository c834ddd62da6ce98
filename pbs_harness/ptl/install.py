"""PTL from the cluster's own OpenPBS source, installed into an isolated virtualenv (never the project's).

The source is an OpenPBS archive (.tar.gz) or source tree. It must be the one the cluster's OpenPBS
was built from: scripts/install-openpbs-from-source.sh records its id (`archive:<sha256>` or
`tree:<sha256 of the files' sha256 lines>`) in `<prefix>/.pbs-harness-source`; an installation
without that record (official packages) is compared by version (configure.ac's AC_INIT against the
server's pbs_version).

The virtualenv is made with the hosts' own Python (they must be able to run it) and holds what
`configure --enable-ptl` + `make install` would: the `ptl` package (its `__init__.py` rendered with
the version), PTL's `bin/` scripts with the virtualenv's interpreter, and `test/fw/requirements.txt`
with `nose` replaced by `pynose`: nose 1.3.7 does not import on Python >= 3.10 (collections.Callable),
pynose is its maintained fork with the same `nose` package and plugin API that PTL's runner uses
(nose-py3 1.9.1 lacks `nose.core.TextTestRunner`, which ptl_test_runner.py imports).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from pbs_harness.common import safetar
from pbs_harness.common.errors import PreconditionError
from pbs_harness.deploy.openpbs_source import sha256_file

# What PTL needs from the source: the framework, the tests, upstream's accounts list and the version.
SOURCE_PARTS = ("test/fw", "test/tests", "ci/etc/install-system-packages", "configure.ac")
NOSE_FORK = "pynose"
_AC_INIT = re.compile(r"AC_INIT\(\[[^\]]*\],\s*\[([^\]]+)\]")


@dataclass(frozen=True)
class Source:
    path: Path
    ident: str  # archive:<sha256> or tree:<sha256>, as install-openpbs-from-source.sh records it


def tree_ident(root: Path) -> str:
    """`find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum`."""
    files = sorted(
        (p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and p.relative_to(root).parts[0] != ".git"),
        key=lambda p: ("./" + p.relative_to(root).as_posix()).encode(),
    )
    listing = "".join(f"{sha256_file(p)}  ./{p.relative_to(root).as_posix()}\n" for p in files)
    return "tree:" + hashlib.sha256(listing.encode()).hexdigest()


def source(path: Path) -> Source:
    if path.is_dir():
        if not (path / "configure.ac").is_file() or not (path / "test" / "fw").is_dir():
            raise PreconditionError(f"{path} is not an OpenPBS source tree (no configure.ac or test/fw)",
                                    "name the top folder of an OpenPBS checkout, or an openpbs-*.tar.gz")  # fmt: skip
        return Source(path, tree_ident(path))
    if path.is_file() and path.name.endswith((".tar.gz", ".tgz")):
        return Source(path, "archive:" + sha256_file(path))
    raise PreconditionError(
        f"{path} is neither an OpenPBS source tree nor a .tar.gz archive",
        "name the OpenPBS source the cluster's OpenPBS was built from (--source / OPENPBS_SOURCE)",
    )


def version_of(configure_ac: str) -> str | None:
    m = _AC_INIT.search(configure_ac)
    return m[1].strip() if m else None


def check_same_source(src: Source, recorded: str | None, configure_ac: str, server_version: str | None) -> str:
    """Refuse a source other than the cluster's; returns how the match was established."""
    if recorded:
        if recorded != src.ident:
            raise PreconditionError(
                f"{src.path} ({src.ident}) is not the source the cluster's OpenPBS was built from ({recorded})",
                "name that source (--source / OPENPBS_SOURCE), or rebuild OpenPBS from this one "
                "(scripts/install-openpbs-from-source.sh)",
            )
        return f"same source as the installation ({recorded})"
    version = version_of(configure_ac)
    if not version or not server_version or not server_version.startswith(version):
        raise PreconditionError(
            f"{src.path} is OpenPBS {version or '(no version)'}; the cluster runs {server_version or '(unknown)'}",
            "name the source of the cluster's OpenPBS version (--source / OPENPBS_SOURCE)",
        )
    return f"same version as the server ({server_version}); the installation records no source id"


def extract(src: Source, dest: Path) -> None:
    """SOURCE_PARTS of the source into dest (dest/test/fw, dest/test/tests, ...), replacing what was there."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    if src.path.is_dir():
        for part in SOURCE_PARTS:
            target = dest / part
            target.parent.mkdir(parents=True, exist_ok=True)
            (shutil.copytree if (src.path / part).is_dir() else shutil.copy2)(src.path / part, target)
        return
    with tarfile.open(src.path) as tar:
        members = []
        for m in tar.getmembers():
            inner = m.name.split("/", 1)[1] if "/" in m.name else ""
            if any(inner == p or inner.startswith(p + "/") for p in SOURCE_PARTS):
                m.name = inner
                members.append(m)
        safetar.extract(tar, dest, members)


def requirements(requirements_txt: str) -> list[str]:
    """PTL's requirements with nose replaced by its maintained fork."""
    names = [r.strip() for r in requirements_txt.splitlines() if r.strip() and not r.strip().startswith("#")]
    return [NOSE_FORK if n.lower() == "nose" else n for n in names]


def build(src: Source, build_dir: Path, host_python: str, run=subprocess.run) -> bool:
    """PTL of `src` into build_dir/{src,venv}; a no-op when the stamp says it is already there.
    Returns True when it built."""
    stamp = build_dir / "installed.json"
    if stamp.exists() and json.loads(stamp.read_text()).get("source") == src.ident:
        return False
    extract(src, build_dir / "src")
    fw = build_dir / "src" / "test" / "fw"
    venv = build_dir / "venv"
    if venv.exists():
        shutil.rmtree(venv)
    run([host_python, "-m", "venv", str(venv)], check=True)
    reqs = requirements((fw / "requirements.txt").read_text())
    # Without this process's PYTHONPATH: pip would see our own checkout's package there and report its
    # requirements as missing from PTL's virtualenv, which never uses it.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", *reqs], check=True, env=env)
    site = Path(run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    check=True, capture_output=True, text=True).stdout.strip())  # fmt: skip
    version = version_of((build_dir / "src" / "configure.ac").read_text()) or "unknown"
    shutil.copytree(fw / "ptl", site / "ptl", dirs_exist_ok=True)
    init_in = site / "ptl" / "__init__.py.in"
    (site / "ptl" / "__init__.py").write_text(init_in.read_text().replace("@PBS_VERSION@", version))
    init_in.unlink()
    for script in sorted((fw / "bin").iterdir()):
        lines = script.read_text().splitlines(keepends=True)
        target = venv / "bin" / script.name
        target.write_text(f"#!{venv / 'bin' / 'python3'}\n" + "".join(lines[1:]))
        target.chmod(0o755)
    stamp.write_text(json.dumps({"source": src.ident, "path": str(src.path), "version": version,
                                 "requirements": reqs}, indent=2) + "\n")  # fmt: skip
    return True
