"""make never swallows an exit code (issue #34: the README's codes must survive the commands that run
the harness). Two halves:

- the Makefile as text: its recipes run in bash with -e and pipefail, and no recipe line ignores a code
  (a `-` prefix, `|| true`, `|| :`) or hides a command in $(shell ...), whose code make drops;
- real make on the real Makefile: a rule added on the command line (--eval) whose failure sits where a
  plain /bin/sh would lose it (a pipe's first stage, the first command of a group) fails make.

Nothing is faked; no target of the Makefile itself runs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = ROOT / "Makefile"


def recipe_lines() -> list[tuple[int, str]]:
    """Every recipe line (tab-indented, continuations joined) with its line number."""
    out: list[tuple[int, str]] = []
    lines = MAKEFILE.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("\t"):
            start, text = i + 1, lines[i][1:]
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + " " + lines[i].strip()
            out.append((start, text))
        i += 1
    return out


def test_recipes_run_in_bash_with_errexit_and_pipefail() -> None:
    text = MAKEFILE.read_text()
    assert re.search(r"^SHELL\s*:?=\s*/bin/bash\s*$", text, re.M), "the Makefile must set SHELL := /bin/bash"
    flags = re.search(r"^\.SHELLFLAGS\s*:?=\s*(.+)$", text, re.M)
    assert flags, "the Makefile must set .SHELLFLAGS"
    words = flags.group(1).split()
    assert "pipefail" in words, words
    assert words[-1] == "-c", words
    assert any(w.startswith("-") and "e" in w and w not in {"-o", "-c"} for w in words), words


def test_no_recipe_line_ignores_an_exit_code() -> None:
    assert recipe_lines(), "no recipe found: the parser above no longer reads this Makefile"
    bad = []
    for number, line in recipe_lines():
        prefix = re.match(r"[@+-]*", line).group(0)
        if "-" in prefix:
            bad.append(f"Makefile:{number}: `-` prefix (make ignores the line's failure): {line}")
        if re.search(r"\|\|\s*(true|:)(\s|;|$)", line):
            bad.append(f"Makefile:{number}: `|| true` swallows the code: {line}")
        if "$(shell" in line:
            bad.append(f"Makefile:{number}: $(shell ...) drops the command's exit code: {line}")
    assert not bad, "\n".join(bad)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed (the README installs it first)")
@pytest.mark.parametrize(
    ("recipe", "why"),
    [
        ("false | cat", "a pipe's first stage"),
        ("{ false; true; }", "the first command of a group"),
        ("x=$$(false); echo $$x", "a failing command substitution in an assignment"),
        ("exit 7", "a plain failure"),
    ],
)
def test_make_fails_where_a_plain_shell_would_not(recipe: str, why: str) -> None:
    run = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "--eval", f"exit-code-probe:\n\t{recipe}\n", "exit-code-probe"],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert run.returncode != 0, f"{why}: `{recipe}` did not fail make ({run.stdout}{run.stderr})"
