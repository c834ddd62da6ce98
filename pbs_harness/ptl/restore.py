"""Undo what PTL leaves on the cluster, so that `pbs-harness up` can deploy the harness's baseline again.

PTL reverts the complex at the *start* of each test (PBSTestSuite.setUp: every node, site hook,
non-default queue and server attribute, the moms' vnode definitions and configs) and leaves the last
test's state behind: vnode definition files in mom_priv/config.d (e.g. an offline vnode a reservation
test made), its hooks and queues. The harness's deploy converges what the inventory declares but does
not remove what it never made, so after a PTL run:

1. vnode definition scripts that were not there before PTL (`pbs_mom -s list`) are removed
   (`pbs_mom -s remove`), and PBS is restarted on those hosts so the moms forget the vnodes;
2. the server and scheduler go back to OpenPBS's defaults with PTL's own tool of the same source,
   `pbs_config --revert-config --server --scheduler` (nodes, hooks, queues, attributes);
3. the caller deploys the baseline again (`pbs-harness up`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath

from pbs_harness.transport import RemoteHost


def vnode_defs(host: RemoteHost, prefix: PurePosixPath) -> set[str]:
    """The mom's configuration scripts (config.d), as `pbs_mom -s list` names them."""
    res = host.run(f"{prefix}/sbin/pbs_mom -s list", timeout=60)
    return {line.strip() for line in res.stdout.splitlines() if line.strip()} if res.ok else set()


def snapshot(hosts: Iterable[RemoteHost], prefix: PurePosixPath) -> dict[str, set[str]]:
    return {h.name: vnode_defs(h, prefix) for h in hosts}


def revert(
    hosts: Iterable[RemoteHost], server: RemoteHost, before: dict[str, set[str]], prefix: PurePosixPath,
    ptl_bin: PurePosixPath,
) -> list[str]:  # fmt: skip
    """Steps 1 and 2 above; returns what was done, one line each."""
    done = []
    for host in hosts:
        extra = sorted(vnode_defs(host, prefix) - before.get(host.name, set()))
        for name in extra:
            host.run(f"{prefix}/sbin/pbs_mom -s remove {name}", timeout=60)
        if extra:
            host.run("/etc/init.d/pbs restart", timeout=180)
            done.append(f"{host.name}: removed PTL's vnode definitions {', '.join(extra)} and restarted PBS")
    res = server.run(
        f"PATH={ptl_bin}:{prefix}/bin:{prefix}/sbin:$PATH pbs_config --revert-config --server --scheduler",
        timeout=600,
    )
    done.append(f"{server.name}: pbs_config --revert-config --server --scheduler: exit {res.rc}")
    return done
