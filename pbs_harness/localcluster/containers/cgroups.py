"""Cgroups of our own for what the harness runs on this machine: one group per unit (a local
host, a build container), `pbs-harness/<unit>`, in each cgroup hierarchy of the machine (the v1
freezer, v1 name=systemd, the unified v2 tree; or the v2 root alone).

The freezer group gives an exact list of a unit's processes (whatever they fork), a pause (freeze)
and a crash (freeze, SIGKILL all, thaw) that no process survives. The systemd and unified groups
matter to systemd-nspawn, which builds a container's own groups under its launcher's
(pbs_harness.localcluster.containers.nspawn): two containers started from one group would share them.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from pbs_harness.common.errors import PreconditionError, UnreachableError
from pbs_harness.common.waits import wait_until

CGROUP_FS = Path("/sys/fs/cgroup")
GROUP = "pbs-harness"
# Seconds the kernel has to report a group frozen, and a crashed unit's processes gone.
FREEZE_TIMEOUT = 10.0
KILL_TIMEOUT = 10.0


def _hierarchies() -> list[Path]:
    """The cgroup trees a container's launcher joins: every one nspawn or the freezer looks at."""
    if (CGROUP_FS / "cgroup.controllers").exists():  # pure v2
        return [CGROUP_FS]
    found = [CGROUP_FS / name for name in ("freezer", "systemd", "unified") if (CGROUP_FS / name).is_dir()]
    if CGROUP_FS / "freezer" not in found:
        raise PreconditionError(
            "no cgroup freezer on this machine (/sys/fs/cgroup/freezer, or cgroup v2)",
            "mount the v1 freezer hierarchy or boot with cgroup v2: crash and pause need it",
        )
    return found


def _freezer_root() -> Path:
    return CGROUP_FS if (CGROUP_FS / "cgroup.controllers").exists() else CGROUP_FS / "freezer"


def group_dirs(unit: str) -> list[Path]:
    return [h / GROUP / unit for h in _hierarchies()]


def freezer_dir(unit: str) -> Path:
    return _freezer_root() / GROUP / unit


def pids(unit: str) -> list[int]:
    """Every process of the container (the freezer group and any group below it)."""
    top = freezer_dir(unit)
    if not top.exists():
        return []
    found: list[int] = []
    for procs in top.rglob("cgroup.procs"):
        with contextlib.suppress(FileNotFoundError):
            found += [int(p) for p in procs.read_text().split()]
    return found


def is_running(unit: str) -> bool:
    return bool(pids(unit))


def _v1_freezer() -> bool:
    return _freezer_root() != CGROUP_FS


def is_frozen(unit: str) -> bool:
    top = freezer_dir(unit)
    if not top.exists():
        return False
    if _v1_freezer():
        return (top / "freezer.state").read_text().strip() in ("FROZEN", "FREEZING")
    return (top / "cgroup.freeze").read_text().strip() == "1"


def set_frozen(unit: str, frozen: bool, label: str | None = None) -> None:
    """Freeze (and wait until the kernel says frozen) or thaw every process of the unit."""
    top = freezer_dir(unit)
    if not top.exists():
        return
    if _v1_freezer():
        (top / "freezer.state").write_text("FROZEN" if frozen else "THAWED")
        if frozen:
            wait_until(
                lambda: (top / "freezer.state").read_text().strip(),
                lambda state: state == "FROZEN",
                timeout=FREEZE_TIMEOUT,
                describe=f"{label or unit} to freeze",
                interval=0.05,
                max_interval=0.05,
                fail=lambda _: UnreachableError(f"{label or unit} did not freeze within {FREEZE_TIMEOUT:g}s"),
            )
    else:
        (top / "cgroup.freeze").write_text("1" if frozen else "0")


def kill_all(unit: str, timeout: float | None = None, label: str | None = None) -> None:
    """Every process of the unit dies at once: freeze, SIGKILL each, thaw (nothing runs in between).
    `label` names the unit in errors (default: its name)."""
    if not is_running(unit):
        return
    set_frozen(unit, True, label)
    for pid in pids(unit):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    set_frozen(unit, False)
    timeout = KILL_TIMEOUT if timeout is None else timeout
    wait_until(
        lambda: pids(unit),
        lambda left: not left,
        timeout=timeout,
        describe=f"{unit}'s processes to die",
        interval=0.05,
        max_interval=0.05,
        fail=lambda left: UnreachableError(f"{label or unit}: processes survived SIGKILL: {left}"),
    )
    remove(unit, keep_top=True)


def remove(unit: str, keep_top: bool = False) -> None:
    """Remove the (empty) cgroups nspawn and the container's systemd left under the unit's groups."""
    for top in group_dirs(unit):
        if not top.exists():
            continue
        for sub in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                sub.rmdir()
        if not keep_top:
            with contextlib.suppress(OSError):
                top.rmdir()
            with contextlib.suppress(OSError):
                top.parent.rmdir()  # pbs-harness/, once no unit is left


def join(unit: str) -> None:
    """Runs in a child between fork and exec: the launcher (and so all it starts) joins the unit's groups."""
    for top in group_dirs(unit):
        (top / "cgroup.procs").write_text(str(os.getpid()))


def prepare(unit: str) -> None:
    """The unit's groups exist and are thawed (before its launcher joins them)."""
    for top in group_dirs(unit):
        top.mkdir(parents=True, exist_ok=True)
    set_frozen(unit, False)
