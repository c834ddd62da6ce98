"""Where the project's files are (playbooks, inventories, suites) and which inventory is in use."""

from __future__ import annotations

import os
from pathlib import Path

from pbs_harness.common.errors import PreconditionError

DEFAULT_INVENTORY = "inventory/local"


def root() -> Path:
    """The checkout holding playbooks/ and ptl_tests/ (env PBS_HARNESS_ROOT overrides)."""
    env = os.environ.get("PBS_HARNESS_ROOT")
    if env:
        if not (Path(env) / "playbooks" / "site.yml").is_file():
            raise PreconditionError(
                f"PBS_HARNESS_ROOT is {env}, which holds no pbs-harness checkout (no playbooks/site.yml there)",
                "set PBS_HARNESS_ROOT to the pbs-harness checkout, or unset it to use the one pbs-harness runs from",
            )
        return Path(env)
    for cand in (Path(__file__).resolve().parents[2], Path.cwd()):
        if (cand / "playbooks" / "site.yml").exists():
            return cand
    raise PreconditionError(
        "cannot find the pbs-harness project files (playbooks/site.yml): the installed package holds the Python "
        "code only; the playbooks, roles, inventories, hooks and suites stay in the git checkout",
        "run pbs-harness from the checkout (`make venv` there), or set PBS_HARNESS_ROOT to the checkout",
    )


def checkout() -> str:
    """This checkout's identity where one is recorded (the local cluster's owner): its resolved root."""
    return str(root().resolve())


def inventory_path(arg: str | None) -> Path:
    path = Path(arg) if arg else root() / DEFAULT_INVENTORY
    if not path.is_absolute() and not path.exists():
        path = root() / path
    if not path.exists():
        raise PreconditionError(
            f"inventory {arg or DEFAULT_INVENTORY!s} does not exist",
            "pass -i with an inventory directory or file (see inventory/cloud.example/)",
        )
    return path.resolve()
