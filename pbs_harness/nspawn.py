"""systemd-nspawn on a machine whose PID 1 is not systemd: containers in cgroups of our own.

With `--register=no --keep-unit` nspawn asks no service manager for a scope: it builds the
container's cgroups under the cgroup of the process that starts it (`<that>/payload`,
`<that>/supervisor`). Two containers started from one cgroup would share those, so every
container is started from a cgroup of its own, `pbs-harness/<unit>`, in each hierarchy of the
machine (the v1 freezer, v1 name=systemd, the unified v2 tree; or the v2 root alone). The freezer
group also gives an exact list of the container's processes, a pause (freeze) and a crash (freeze,
SIGKILL all, thaw) that no process survives.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from pbs_harness.errors import PreconditionError, UnreachableError
from pbs_harness.waits import wait_until

CGROUP_FS = Path("/sys/fs/cgroup")
GROUP = "pbs-harness"
PROGRAM = "systemd-nspawn"


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


def cgroup_dirs(unit: str) -> list[Path]:
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


def set_frozen(unit: str, frozen: bool) -> None:
    top = freezer_dir(unit)
    if not top.exists():
        return
    if _v1_freezer():
        (top / "freezer.state").write_text("FROZEN" if frozen else "THAWED")
        if frozen:
            wait_until(
                lambda: (top / "freezer.state").read_text().strip(),
                lambda state: state == "FROZEN",
                timeout=10,
                describe=f"{unit} to freeze",
                interval=0.05,
                max_interval=0.05,
                fail=lambda _: UnreachableError(f"{unit} did not freeze within 10s"),
            )
    else:
        (top / "cgroup.freeze").write_text("1" if frozen else "0")


def kill_all(unit: str, timeout: float = 10) -> None:
    """Every process of the container dies at once: freeze, SIGKILL each, thaw."""
    if not is_running(unit):
        return
    set_frozen(unit, True)
    for pid in pids(unit):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    set_frozen(unit, False)
    wait_until(
        lambda: pids(unit),
        lambda left: not left,
        timeout=timeout,
        describe=f"{unit}'s processes to die",
        interval=0.05,
        max_interval=0.05,
        fail=lambda left: UnreachableError(f"{unit}: processes survived SIGKILL: {left}"),
    )
    remove_cgroups(unit, keep_top=True)


def remove_cgroups(unit: str, keep_top: bool = False) -> None:
    """Remove the (empty) cgroups nspawn and the container's systemd left under the unit's groups."""
    for top in cgroup_dirs(unit):
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


def _join_cgroups(unit: str) -> None:
    """Runs in the child between fork and exec: the launcher (and so the container) joins its groups."""
    for top in cgroup_dirs(unit):
        (top / "cgroup.procs").write_text(str(os.getpid()))


def _prepare(unit: str) -> None:
    for top in cgroup_dirs(unit):
        top.mkdir(parents=True, exist_ok=True)
    set_frozen(unit, False)


def boot_argv(root: Path, name: str, netns: str, extra: Sequence[str] = ()) -> list[str]:
    """A container that boots systemd as PID 1 on `root`, in the network namespace `netns` made beforehand."""
    return [
        PROGRAM,
        "--quiet",
        "--boot",
        f"--directory={root}",
        f"--machine={name}",
        f"--hostname={name}",
        f"--network-namespace-path=/run/netns/{netns}",
        # nspawn grants CAP_NET_ADMIN only with the networks it makes itself; a host's own firewall
        # (and `iptables` in its tests) needs it in this namespace made beforehand.
        "--capability=CAP_NET_ADMIN",
        "--register=no",
        "--keep-unit",
        "--link-journal=no",
        "--resolv-conf=off",
        "--timezone=off",
        "--console=pipe",
        *extra,
    ]


def start(unit: str, argv: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    """Start a container (any nspawn argv) in the unit's own cgroups, its console into `log`."""
    _prepare(unit)
    with log.open("ab") as console:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=console,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lambda: _join_cgroups(unit),  # noqa: PLW1509 - only writes our pid into cgroup files
        )


def run(unit: str, argv: Sequence[str], log: Path, timeout: float) -> int:
    """Run a non-booting container (a build, an install) to its end; its output goes to `log`."""
    proc = start(unit, argv, log)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_all(unit)
        proc.wait(timeout=10)
        raise
    finally:
        kill_all(unit)
        remove_cgroups(unit)
