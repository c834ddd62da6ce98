"""The marked blocks of /etc/hosts that name the local clusters' hosts: one block per cluster.

A block is tagged with its cluster's state directory, so several clusters on one machine each
add and remove only their own names. The file is rewritten in place (not replaced) because
/etc/hosts is often a bind mount.

Earlier versions wrote one untagged block (`# BEGIN pbs-harness local cluster`); such a legacy
block is taken as a cluster's own only when every name in it is one of that cluster's hosts.
"""

from __future__ import annotations

import contextlib
import fcntl
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

HOSTS_FILE = Path("/etc/hosts")
HOSTS_LOCK = Path("/run/lock/pbs-harness/etc-hosts.lock")  # beside the session locks, not in /etc
LEGACY_BEGIN = "# BEGIN pbs-harness local cluster"
LEGACY_END = "# END pbs-harness local cluster"
_BEGIN_RE = re.compile(r"^# BEGIN pbs-harness cluster (?P<id>.+?) \(managed")
_END_RE = re.compile(r"^# END pbs-harness cluster (?P<id>.+)$")


def begin_line(cluster: str) -> str:
    return f"# BEGIN pbs-harness cluster {cluster} (managed: `pbs-harness down` removes this block)"


def end_line(cluster: str) -> str:
    return f"# END pbs-harness cluster {cluster}"


@dataclass(frozen=True)
class Block:
    """One cluster's block: its id (state directory; "" for a legacy block) and (ip, name) entries."""

    cluster: str
    entries: tuple[tuple[str, str], ...]
    start: int  # line indexes in the file, end exclusive
    end: int

    @property
    def names(self) -> set[str]:
        return {name for _, name in self.entries}


def _begin_id(line: str) -> str | None:
    if line.startswith(LEGACY_BEGIN):
        return ""
    m = _BEGIN_RE.match(line)
    return m["id"] if m else None


def _is_end(line: str, cluster: str) -> bool:
    if cluster == "":
        return line == LEGACY_END
    m = _END_RE.match(line)
    return bool(m) and m["id"] == cluster


def blocks(text: str) -> list[Block]:
    """Every pbs-harness block of the file. A block missing its END line (a write cut short)
    ends where the next block begins, or at the end of the file."""
    lines = text.splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        cluster = _begin_id(lines[i])
        if cluster is None:
            i += 1
            continue
        start, entries = i, []
        i += 1
        while i < len(lines) and not _is_end(lines[i], cluster) and _begin_id(lines[i]) is None:
            words = lines[i].split()
            if len(words) >= 2 and not words[0].startswith("#"):
                entries.append((words[0], words[1]))
            i += 1
        if i < len(lines) and _is_end(lines[i], cluster):
            i += 1
        found.append(Block(cluster, tuple(entries), start, i))
    return found


def _owned(block: Block, cluster: str, names: set[str]) -> bool:
    if block.cluster == cluster:
        return True
    return block.cluster == "" and bool(block.names) and block.names <= names


def strip_block(text: str, cluster: str, names: Iterable[str] = ()) -> str:
    """Return text without the cluster's block (nor a legacy block holding only its `names`)."""
    own_names = set(names)
    drop = [b for b in blocks(text) if _owned(b, cluster, own_names)]
    if not drop:
        return text
    lines = text.splitlines(keepends=True)
    skip = {i for b in drop for i in range(b.start, b.end)}
    return "".join(line for i, line in enumerate(lines) if i not in skip)


def with_block(text: str, cluster: str, entries: Iterable[tuple[str, str]]) -> str:
    """Return text with the cluster's block replaced by one naming entries (ip, name)."""
    entries = list(entries)
    base = strip_block(text, cluster, (name for _, name in entries))
    if base and not base.endswith("\n"):
        base += "\n"
    lines = [begin_line(cluster)] + [f"{ip}\t{name}" for ip, name in entries] + [end_line(cluster)]
    return base + "\n".join(lines) + "\n"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise read-modify-write of the file between clusters brought up or down at once (two
    `up`s of a fleet would otherwise each write back a text without the other's block)."""
    lock = HOSTS_LOCK if path == HOSTS_FILE else path.with_name(f".{path.name}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _rewrite(path: Path, new: str) -> bool:
    old = path.read_text() if path.exists() else ""
    if old == new:
        return False
    with path.open("r+" if path.exists() else "w") as fh:
        fh.seek(0)
        fh.write(new)
        fh.truncate()
    return True


def read_blocks(path: Path = HOSTS_FILE) -> list[Block]:
    return blocks(path.read_text()) if path.exists() else []


def install(cluster: str, entries: Iterable[tuple[str, str]], path: Path = HOSTS_FILE) -> bool:
    with _locked(path):
        old = path.read_text() if path.exists() else ""
        return _rewrite(path, with_block(old, cluster, entries))


def remove(cluster: str, names: Iterable[str] = (), path: Path = HOSTS_FILE) -> bool:
    if not path.exists():
        return False
    with _locked(path):
        return _rewrite(path, strip_block(path.read_text(), cluster, names))
