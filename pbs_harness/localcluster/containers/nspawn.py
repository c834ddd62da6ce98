"""systemd-nspawn on a machine whose PID 1 is not systemd.

With `--register=no --keep-unit` nspawn asks no service manager for a scope: it builds the
container's cgroups under the cgroup of the process that starts it (`<that>/payload`,
`<that>/supervisor`). So every container is started from groups of its own (pbs_harness.localcluster.containers.cgroups,
`pbs-harness/<unit>`), which also give its crash and pause.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from pbs_harness.localcluster.containers import cgroups

PROGRAM = "systemd-nspawn"


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
    cgroups.prepare(unit)
    with log.open("ab") as console:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=console,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lambda: cgroups.join(unit),  # noqa: PLW1509 - only writes our pid into cgroup files
        )


def run(unit: str, argv: Sequence[str], log: Path, timeout: float) -> int:
    """Run a non-booting container (a build, an install) to its end; its output goes to `log`."""
    proc = start(unit, argv, log)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        cgroups.kill_all(unit)
        proc.wait(timeout=10)
        raise
    finally:
        cgroups.kill_all(unit)
        cgroups.remove(unit)
