"""Process side of a namespaced host: boot it, crash it, freeze and thaw it.

Each host's processes live in one freezer cgroup (pbs-harness/<host>), which gives
`pause` (freeze all at once), `crash` (freeze, SIGKILL every process, thaw: nothing runs in
between) and an exact answer to "is this host running".
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from pbs_harness.errors import PreconditionError, UnreachableError
from pbs_harness.localcluster import state
from pbs_harness.localcluster.spec import HostSpec
from pbs_harness.waits import wait_until

FREEZER_V1 = Path("/sys/fs/cgroup/freezer")
UNIFIED = Path("/sys/fs/cgroup")
GROUP = "pbs-harness"


def _v1() -> bool:
    return (FREEZER_V1 / "freezer.state").exists() or (FREEZER_V1 / "cgroup.procs").exists()


def cgroup_dir(host: HostSpec) -> Path:
    base = FREEZER_V1 if _v1() else UNIFIED
    return base / GROUP / host.name


def ensure_cgroup(host: HostSpec) -> Path:
    if not _v1() and not (UNIFIED / "cgroup.controllers").exists():
        raise PreconditionError(
            "no cgroup freezer found (neither /sys/fs/cgroup/freezer nor cgroup v2)",
            "mount the cgroup v1 freezer or boot with cgroup v2; `pause`/`crash` need it",
        )
    cg = cgroup_dir(host)
    cg.mkdir(parents=True, exist_ok=True)
    return cg


def pids(host: HostSpec) -> list[int]:
    procs = cgroup_dir(host) / "cgroup.procs"
    if not procs.exists():
        return []
    return [int(p) for p in procs.read_text().split()]


def is_running(host: HostSpec) -> bool:
    return bool(pids(host))


def _set_frozen(host: HostSpec, frozen: bool) -> None:
    cg = cgroup_dir(host)
    if _v1():
        (cg / "freezer.state").write_text("FROZEN" if frozen else "THAWED")
    else:
        (cg / "cgroup.freeze").write_text("1" if frozen else "0")


def is_paused(host: HostSpec) -> bool:
    cg = cgroup_dir(host)
    if not cg.exists():
        return False
    if _v1():
        return (cg / "freezer.state").read_text().strip() in ("FROZEN", "FREEZING")
    return (cg / "cgroup.freeze").read_text().strip() == "1"


def _wait_frozen(host: HostSpec, timeout: float = 10) -> None:
    if not _v1():
        return
    state_file = cgroup_dir(host) / "freezer.state"
    wait_until(
        lambda: state_file.read_text().strip(),
        lambda frozen: frozen == "FROZEN",
        timeout=timeout,
        describe=f"host {host.name} to freeze",
        interval=0.05,
        max_interval=0.05,
        fail=lambda _: UnreachableError(f"host {host.name} did not freeze within {timeout}s"),
    )


def boot(host: HostSpec, timeout: float = 20, root: Path | None = None) -> None:
    """Start the host's init (tini -> host-init.sh -> sshd) and wait until sshd answers.

    `root`: the state directory of the host's cluster (default: $PBS_HARNESS_STATE_DIR or the default)."""
    launch(host, root)
    wait_ssh(host, timeout, root)


def launch(host: HostSpec, root: Path | None = None) -> None:
    """Start the host's init unless it runs, without waiting for its sshd (several hosts boot at once)."""
    if is_running(host):
        return
    cg = ensure_cgroup(host)
    _set_frozen(host, False)
    hdir = state.host_dir(host.name, root)
    init_script = resources.files("pbs_harness.localcluster").joinpath("host-init.sh")
    console = (hdir / "console.log").open("ab")
    argv = [
        "sh", "-c", 'echo $$ > "$0"; exec "$@"', str(cg / "cgroup.procs"),
        "ip", "netns", "exec", host.netns,
        "unshare", "--mount", "--uts", "--pid", "--fork", "--mount-proc", "--propagation", "private",
        "tini", "--", "/bin/sh", str(init_script), host.name, str(hdir),
    ]  # fmt: skip
    subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT, start_new_session=True)
    console.close()
    wait_until(  # the launcher registers itself in the cgroup first thing
        lambda: is_running(host),
        bool,
        timeout=5,
        describe=f"host {host.name}'s launcher to start",
        interval=0.02,
        max_interval=0.02,
        fail=lambda _: UnreachableError(f"host {host.name}: launcher did not start", f"see {hdir / 'console.log'}"),
    )


def wait_ssh(
    host: HostSpec, timeout: float = 20, root: Path | None = None, running: Callable[[], bool] | None = None
) -> None:
    """Wait until the host's sshd sends its banner; UnreachableError when it does not within `timeout`
    seconds or the host stops running meanwhile (`running`: how to tell, default its freezer group)."""
    alive = running or (lambda: is_running(host))

    def log() -> Path:
        return state.host_dir(host.name, root) / "console.log"

    def answers() -> bool:
        try:
            with socket.create_connection((host.ip, 22), timeout=1) as sock:
                if sock.recv(4).startswith(b"SSH"):
                    return True
        except OSError:
            pass
        if not alive():
            raise UnreachableError(f"host {host.name} died while booting", f"see {log()}")
        return False

    wait_until(
        answers,
        bool,
        timeout=timeout,
        describe=f"sshd of host {host.name} ({host.ip})",
        interval=0.1,
        max_interval=0.1,
        fail=lambda _: UnreachableError(
            f"host {host.name} ({host.ip}): sshd did not answer within {timeout:.0f}s", f"see {log()}"
        ),
    )


def crash(host: HostSpec, timeout: float = 10) -> None:
    """Every process of the host dies at once (freeze, SIGKILL all, thaw)."""
    if not is_running(host):
        return
    _set_frozen(host, True)
    _wait_frozen(host)
    for pid in pids(host):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _set_frozen(host, False)
    wait_until(
        lambda: pids(host),
        lambda left: not left,
        timeout=timeout,
        describe=f"host {host.name}'s processes to die",
        interval=0.05,
        max_interval=0.05,
        fail=lambda left: UnreachableError(f"host {host.name}: processes survived SIGKILL: {left}"),
    )


def pause(host: HostSpec) -> None:
    if not is_running(host):
        raise PreconditionError(f"host {host.name} is not running", f"boot it: pbs-harness cluster boot {host.name}")
    _set_frozen(host, True)
    _wait_frozen(host)


def resume(host: HostSpec) -> None:
    if cgroup_dir(host).exists():
        _set_frozen(host, False)


def remove_cgroup(host: HostSpec) -> None:
    cg = cgroup_dir(host)
    if cg.exists():
        cg.rmdir()
    parent = cg.parent
    if parent.exists() and not any(p.is_dir() for p in parent.iterdir()):
        parent.rmdir()
