"""The import graph of pbs_harness/ and its cycles: `python scripts/import_graph.py [CHECKOUT]`.

Files are nodes, imports edges, read with ast (nothing is imported or run). Two graphs: the imports
run when a module loads (top level), and all of them: the lazy ones inside functions too (a cycle
there is one as soon as both functions run), and those under `if TYPE_CHECKING:` (a module whose
types name another cannot be read without it). tests/unit/test_import_graph.py fails on any cycle in
either; none is left (docs/architecture.md, "Import cycles"). Then the folders of pbs_harness/ that import
each other (with the module imports each way): each such pair runs up against any order of the folders,
and docs/architecture.md ("Folders that import each other") names each with its reason.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "pbs_harness"


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    return {module_name(root, p): p for p in sorted((root / PACKAGE).rglob("*.py"))}


def imports(name: str, path: Path, known: dict[str, Path], top_only: bool) -> set[str]:
    """The package's modules that `name` imports (each `from X import Y` counts Y when it is a module)."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    nodes = tree.body if top_only else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.If) and top_only:  # TYPE_CHECKING blocks: not run
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for named in targets:
            target = named
            while target and target not in known:  # `import a.b.c`: the deepest module of ours it names
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def graph(root: Path, top_only: bool = False) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imports(name, path, known, top_only) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def folder(module: str) -> str:
    """The top-level entry of pbs_harness/ that holds `module` (a module at the top is its own)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def folders_both_ways(edges: dict[str, set[str]]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(A, B), A < B, for folders that import each other: the module imports A -> B, then B -> A."""
    across: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for a, targets in edges.items():
        for b in targets:
            if folder(a) != folder(b):
                across.setdefault((folder(a), folder(b)), []).append((a, b))
    return {
        (x, y): sorted(across[(x, y)]) + sorted(across[(y, x)])
        for (x, y) in sorted(across)
        if x < y and (y, x) in across
    }


if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    for top_only in (True, False):
        edges = graph(root, top_only)
        found = cycles(edges)
        imports_n = sum(map(len, edges.values()))
        what = "top-level imports" if top_only else "all imports (lazy and type-only too)"
        sys.stdout.write(f"{what}: {len(edges)} modules, {imports_n} imports, {len(found)} cycles\n")
        for comp in found:
            sys.stdout.write(f"  cycle of {len(comp)} modules:\n")
            for a in comp:
                for b in sorted(edges[a] & set(comp)):
                    sys.stdout.write(f"    {a} -> {b}\n")
    pairs = folders_both_ways(graph(root))
    sys.stdout.write(f"folders that import each other (all imports): {len(pairs)} pairs\n")
    for (x, y), arrows in pairs.items():
        sys.stdout.write(f"  {x} <-> {y}\n")
        for a, b in arrows:
            sys.stdout.write(f"    {a} -> {b}\n")
