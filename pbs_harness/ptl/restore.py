"""Undo what PTL leaves on the cluster, so that `pbs-harness up` can deploy the harness's baseline again.

PTL reverts the complex at the *start* of each test (PBSTestSuite.setUp: every node, site hook,
non-default queue and server attribute, the moms' vnode definitions and configs) and leaves the last
test's state behind: vnode definition files in mom_priv/config.d (e.g. an offline vnode a reservation
test made), its hooks and queues. The harness's deploy converges what the inventory declares but does
not remove what it never made, so after a PTL run:

1. vnode definition scripts that were not there before PTL (`pbs_mom -s list`) are removed
   (`pbs_mom -s remove`), and PBS is restarted on every host, the host's way (RESTART_PBS), so that
   the moms forget the vnodes and the daemons PTL started with the init script run inside pbs.service
   where systemd runs PBS;
2. the server and scheduler go back to OpenPBS's defaults with PTL's own tool of the same source,
   `pbs_config --revert-config --server --scheduler` (nodes, hooks, queues, attributes);
3. the default scheduler's `scheduling` is set back to what it was before PTL: the scheduler's revert
   leaves it False while the server's `scheduling` still reads True, so a deploy that converges the
   server attribute finds nothing to change and no job would ever run (seen: every job of our suite
   stayed queued after PTL's run);
4. the caller deploys the baseline again (`pbs-harness up`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from pbs_harness.remote.transport import RemoteHost


def vnode_defs(host: RemoteHost, prefix: PurePosixPath) -> set[str]:
    """The mom's configuration scripts (config.d), as `pbs_mom -s list` names them."""
    res = host.run(f"{prefix}/sbin/pbs_mom -s list", timeout=60)
    return {line.strip() for line in res.stdout.splitlines() if line.strip()} if res.ok else set()


def snapshot(hosts: Iterable[RemoteHost], prefix: PurePosixPath) -> dict[str, set[str]]:
    return {h.name: vnode_defs(h, prefix) for h in hosts}


def sched_scheduling(server: RemoteHost, prefix: PurePosixPath) -> str | None:
    """The default scheduler's `scheduling` (True/False), as qmgr lists it."""
    res = server.run(f'{prefix}/bin/qmgr -c "list sched default scheduling"', timeout=60)
    values = [ln.split("=", 1)[1].strip() for ln in res.stdout.splitlines() if "scheduling =" in ln]
    return values[0] if res.ok and values else None


# PBS restarted the way the host runs it: under systemd, inside pbs.service. PTL starts and stops the daemons
# with the init script, which on a host where systemd runs PBS leaves them outside the unit; the unit's next
# `systemctl start` (the deploy's) then finds them "already running", forks nothing and, with no process
# left in its cgroup, runs its ExecStop: every daemon stopped and the server refusing connections (seen on
# system hosts after PTL). Without systemd (namespace hosts) the init script is the host's way.
RESTART_PBS = (
    "if [ -d /run/systemd/system ] && systemctl cat pbs.service >/dev/null 2>&1; then "
    "/etc/init.d/pbs stop; systemctl stop pbs.service; systemctl start pbs.service; "
    "else /etc/init.d/pbs restart; fi"
)


# PBS taken out of systemd's hands before PTL, where systemd runs it: PTL stops and starts single daemons
# with pbs_init.d (ptl_service.py, PBSInitServices), and pbs.service (Type=forking, no main PID) runs its
# ExecStop, `pbs_init.d stop`, once the last daemon it started has exited: every daemon PTL had started
# beside it is stopped too. That can strike at PTL's first stop of a mom-only host's pbs_mom (afterwards
# the moms PTL restarts run outside the unit); it did not cause the held jobs of the run of 29 Nov, which
# came long after (docs/ptl.md, "Results"). So PBS runs started by the init script outside the unit, with
# the unit inactive, as in upstream's PTL containers (no systemd); RESTART_PBS puts it back.
PTL_WAY = (
    "if [ -d /run/systemd/system ] && systemctl is-active --quiet pbs.service; then "
    "systemctl stop pbs.service && /etc/init.d/pbs start; fi"
)


def run_pbs_the_ptl_way(hosts: Iterable[RemoteHost]) -> list[str]:
    """PTL_WAY on every host; what was done."""
    return [f"{host.name}: PBS run by its init script, out of pbs.service: exit {host.run(PTL_WAY, timeout=180).rc}"
            for host in hosts]  # fmt: skip


def revert(
    hosts: Iterable[RemoteHost], server: RemoteHost, before: dict[str, set[str]], prefix: PurePosixPath,
    ptl_bin: PurePosixPath, *, scheduling: str | None = None,
) -> list[str]:  # fmt: skip
    """Steps 1 to 3 above (`scheduling`: the default scheduler's before PTL); returns what was done."""
    done = []
    hosts = list(hosts)
    for host in hosts:
        extra = sorted(vnode_defs(host, prefix) - before.get(host.name, set()))
        for name in extra:
            host.run(f"{prefix}/sbin/pbs_mom -s remove {name}", timeout=60)
        if extra:
            done.append(f"{host.name}: removed PTL's vnode definitions {', '.join(extra)}")
    # Every host, the server's first: the moms forget PTL's vnodes, and each daemon runs the host's way again.
    for host in [server, *(h for h in hosts if h.name != server.name)]:
        res = host.run(RESTART_PBS, timeout=180)
        done.append(f"{host.name}: PBS restarted the host's way (pbs.service under systemd): exit {res.rc}")
    res = server.run(
        f"PATH={ptl_bin}:{prefix}/bin:{prefix}/sbin:$PATH pbs_config --revert-config --server --scheduler",
        timeout=600,
    )
    done.append(f"{server.name}: pbs_config --revert-config --server --scheduler: exit {res.rc}")
    if scheduling:
        res = server.run(f'{prefix}/bin/qmgr -c "set sched default scheduling = {scheduling}"', timeout=60)
        done.append(f"{server.name}: default scheduler's scheduling set back to {scheduling}: exit {res.rc}")
    return done


_SET = re.compile(r"^set (server|sched) (\w+(?:\.\w+)?) = (.*)$")


def config_commands(before: str, after: str) -> list[str]:
    """qmgr commands that put the server's and the default scheduler's attributes back as `before` printed
    them (`qmgr -c 'print server'`, `print sched`), from what `after` prints: a value PTL's revert changed is
    set again, one it added is unset. PTL's revert leaves some that the deploy does not manage (seen:
    acl_roots = root, pbs_license_min = 1, opt_backfill_fuzzy = off), and the next run's "before" would
    carry them. Lines other than `set server|sched NAME = VALUE` are not touched (the caller reports them)."""

    def attrs(text: str) -> dict[tuple[str, str], str]:
        out = {}
        for line in text.splitlines():
            m = _SET.match(line.strip())
            if m:
                out[(m.group(1), m.group(2))] = m.group(3)
        return out

    was, now = attrs(before), attrs(after)
    commands = [f"set {obj} {name} = {value}" for (obj, name), value in was.items() if now.get((obj, name)) != value]
    commands += [f"unset {obj} {name}" for (obj, name) in now if (obj, name) not in was]
    return commands
