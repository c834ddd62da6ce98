"""Booting a namespaced host (tini -> host-init.sh -> sshd), and waiting for any local host's sshd.

Each host's processes live in its cgroups (pbs_harness.localcluster.containers.cgroups, pbs-harness/<host>), which give
pause, crash and an exact answer to "is this host running" (backends/local.py).
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from pbs_harness.common.errors import UnreachableError
from pbs_harness.common.waits import wait_until
from pbs_harness.localcluster import state
from pbs_harness.localcluster.containers import cgroups
from pbs_harness.localcluster.spec import HostSpec


def is_running(host: HostSpec) -> bool:
    return cgroups.is_running(host.name)


def launch(host: HostSpec, root: Path | None = None) -> None:
    """Start the host's init unless it runs, without waiting for its sshd (several hosts boot at once)."""
    if is_running(host):
        return
    cgroups.prepare(host.name)
    cg = cgroups.freezer_dir(host.name)
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
