"""The marked block of /etc/hosts that names the local cluster's hosts.

The file is rewritten in place (not replaced) because /etc/hosts is often a bind mount.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

BEGIN = "# BEGIN pbs-harness local cluster (managed: `pbs-harness down` removes this block)"
END = "# END pbs-harness local cluster"
HOSTS_FILE = Path("/etc/hosts")


def strip_block(text: str) -> str:
    """Return text without our block (and without a half-written block's tail)."""
    out: list[str] = []
    inside = False
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\n")
        if stripped.startswith("# BEGIN pbs-harness local cluster"):
            inside = True
            continue
        if inside and stripped == END:
            inside = False
            continue
        if not inside:
            out.append(line)
    return "".join(out)


def with_block(text: str, entries: Iterable[tuple[str, str]]) -> str:
    """Return text with our block replaced by one naming entries (ip, name)."""
    base = strip_block(text)
    if base and not base.endswith("\n"):
        base += "\n"
    lines = [BEGIN] + [f"{ip}\t{name}" for ip, name in entries] + [END]
    return base + "\n".join(lines) + "\n"


def _rewrite(path: Path, new: str) -> bool:
    old = path.read_text() if path.exists() else ""
    if old == new:
        return False
    with path.open("r+" if path.exists() else "w") as fh:
        fh.seek(0)
        fh.write(new)
        fh.truncate()
    return True


def install(entries: Iterable[tuple[str, str]], path: Path = HOSTS_FILE) -> bool:
    old = path.read_text() if path.exists() else ""
    return _rewrite(path, with_block(old, entries))


def remove(path: Path = HOSTS_FILE) -> bool:
    if not path.exists():
        return False
    return _rewrite(path, strip_block(path.read_text()))
