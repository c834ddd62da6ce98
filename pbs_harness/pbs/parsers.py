"""Parsers for PBS's compact notations: exec_host, exec_vnode, select specs.

exec_host   "h1/0*2+h2/1"                      -> [ExecHostEntry(h1, 0, 2), ExecHostEntry(h2, 1, 1)]
exec_vnode  "(h1:ncpus=1+h1[0]:mem=1gb)+(h2:ncpus=2)" -> chunks (super-chunks) of vnode slices
select      "2:ncpus=3:mem=2gb+ncpus=1"        -> [SelectChunk(2, {...}), SelectChunk(1, {...})]
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExecHostEntry:
    host: str
    index: int
    ncpus: int = 1


def parse_exec_host(value: str) -> list[ExecHostEntry]:
    out = []
    for part in filter(None, value.split("+")):
        host, _, rest = part.partition("/")
        index, _, count = rest.partition("*")
        out.append(ExecHostEntry(host, int(index or 0), int(count) if count else 1))
    return out


@dataclass(frozen=True)
class VnodeSlice:
    """One vnode's share of a chunk, e.g. `h1[0]:ncpus=1:mem=1048576kb`."""

    vnode: str
    resources: dict[str, str] = field(default_factory=dict)

    @property
    def host(self) -> str:
        """The host of a vnode named `host[N]` (or the natural vnode itself)."""
        return self.vnode.split("[", 1)[0]


def _split_top(value: str, sep: str) -> list[str]:
    """Split on sep outside parentheses and brackets."""
    parts, depth, cur = [], 0, []
    for ch in value:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p]


def _slice(text: str) -> VnodeSlice:
    # Vnode names may contain ':' only inside [] which we do not expect; split on top-level ':'.
    name, *pairs = _split_top(text, ":")
    res = dict(p.split("=", 1) for p in pairs)
    return VnodeSlice(name, res)


def parse_exec_vnode(value: str) -> list[list[VnodeSlice]]:
    """Chunks of exec_vnode; a chunk spanning several vnodes (a super-chunk) has several slices."""
    chunks = []
    for part in _split_top(value, "+"):
        inner = part[1:-1] if part.startswith("(") and part.endswith(")") else part
        chunks.append([_slice(s) for s in _split_top(inner, "+")])
    return chunks


def vnodes_of(exec_vnode: str, host: str | None = None) -> list[str]:
    """The vnode of every slice of an exec_vnode value (or resv_nodes), in order, repeats kept;
    with `host`, only the slices on that host. Compare as a set or sorted where order is not meant."""
    return [sl.vnode for chunk in parse_exec_vnode(exec_vnode) for sl in chunk if host is None or sl.host == host]


def exec_vnode_hosts(value: str) -> list[str]:
    """Distinct hosts of an exec_vnode value, in order of first appearance."""
    seen: list[str] = []
    for chunk in parse_exec_vnode(value):
        for sl in chunk:
            if sl.host not in seen:
                seen.append(sl.host)
    return seen


@dataclass(frozen=True)
class SelectChunk:
    count: int
    resources: dict[str, str]

    def __str__(self) -> str:
        return ":".join([str(self.count), *(f"{k}={v}" for k, v in self.resources.items())])


def parse_select(value: str) -> list[SelectChunk]:
    chunks = []
    for part in filter(None, value.split("+")):
        items = part.split(":")
        count = 1
        if items and items[0].isdigit():
            count = int(items.pop(0))
        chunks.append(SelectChunk(count, dict(i.split("=", 1) for i in items if i)))
    return chunks


def format_select(chunks: list[SelectChunk]) -> str:
    return "+".join(str(c) for c in chunks)


_SIZE_UNITS = {"b": 1 / 1024, "w": 8 / 1024, "kb": 1, "kw": 8, "mb": 1024, "mw": 8 * 1024, "gb": 1024**2, "tb": 1024**3}


def size_kb(value: str | int) -> int:
    """A PBS size ("2gb", "1048576kb", "512mb", bare number = bytes) in kilobytes."""
    text = str(value).strip().lower()
    num = text.rstrip("bkmgtw")
    unit = text[len(num) :] or "b"
    return int(float(num) * _SIZE_UNITS[unit])
