"""Putting a rebuilt file into every system host, restarting PBS there through systemd, and putting
the packaged file back.

System hosts each have their own root (an overlay under the cluster's state directory), so a file
is written into each root, as the host's package manager would: to a temporary name beside it,
then renamed over the old one (a running daemon keeps its open binary; rename never gives
ETXTBSY). Before the first replacement the host's own packaged file is kept in the state
directory (mutants/backup/HOST/PATH); restoring writes it back and checks the bytes. Backups left
by a killed run are restored before anything else (`heal`).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pbs_harness import hosts
from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import cluster_kind, state

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Roots:
    """The system hosts of a local cluster and where each one's root is on this machine."""

    state_dir: Path
    roots: dict[str, Path]

    @property
    def backup(self) -> Path:
        return self.state_dir / "mutants" / "backup"


def of(state_dir: Path) -> Roots:
    st = state.load_checked(state_dir)
    if st is None:
        raise PreconditionError(
            f"no local cluster is recorded in {state_dir}",
            "bring one up: pbs-harness up --flavour system --openpbs SOURCE --state-dir DIR ...",
        )
    if not hosts.get_kind_class(st.flavour).installs_openpbs_packages:
        raise PreconditionError(
            f"the cluster of {state_dir} has {st.flavour} hosts; a mutant is put into each host's own root",
            "use system hosts: pbs-harness up --flavour system --openpbs SOURCE",
        )
    roots = {}
    for spec in st.spec.hosts:
        own = cluster_kind.of(st.spec).in_cluster(st, spec, state_dir).own_root()
        assert own is not None, f"{st.flavour} hosts install OpenPBS packages into roots of their own"
        roots[spec.name] = own
    missing = [name for name, root in roots.items() if not (root / "etc").is_dir()]
    if missing:
        raise PreconditionError(
            f"the roots of {', '.join(missing)} are not mounted (the cluster is down?)", "pbs-harness up it again"
        )
    return Roots(state_dir, roots)


def _replace(src: Path, target: Path) -> None:
    """`target` gets src's bytes, keeping target's mode and owner; a rename, never a write in place."""
    st = target.stat()
    tmp = target.with_name(f".{target.name}.pbs-harness-tmp")
    shutil.copyfile(src, tmp)
    tmp.chmod(st.st_mode & 0o7777)
    shutil.chown(tmp, st.st_uid, st.st_gid)
    tmp.replace(target)


def put(roots: Roots, stage: Path, files: list[str]) -> dict[str, list[str]]:
    """Each of `files` (paths relative to /) from `stage` into every host that has it installed;
    returns host -> files put. A host without the file (pbs_server.bin on an execution-only host)
    is left alone; a file no host has is an error."""
    placed: dict[str, list[str]] = {}
    for rel in files:
        hosts = [h for h, root in roots.roots.items() if (root / rel).is_file()]
        if not hosts:
            raise PreconditionError(
                f"no host of the cluster has /{rel} installed", "a mutant changes a file the OpenPBS packages install"
            )
        for host in hosts:
            target = roots.roots[host] / rel
            backup = roots.backup / host / rel
            if not backup.exists():  # the first backup is the packaged file; never overwritten by a mutant's
                backup.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(target, backup)
            _replace(stage / rel, target)
            placed.setdefault(host, []).append(rel)
    return placed


def backups(roots: Roots) -> dict[str, list[str]]:
    """host -> files with a backup (a mutant in place, or left by a killed run)."""
    out: dict[str, list[str]] = {}
    if roots.backup.is_dir():
        for p in sorted(roots.backup.rglob("*")):
            if p.is_file():
                host, *rest = p.relative_to(roots.backup).parts
                out.setdefault(host, []).append(str(Path(*rest)))
    return out


def restore(roots: Roots) -> dict[str, list[str]]:
    """Every backed-up file back into its host, bytes checked; the backups removed. host -> files."""
    restored = backups(roots)
    for host, files in restored.items():
        for rel in files:
            backup = roots.backup / host / rel
            target = roots.roots[host] / rel
            _replace(backup, target)
            if target.read_bytes() != backup.read_bytes():
                raise PreconditionError(f"{host}: /{rel} differs from its backup after restoring it", str(backup))
            shutil.copystat(backup, target)  # the packaged mtime too (a .py's cached bytecode stays valid)
            backup.unlink()
    shutil.rmtree(roots.backup, ignore_errors=True)
    return restored
