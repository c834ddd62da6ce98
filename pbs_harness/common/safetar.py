"""Unpacking a tar archive safely on every Python the harness supports.

`extractall(filter="data")` refuses absolute paths, `..`, links out of the folder and device files, but
the `filter` argument came in Python 3.11.4: Debian 12's python3 is 3.11.2 (found on a bare Debian 12,
issue #34: every unpack was a TypeError). There, the same rules are checked here before extracting."""

from __future__ import annotations

import tarfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath


class UnsafeArchive(ValueError):
    """A member would land outside the folder, or is not a file, folder or link."""


def _check(member: tarfile.TarInfo, dest: Path) -> None:
    name = PurePosixPath(member.name)
    if name.is_absolute() or ".." in name.parts:
        raise UnsafeArchive(f"{member.name}: outside the folder")
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        raise UnsafeArchive(f"{member.name}: neither a file, a folder nor a link")
    if member.issym() or member.islnk():
        target = PurePosixPath(member.linkname)
        base = dest / name.parent if member.issym() else dest
        if target.is_absolute() or not (base / target).resolve().is_relative_to(dest.resolve()):
            raise UnsafeArchive(f"{member.name}: a link out of the folder ({member.linkname})")


def extract(tar: tarfile.TarFile, dest: Path | str, members: Iterable[tarfile.TarInfo] | None = None) -> None:
    chosen = list(members) if members is not None else None
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, members=chosen, filter="data")
        return
    for member in chosen if chosen is not None else tar.getmembers():
        _check(member, Path(dest))
    tar.extractall(dest, members=chosen)  # noqa: S202 - every member checked above
