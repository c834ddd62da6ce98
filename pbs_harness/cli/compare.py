"""`report --compare A.json B.json` (the behaviour diff of two builds) and `report --matrix A.json ...`
(interfaces by builds). Every input and the output folder are judged before anything is written."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pbs_harness.cli.common import cannot_write, progress, read_only
from pbs_harness.common import errors
from pbs_harness.common.errors import PreconditionError, UsageError

COMPARE_FILES = ("compare.md", "compare.html")
MATRIX_FILES = ("matrix.md", "matrix.html")


def _distinct(paths: list[str], option: str) -> list[Path]:
    """The report paths, refusing one file given twice (under any name)."""
    out: list[Path] = []
    for given in map(Path, paths):
        for seen in out:
            if given.exists() and seen.exists() and os.path.samefile(given, seen):
                raise UsageError(
                    f"{option}: {given} and {seen} are the same file",
                    "give the conformance.json of each build once (e.g. reports of two runs)",
                )
        out.append(given)
    return out


def _out_folder(arg: str | None, default: str, names: tuple[str, ...]) -> Path:
    """The folder the pages go to: missing (and creatable), or holding nothing but an earlier such pair."""
    from pbs_harness.common import project

    out = Path(arg) if arg else project.root() / "reports" / default
    hint = f"give --out a new or empty folder this user can write (default reports/{default}/)"
    if out.exists():
        if not out.is_dir():
            raise PreconditionError(f"output folder {out} is not a folder", hint)
        others = sorted(p.name for p in out.iterdir() if p.name not in names)
        if others:
            shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
            raise PreconditionError(f"output folder {out} holds other files ({shown}): nothing was written", hint)
        why = cannot_write(out)
        if why:
            raise PreconditionError(f"output folder {out} is not writable ({why})", hint)
        return out
    parent = next(p for p in out.absolute().parents if p.exists())
    if parent.is_dir() and read_only(parent):
        raise PreconditionError(f"output folder {out} cannot be created ({parent} is on a read-only file system)", hint)
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise PreconditionError(f"output folder {out} cannot be created ({parent} is not a writable folder)", hint)
    return out


def cmd_compare(args: argparse.Namespace) -> int:
    from pbs_harness.conformance import builds, compare, compare_pages

    a_path, b_path = _distinct(args.compare, "--compare")
    found = []
    for path in (a_path, b_path):
        loaded = builds.load(path)
        if len(loaded) > 1:
            raise PreconditionError(
                f"{path} holds {len(loaded)} OpenPBS builds ({'; '.join(b.name for b in loaded)}): "
                "--compare takes reports of one build each",
                "put it in --matrix, which gives each build of a report its own column",
            )
        found.append(loaded[0])
    out = _out_folder(args.out, "compare", COMPARE_FILES)
    comparison = compare.compare(found[0], found[1])
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in COMPARE_FILES]
    compare_pages.write_markdown(paths[0], comparison)
    compare_pages.write_html(paths[1], comparison)
    summary = comparison.summary()
    progress(
        f"behaviour diff of {found[0].short} ({a_path}) and {found[1].short} ({b_path}): "
        f"{summary['status changed']} of {summary['interfaces']} interfaces change status, "
        f"{summary['tests with another outcome']} tests change outcome"
    )
    progress("written: " + ", ".join(str(p) for p in paths))
    return errors.EXIT_OK


def cmd_matrix(args: argparse.Namespace) -> int:
    from pbs_harness.conformance import builds, matrix_pages

    found = [b for path in _distinct(args.matrix, "--matrix") for b in builds.load(path)]
    out = _out_folder(args.out, "matrix", MATRIX_FILES)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in MATRIX_FILES]
    matrix_pages.write_markdown(paths[0], found)
    matrix_pages.write_html(paths[1], found)
    progress(f"matrix of {len(found)} builds: " + "; ".join(matrix_pages.column_heads(found)))
    progress("written: " + ", ".join(str(p) for p in paths))
    return errors.EXIT_OK
