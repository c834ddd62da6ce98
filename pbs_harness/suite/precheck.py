"""Before a test session: the inventory's hosts answer and OpenPBS is installed on them.

Never green by accident: a session against hosts that do not answer, or that lack OpenPBS, would
skip every test. These checks fail first, naming the hosts and what to check, in bounded time
whatever the number of hosts: TCP_WITHIN seconds for the SSH ports (all probed at once), then
SSH_WITHIN seconds for one SSH command per host (all in parallel).
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Callable

from pbs_harness.common.errors import HarnessError, PreconditionError, UnreachableError
from pbs_harness.remote.inventory import (
    Inventory,
    InventoryHost,
    check_openpbs_local,
    check_reachable,
    check_ssh_keys,
    unreachable_hint,
)
from pbs_harness.remote.transport import RemoteHost
from pbs_harness.suite import session_lock

TCP_WITHIN = 5.0
SSH_WITHIN = 15.0

# Runs a shell command on a host over SSH and returns its stdout (the seam unit tests replace).
Probe = Callable[[InventoryHost, str, float], str]


def cluster_key(inv: Inventory) -> str:
    """What names a cluster for the session lock (the plugin holds the lock under the same key)."""
    return f"{inv.server.name}@{inv.server.address}"


def program_files(inv: Inventory, host: InventoryHost) -> list[str]:
    """The OpenPBS files a host of this role must have: server, mom, or client commands."""
    prefix = inv.openpbs_prefix
    files = []
    if host.name == inv.server.name:
        files.append(prefix / "sbin" / "pbs_server.bin")
    if host.name in inv.groups.get("pbs_moms", []):
        files.append(prefix / "sbin" / "pbs_mom")
    return [str(f) for f in files or [prefix / "bin" / "qstat"]]


def ssh_probe(host: InventoryHost, command: str, timeout: float) -> str:
    """Run `command` on `host` through the harness's own SSH layer (as the suites will)."""
    remote = RemoteHost(host.ssh_target(), connect_timeout=timeout)
    try:
        return remote.run(command, timeout=timeout).stdout
    finally:
        remote.close()


def check_openpbs_remote(inv: Inventory, within: float = SSH_WITHIN, probe: Probe | None = None) -> None:
    """Every host accepts the harness's SSH login and has its role's OpenPBS programs, within `within` s."""
    probe = probe or ssh_probe
    deadline = time.monotonic() + within
    missing: dict[str, list[str]] = {}
    refused: dict[str, str] = {}

    def one(host: InventoryHost) -> None:
        files = program_files(inv, host)
        command = "for f in " + " ".join(map(shlex.quote, files)) + '; do test -x "$f" || echo "$f"; done'
        try:
            absent = probe(host, command, within).split()
        except HarnessError as exc:
            refused[host.name] = exc.message
        except Exception as exc:  # noqa: BLE001 - any failure of the SSH layer is reported per host
            refused[host.name] = f"{type(exc).__name__}: {exc}"
        else:
            if absent:
                missing[host.name] = absent

    # Daemon threads: a host that hangs past the deadline is reported, never waited for.
    threads = {name: threading.Thread(target=one, args=(h,), daemon=True) for name, h in inv.hosts.items()}
    for thread in threads.values():
        thread.start()
    for name, thread in threads.items():
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            refused.setdefault(name, f"no SSH answer within {within:g}s")
    if refused:
        raise UnreachableError(
            "SSH login failed: " + "; ".join(f"{inv.hosts[n].describe()}: {why}" for n, why in sorted(refused.items())),
            f"check ansible_user, ansible_ssh_private_key_file and the pinned host keys (known_hosts) in {inv.path}; "
            f"{unreachable_hint(inv)}",
        )
    if missing:
        raise PreconditionError(
            "OpenPBS is not installed on: "
            + "; ".join(f"{n} (missing {', '.join(f)})" for n, f in sorted(missing.items())),
            f"deploy it first: pbs-harness deploy -i {inv.path} (openpbs_install_method: packages installs the "
            "official packages; existing expects them under openpbs_install_prefix)",
        )


def check_cluster(inv: Inventory, say: Callable[[str], None]) -> None:
    """The cluster can be tested now, or an error naming the hosts and what to check."""
    check_ssh_keys(inv)
    check_openpbs_local(inv)
    if session_lock.busy(cluster_key(inv)):
        # Its hosts may be partitioned or paused on purpose: the session judges them once it holds the lock.
        say("another test session holds this cluster: its hosts are checked when this session's turn comes")
        return
    try:
        check_reachable(inv, TCP_WITHIN)
    except UnreachableError as exc:
        if not inv.kind.managed:
            raise
        # A killed run can leave a local host paused or cut off; the session heals it before judging.
        say(f"{exc.message}; the test session heals paused or cut-off local hosts before judging them")
        return
    if not inv.kind.shares_controller_files:  # else checked on this machine (check_openpbs_local)
        check_openpbs_remote(inv)
