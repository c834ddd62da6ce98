"""Process side of a namespaced host: boot it, crash it, freeze and thaw it.

Each host's processes live in its cgroups (pbs_harness.cgroups, pbs-harness/<host>), which give
`pause` (freeze all at once), `crash` (freeze, SIGKILL every process, thaw: nothing runs in
between) and an exact answer to "is this host running".
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from pbs_harness import cgroups
from pbs_harness.errors import PreconditionError, UnreachableError
from pbs_harness.localcluster import state
from pbs_harness.localcluster.spec import HostSpec
from pbs_harness.waits import wait_until


def cgroup_dir(host: HostSpec) -> Path:
    """The host's freezer group (pbs_harness.cgroups: pbs-harness/<host>)."""
    return cgroups.freezer_dir(host.name)


def ensure_cgroup(host: HostSpec) -> Path:
    cgroups.prepare(host.name)
    return cgroup_dir(host)


def pids(host: HostSpec) -> list[int]:
    return cgroups.pids(host.name)


def is_running(host: HostSpec) -> bool:
    return bool(pids(host))


def is_paused(host: HostSpec) -> bool:
    return cgroups.is_frozen(host.name)


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
    cgroups.kill_all(host.name, timeout, label=f"host {host.name}")


def pause(host: HostSpec) -> None:
    if not is_running(host):
        raise PreconditionError(f"host {host.name} is not running", f"boot it: pbs-harness cluster boot {host.name}")
    cgroups.set_frozen(host.name, True, label=f"host {host.name}")


def resume(host: HostSpec) -> None:
    cgroups.set_frozen(host.name, False)


def remove_cgroup(host: HostSpec) -> None:
    cgroups.remove(host.name)
