"""Mutants as data, and applying them to a source tree and taking them back.

Two forms, both a change to files of an OpenPBS source tree:
  - ours (bench/mutants.yaml): per mutant a file, the smallest exact text to find in it (it must
    occur exactly once, so the mutant cannot silently change the wrong place or nothing) and its
    replacement, with the behaviour it breaks in our words;
  - a user's unified diff (`git diff` / `diff -u` output), applied with GNU patch -p1.

Applying keeps each touched file's original bytes; reverting writes them back, so the tree is the
pristine source again whatever the patch did. Errors say which mutant, file and text is wrong.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from pbs_harness.common.errors import PreconditionError

# Fields of a mutant in bench/mutants.yaml (all required but `select`).
FIELDS = ("name", "file", "find", "replace", "breaks", "suite")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass(frozen=True)
class Mutant:
    """One change to the OpenPBS source: find/replace in one file, or a unified diff."""

    name: str
    breaks: str  # the behaviour broken, in our own words
    suite: str  # the pytest marker of the suite that must catch it
    file: str = ""  # path in the source tree (find/replace form)
    find: str = ""
    replace: str = ""
    diff: str = ""  # unified diff text (a user's patch file)
    select: str = ""  # optional pytest -k expression: the tests of the suite guarding this behaviour

    @property
    def files(self) -> list[str]:
        return [self.file] if not self.diff else diff_files(self.diff)


def _bad(where: str, what: str) -> PreconditionError:
    return PreconditionError(
        f"{where}: {what}", "each mutant needs name, file, find, replace, breaks, suite (docs/mutants.md)"
    )


def load(path: Path) -> list[Mutant]:
    """The mutants of a YAML file: a list under `mutants:`."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise PreconditionError(f"cannot read mutants file {path}: {exc}", "name a readable YAML file") from exc
    items = data.get("mutants") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise _bad(str(path), "no list under 'mutants:'")
    mutants, names = [], set()
    for i, item in enumerate(items, 1):
        where = f"{path} mutant {i}"
        if not isinstance(item, dict):
            raise _bad(where, "is not a mapping")
        missing = [f for f in FIELDS if not isinstance(item.get(f), str) or (f != "replace" and not item[f].strip())]
        if missing:
            raise _bad(where, f"missing or empty: {', '.join(missing)}")
        unknown = sorted(set(item) - {*FIELDS, "select"})
        if unknown:
            raise _bad(where, f"unknown field(s): {', '.join(unknown)}")
        if not _NAME.match(item["name"]) or item["name"] in names:
            raise _bad(where, f"name {item['name']!r} is not a unique lower-case name")
        if item["find"] == item["replace"]:
            raise _bad(where, "find and replace are the same text")
        _check_relative(item["file"], where)
        names.add(item["name"])
        mutants.append(Mutant(**{k: item[k] for k in (*FIELDS, "select") if k in item}))
    return mutants


def from_diff(path: Path, suite: str, select: str = "") -> Mutant:
    """A user's patch file as a mutant."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise PreconditionError(
            f"cannot read patch file {path}: {exc}", "name a unified diff (git diff output)"
        ) from exc
    if not diff_files(text):
        raise PreconditionError(
            f"{path} is not a unified diff: no '+++ ' file header in it", "give `git diff` or `diff -u` output"
        )
    name = re.sub(r"[^a-z0-9_-]+", "-", path.stem.lower()).strip("-") or "patch"
    return Mutant(name=name, breaks=f"the change of {path.name}", suite=suite, diff=text, select=select)


def _check_relative(file: str, where: str) -> None:
    p = PurePosixPath(file)
    if p.is_absolute() or ".." in p.parts:
        raise _bad(where, f"file {file!r} must be a path inside the source tree (e.g. src/resmom/start_exec.c)")


def diff_files(text: str) -> list[str]:
    """The files a unified diff changes, as paths in the tree (the -p1 form: a/ b/ stripped)."""
    files = []
    for line in text.splitlines():
        if line.startswith("+++ "):
            name = line[4:].split("\t")[0].strip()
            if name == "/dev/null":
                continue
            parts = PurePosixPath(name).parts
            rel = str(PurePosixPath(*parts[1:])) if len(parts) > 1 else name
            if rel not in files:
                files.append(rel)
    return files


def replace_once(text: str, find: str, replace: str, where: str) -> str:
    """`text` with the one occurrence of `find` replaced; an error when it occurs 0 or 2+ times."""
    count = text.count(find)
    if count != 1:
        raise PreconditionError(
            f"{where}: the text to find occurs {count} times, not exactly once: {find!r}",
            "make the find text longer (e.g. with its line's indentation) so it names one place; "
            "or the source is not the one the mutant was written for",
        )
    return text.replace(find, replace, 1)


@dataclass
class Applied:
    """A mutant applied to a tree: the original bytes of each file it touched."""

    tree: Path
    originals: dict[str, bytes]

    def revert(self) -> None:
        for rel, data in self.originals.items():
            (self.tree / rel).write_bytes(data)


def apply(mutant: Mutant, tree: Path) -> Applied:
    """Apply the mutant to the source tree; the returned Applied reverts it."""
    files = mutant.files
    for rel in files:
        _check_relative(rel, f"mutant {mutant.name}")
        if not (tree / rel).is_file():
            raise PreconditionError(
                f"mutant {mutant.name}: {rel} is not a file of the source tree {tree}",
                "check the path (relative to the source's top folder, e.g. src/server/accounting.c)",
            )
    applied = Applied(tree, {rel: (tree / rel).read_bytes() for rel in files})
    if not mutant.diff:
        path = tree / mutant.file
        text = path.read_text()
        path.write_text(replace_once(text, mutant.find, mutant.replace, f"mutant {mutant.name}, {mutant.file}"))
        return applied
    if not shutil.which("patch"):
        raise PreconditionError("GNU patch is missing (it applies patch files)", "apt-get install -y patch")
    res = subprocess.run(
        ["patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch", "-r", "-"],
        cwd=tree,
        input=mutant.diff,
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        applied.revert()  # a partly applied patch is taken back whole
        raise PreconditionError(
            f"patch {mutant.name} does not apply to {tree}:\n{(res.stdout + res.stderr).strip()[-1500:]}",
            "make the diff against the source the cluster was built from (its paths as a/src/..., b/src/...)",
        )
    return applied
