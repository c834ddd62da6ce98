"""The cluster's baseline: the declared state, made true at session start, restored and verified after each test.

The baseline is what the inventory deploys over OpenPBS's defaults (pbs_harness.suite.declared), not what
the server holds when a session starts: at session start every difference is repaired and reported
(a run killed before its restore, a pbs_server restart since, leave them), then a snapshot is taken.
What the snapshot covers: server and queue attributes, the vnodes with their state and available
resources, the hook list, every mom's config file, and no jobs or reservations. Volatile counters
(state_count, resources_assigned, times) are left out. After each test the server's attributes go
back to the declared state and everything else to the snapshot, which is then verified.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pbs_harness.common.fanout import together
from pbs_harness.common.waits import WaitTimeout, wait_until
from pbs_harness.pbs.base import qmgr_value
from pbs_harness.pbs.client import Pbs
from pbs_harness.pbs.nodes import states
from pbs_harness.pbs.server import VnodesNotReported
from pbs_harness.suite import declared as declared_mod
from pbs_harness.suite import drift
from pbs_harness.suite import leaks as leaks_mod
from pbs_harness.suite.faults import start_mom_command
from pbs_harness.suite.leaks import stale_mom_hooks

VOLATILE_SERVER = {
    "server_state", "total_jobs", "state_count", "resources_assigned", "license_count", "pbs_version",
    "FLicenses", "server_host",
}  # fmt: skip
VOLATILE_QUEUE = {"total_jobs", "state_count", "resources_assigned", "hasnodes"}
NODE_KEYS = ("state", "resources_available", "comment", "resv_enable", "sharing", "queue", "Priority")


@dataclass(frozen=True)
class Snapshot:
    server: dict[str, Any]
    queues: dict[str, dict[str, Any]]
    nodes: dict[str, dict[str, Any]]
    hooks: dict[str, dict[str, str]]
    mom_configs: dict[str, str]
    jobs: tuple[str, ...]
    reservations: tuple[str, ...]
    # What the server's attributes go back to (None: the snapshot's, for snapshots taken alone).
    declared: declared_mod.Declared | None = None


class NotAtBaseline(Exception):
    """The cluster could not be brought to its baseline at session start (the message says what is left)."""


def take(pbs: Pbs) -> Snapshot:
    """Every part read, the reads at once (pbs_harness.common.fanout: they are independent)."""
    moms = pbs.cluster.moms
    status, queue_attrs, vnodes, hooks, jobs, resvs, *configs = together(
        pbs.server.status,
        pbs.server.queues,
        pbs.nodes.all,
        pbs.hooks.attributes,
        lambda: pbs.jobs.all(history=False),
        pbs.resv.all,
        *[(lambda h=h: pbs.mom_config.read(h)) for h in moms],
    )
    return Snapshot(
        server={k: v for k, v in status.items() if k not in VOLATILE_SERVER},
        queues={
            name: {k: v for k, v in attrs.items() if k not in VOLATILE_QUEUE} for name, attrs in queue_attrs.items()
        },
        nodes={name: {k: n.get(k) for k in NODE_KEYS} for name, n in vnodes.items()},
        hooks=hooks,
        mom_configs={h.name: text for h, text in zip(moms, configs, strict=True)},
        jobs=tuple(sorted(jobs)),
        reservations=tuple(sorted(resvs)),
    )


def diff(base: Snapshot, now: Snapshot) -> list[str]:
    """Human-readable differences (empty when the cluster is at its baseline)."""
    out: list[str] = []
    if now.jobs:
        out.append(f"jobs left: {', '.join(now.jobs)}")
    if now.reservations:
        out.append(f"reservations left: {', '.join(now.reservations)}")
    for key in sorted(set(base.server) | set(now.server)):
        if base.server.get(key) != now.server.get(key):
            out.append(f"server {key}: baseline {base.server.get(key)!r}, now {now.server.get(key)!r}")
    for q in sorted(set(base.queues) | set(now.queues)):
        b, n = base.queues.get(q, {}), now.queues.get(q, {})
        out += [
            f"queue {q} {k}: baseline {b.get(k)!r}, now {n.get(k)!r}"
            for k in sorted(set(b) | set(n))
            if b.get(k) != n.get(k)
        ]
    for name in sorted(set(base.nodes) | set(now.nodes)):
        b, n = base.nodes.get(name, {}), now.nodes.get(name, {})
        out += [f"vnode {name} {k}: baseline {b.get(k)!r}, now {n.get(k)!r}" for k in NODE_KEYS if b.get(k) != n.get(k)]
    for name in sorted(set(base.hooks) | set(now.hooks)):
        b, n = base.hooks.get(name), now.hooks.get(name)
        if b is None or n is None:
            out.append(f"hook {name}: {'added' if b is None else 'deleted'}")
            continue
        out += [
            f"hook {name} {k}: baseline {b.get(k)!r}, now {n.get(k)!r}"
            for k in sorted(set(b) | set(n))
            if b.get(k) != n.get(k)
        ]
    for host, text in base.mom_configs.items():
        if now.mom_configs.get(host) != text:
            out.append(f"mom config of {host} differs from baseline")
    return out


def dirty(snap: Snapshot) -> list[str]:
    """Why a snapshot is no baseline to restore to (vnodes not free, jobs, reservations); empty when it is one."""
    not_free = sorted(n for n, attrs in snap.nodes.items() if attrs.get("state") != "free")
    return (
        ([f"vnodes not free: {', '.join(not_free)}"] if not_free else [])
        + ([f"jobs: {', '.join(snap.jobs)}"] if snap.jobs else [])
        + ([f"reservations: {', '.join(snap.reservations)}"] if snap.reservations else [])
    )


def take_at_session_start(pbs: Pbs, repaired: Callable[[str], None]) -> Snapshot:
    """The session's baseline: the declared state (pbs_harness.suite.declared) made true on the cluster, then
    a snapshot of it. What an interrupted run or a pbs_server restart left is cleared or repaired, and
    each repair is told to `repaired`: jobs and reservations (with PBS's own time for the vnodes to
    come back), server, queue, vnode and hook attributes other than declared (pbs_harness.suite.drift),
    mom configs a killed run changed (the copies pbs_harness.pbs.moms kept), jobs and hooks moms kept.

    Raises declared.NotDeclared when the declared state cannot be read, NotAtBaseline when a repair
    failed or the cluster is still not clean (`dirty`)."""
    declared = declared_mod.load(pbs)
    resvs, jobs = sorted(pbs.resv.all()), sorted(pbs.jobs.all(history=False))
    left = ([f"reservations {', '.join(resvs)}"] if resvs else []) + ([f"jobs {', '.join(jobs)}"] if jobs else [])
    if left:
        clear_workload(pbs)
        repaired(f"at session start: {' and '.join(left)} left by an earlier run: deleted")
    done, failed = drift.repair(pbs, declared, always_reset_retry=True)
    for what in done + _put_back_saved_mom_configs(pbs):
        repaired(f"at session start: {what}")
    snap = take(pbs)
    if dirty(snap):
        # Deleted reservations and jobs go in PBS's own time (a running reservation's job first).
        with contextlib.suppress(WaitTimeout):
            snap = wait_until(lambda: take(pbs), lambda s: not dirty(s), timeout=120, describe="leftovers gone")
        snap = take(pbs)
    if not dirty(snap):  # no job, no reservation, every vnode free: whatever is assigned belongs to nothing
        phantoms = _clear_phantom_assignments(pbs, timeout=90)
        if phantoms is not None:
            found, still = phantoms
            # The restart brings back a reserve_retry_init kept out of view in the server's database.
            again, failed_again = drift.repair(pbs, declared, always_reset_retry=True)
            failed += failed_again
            repaired(
                f"at session start: resources assigned but no job ({'; '.join(found)}): pbs_server restarted"
                + (f", still: {'; '.join(still)}" if still else ", cleared")
                + (f"; then {'; '.join(again)}" if again else "")
            )
            failed += [f"phantom assignment {p}" for p in still]
        snap = take(pbs)
    if not dirty(snap):  # the server has no job: a job a mom holds is one a killed run left
        kept = repair_kept_jobs(pbs)
        if kept is not None:
            repaired(f"at session start: {kept.describe()}")
            if kept.still_there:
                failed.append(kept.describe())
            with contextlib.suppress(WaitTimeout):  # the restarted moms' vnodes back; dirty() below says if not
                wait_until(lambda: take(pbs), lambda s: not dirty(s), timeout=120, describe="moms back")
            snap = take(pbs)
    leftover = repair_stale_mom_hooks(pbs)
    if leftover is not None:
        repaired(f"at session start: {leftover.describe()}")
    problems = [f"could not repair {what}" for what in failed] + dirty(snap)
    if problems:
        raise NotAtBaseline(
            "cluster is not at its baseline at session start (" + "; ".join(problems) + "); "
            "run `pbs-harness deploy` (or playbooks/reset.yml) first"
        )
    return replace(snap, declared=declared)


def _put_back_saved_mom_configs(pbs: Pbs) -> list[str]:
    """Mom configs a killed run changed: the copy kept before its first change is put back."""
    out = []
    for host in pbs.cluster.moms:
        saved = pbs.mom_config.saved(host)
        if saved is None:
            continue
        now = pbs.mom_config.read(host)
        pbs.mom_config.put_back(host, saved)
        if now != saved:
            lines = sorted(set(now.splitlines()) ^ set(saved.splitlines()))
            changed = ", ".join(f"{'+' if ln in now else '-'}{ln!r}" for ln in lines)
            out.append(f"mom config of {host.name} ({changed}): put back as kept before a run changed it")
    return out


def workload(pbs: Pbs) -> tuple[Any, Any]:
    """(reservations, jobs) the server has, read at once."""
    resvs, jobs = together(pbs.resv.all, lambda: pbs.jobs.all(history=False))
    return resvs, jobs


def clear_workload(pbs: Pbs) -> None:
    resvs, jobs = workload(pbs)
    for resv_id in resvs:
        pbs.resv.delete(resv_id)
    for job_id in jobs:
        pbs.jobs.delete(job_id, force=True)


def clear_test_work(
    pbs: Pbs, base: Snapshot, timeout: float = 120, held_before: frozenset[str] = frozenset()
) -> frozenset[str]:
    """A test's work gone, the way the baseline restore removes it, before the leak check
    (pbs_harness.suite.leaks): its reservations and jobs deleted and waited for, on the server and then on
    the moms, the hooks it made deleted. Nothing else is put back yet, so that what OpenPBS keeps
    shows as it is. `held_before`: jobs a mom already held when the test began (a job a mom never lets
    go, e.g. a sister's copy of a job that pruned it away after its prologue failed): not waited for
    again, they are not the test's. Returns the test's jobs a mom still held after the whole wait
    for them (leaks.SETTLE; empty when the test made no hook and nothing was waited for), so the leak
    check need not wait for them again."""
    clear_workload(pbs)
    with contextlib.suppress(WaitTimeout):  # what stays is seen by the leak check and by the restore
        wait_until(
            lambda: workload(pbs),
            lambda left: not any(left),
            timeout=timeout,
            describe="the test's reservations and jobs gone",
        )
    made = sorted(set(pbs.hooks.attributes()) - set(base.hooks))
    kept: frozenset[str] = frozenset()
    if made:
        # A force-deleted job is gone from the server at once, while its moms still run its execjob_end
        # hooks in the background; pbs_mom acknowledges a hook deletion arriving then but never performs
        # it (leaks.MOM_KEPT_DELETED_END_HOOK). The test's work is gone only once no mom holds a job, so
        # its hooks go then. A mom that never lets go hides nothing: its kept hooks are leaks all the same.
        try:
            wait_until(
                lambda: leaks_mod.held_job_ids(pbs) - held_before,
                lambda held: not held,
                timeout=leaks_mod.SETTLE,
                describe="no mom holding a job of the test",
            )
        except WaitTimeout as exc:
            kept = frozenset(exc.last)  # type: ignore[arg-type]
        wait_for_moms_connected(pbs, base)
    for name in made:
        pbs.hooks.delete(name)
    return kept


def wait_for_moms_connected(pbs: Pbs, base: Snapshot, timeout: float = 60) -> None:
    """Before the harness deletes a test's hooks: every vnode that was not down at the baseline is up again
    (its mom said hello after a healed kill, crash or partition). A hook deleted while a mom is still
    down can come back on that mom when it reconnects (docs/test-core.md, "A hook deleted while a mom
    is down"); deleted with every mom connected, the deletion reaches each mom at once. A vnode that stays
    down is left to the leak check and the restore, which report it."""

    def back(nodes: dict[str, dict[str, Any]]) -> list[str]:
        return sorted(
            name
            for name, attrs in nodes.items()
            if states(attrs) & {"down", "state-unknown"} and not states(base.nodes.get(name, {})) & {"down"}
        )

    with contextlib.suppress(WaitTimeout):
        wait_until(pbs.nodes.all, lambda nodes: not back(nodes), timeout=timeout, describe="every mom connected")


def _restore_configs(pbs: Pbs, base: Snapshot) -> list[str]:
    """Mom configs and hooks back to the snapshot; returns what had to be put back beyond deleting
    the hooks the test made (for the report)."""
    moms = pbs.cluster.moms
    current, *stamps = together(
        pbs.hooks.attributes,
        *[(lambda h=h: pbs.mom_config.put_back(h, base.mom_configs.get(h.name, ""))) for h in moms],
    )
    put_back = [h.name for h, stamp in zip(moms, stamps, strict=True) if stamp is not None]
    done = [f"mom config of {name} put back as before the test" for name in put_back]
    if set(current) - set(base.hooks):
        wait_for_moms_connected(pbs, base)
    for name in set(current) - set(base.hooks):
        pbs.hooks.delete(name)
    for name, attrs in base.hooks.items():
        # Settable hook attributes a test may have changed (enabled, order, alarm, debug, ...).
        changed = {
            k: v for k, v in attrs.items() if k not in ("type", "event", "user") and current.get(name, {}).get(k) != v
        }
        if changed:
            pbs.server.qmgr(f"set hook {name} " + ",".join(f"{k}={v}" for k, v in changed.items()))
            done.append(
                f"hook {name} " + ", ".join(f"{k}={v}" for k, v in changed.items()) + ": set as before the test"
            )
    return done


def _restore_server(pbs: Pbs, base: Snapshot, now: Snapshot) -> tuple[list[str], list[str]]:
    """The server's attributes back to the declared state (or, without one, the snapshot's); returns
    (what was put back, what could not be)."""
    if base.declared is not None:
        done, failed = drift.repair_server(pbs, base.declared)
        return done, [f"could not restore {what}" for what in failed]
    done = []
    for key in sorted(set(now.server) - set(base.server)):
        pbs.server.unset(key)
        done.append(f"server {key} = {now.server[key]!r} (baseline: unset): unset")
    for key, value in base.server.items():
        if now.server.get(key) != value and not isinstance(value, dict):
            pbs.server.set({key: value})
            done.append(f"server {key} = {now.server.get(key)!r} (baseline: {value!r}): set")
    return done, []


def _restore_node(pbs: Pbs, name: str, attrs: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """A vnode's state, comment and resources_available back to the snapshot; returns what was put back."""
    done = []
    if "offline" in str(current.get("state", "")) and "offline" not in str(attrs.get("state", "")):
        pbs.nodes.clear_offline(name)
        done.append(f"vnode {name} offline: offline cleared")
    if current.get("comment") != attrs.get("comment"):
        if attrs.get("comment") is None:
            pbs.server.unset("comment", obj="node", name=name)
        else:
            pbs.server.set({"comment": attrs["comment"]}, obj="node", name=name)
        done.append(f"vnode {name} comment = {current.get('comment')!r} (baseline: {attrs.get('comment')!r}): put back")
    for res, value in (attrs.get("resources_available") or {}).items():
        now = (current.get("resources_available") or {}).get(res)
        if now != value:
            pbs.server.qmgr(f"set node {name} resources_available.{res}={qmgr_value(value)}")
            done.append(f"vnode {name} resources_available.{res} = {now!r} (baseline: {value!r}): set")
    return done


def phantom_assignments(pbs: Pbs) -> list[str]:
    """Resources assigned with no job to hold them (pbs_harness.suite.leaks.assignments: every consumable
    resource of a vnode with no job; with no job at all, the server's and the queues' totals too)."""
    return [str(leak) for leak in leaks_mod.assignments(pbs)]


# Body of the stand-in hook that re-sends a deletion to the moms (never enabled, never runs).
_STAND_IN_HOOK = "import pbs\npbs.event().accept()\n"


@dataclass(frozen=True)
class MomHookRepair:
    """What repair_stale_mom_hooks did: the hooks moms had kept, and whether they are gone now."""

    kept: dict[str, list[str]]
    still_there: dict[str, list[str]]

    def describe(self) -> str:
        seen = "; ".join(f"{host}: {', '.join(names)}" for host, names in sorted(self.kept.items()))
        outcome = f"still there: {self.still_there}" if self.still_there else "deleted again through the server"
        return f"hooks left on moms after the server deleted them ({seen}): {outcome}"


def repair_stale_mom_hooks(pbs: Pbs, timeout: float = 60) -> MomHookRepair | None:
    """Delete mom-only hooks (pbs_harness.suite.leaks.stale_mom_hooks) the PBS way; None when no mom had kept one.

    A hook the server is still deleting on the moms (its name "pending delete") is ordinary
    propagation: it is waited for, not repaired. A name the server lets us create again was
    forgotten by the server while a mom kept it: a disabled stand-in of that name is created and
    deleted, so the server sends the deletion to every mom again (no end hook runs by now)."""
    stale = stale_mom_hooks(pbs)
    names = sorted({n for found in stale.values() for n in found})
    stand_in = {"event": "execjob_end", "enabled": False}
    forgotten = {n for n in names if pbs.hooks.create_unless_pending(n, _STAND_IN_HOOK, stand_in)}
    for name in sorted(forgotten):
        pbs.hooks.delete(name)
    still: dict[str, list[str]] = {}
    try:
        if stale:
            wait_until(lambda: stale_mom_hooks(pbs), lambda s: not s, timeout=timeout, describe="no mom-only hooks")
    except WaitTimeout as exc:
        still = exc.last  # type: ignore[assignment]
    kept = {host: [n for n in found if n in forgotten] for host, found in stale.items()}
    kept = {host: found for host, found in kept.items() if found}
    return MomHookRepair(kept, still) if kept or still else None


@dataclass(frozen=True)
class KeptJobRepair:
    """What repair_kept_jobs did: the jobs moms kept with no job on the server, and those still kept."""

    kept: dict[str, list[str]]
    still_there: dict[str, list[str]]

    def describe(self) -> str:
        seen = "; ".join(f"{host}: {', '.join(jobs)}" for host, jobs in self.kept.items())
        how = "pbs_mom killed and started again there"
        outcome = f"still there: {self.still_there}" if self.still_there else "gone"
        return f"jobs moms kept that the server no longer has ({seen}): {how}, {outcome}"


def repair_kept_jobs(pbs: Pbs, timeout: float = 60) -> KeptJobRepair | None:
    """Jobs moms keep that the server no longer has (pbs_harness.suite.leaks.kept_jobs) removed the PBS
    way; None when no mom kept one. Each such mom is killed and started again: a starting pbs_mom
    deletes a sister's job files (catch_child.c init_abort_jobs: not Mother Superior, started without
    -p) and sends a Mother Superior's obit, which the server, not knowing the job, answers with its
    purge. No file is deleted by hand."""
    kept = leaks_mod.kept_jobs(pbs)
    if not kept:
        return None
    prefix = str(pbs.cluster.prefix)
    for host in pbs.cluster.moms:
        if host.name not in kept:
            continue
        host.run(["pkill", "-KILL", "-x", "pbs_mom"])
        with contextlib.suppress(WaitTimeout):  # a mom still there is seen below, keeping the job
            wait_until(
                lambda h=host: h.run(["pgrep", "-x", "pbs_mom"]).ok,
                lambda running: not running,
                timeout=10,
                describe=f"pbs_mom gone on {host.name}",
            )
        host.check(start_mom_command(prefix))
    ids = {job for jobs in kept.values() for job in jobs}

    def still() -> dict[str, list[str]]:
        now = {h: [j for j in jobs if j in ids] for h, jobs in leaks_mod.kept_jobs(pbs).items()}
        return {h: jobs for h, jobs in now.items() if jobs}

    try:
        left = wait_until(still, lambda s: not s, timeout=timeout, describe="kept jobs gone from the moms")
    except WaitTimeout as exc:
        left = exc.last
    return KeptJobRepair(kept, left)  # type: ignore[arg-type]


def _clear_phantom_assignments(pbs: Pbs, timeout: float) -> tuple[list[str], list[str]] | None:
    """At session start: resources assigned with no job (a run killed outright, then the deletion of its
    jobs; seen: a vnode with ncpus=2 assigned and no job, so the session's first test on that cluster
    waited for a host the scheduler thought busy). None when there are none (after the few server cycles
    in which a deleted job's assignment drains); else what was found and what a pbs_server restart,
    which recomputes resources_assigned from the jobs it knows, left."""
    try:
        wait_until(lambda: phantom_assignments(pbs), lambda p: not p, timeout=10, describe="no phantom assignments")
        return None
    except WaitTimeout as exc:
        found = exc.last
    with contextlib.suppress(VnodesNotReported):  # a vnode that does not come back shows as not free below
        pbs.server.restart(timeout=timeout)
    return found, phantom_assignments(pbs)


@dataclass(frozen=True)
class Restored:
    """What `restore` could not put back (`left`), and the leaks it found and repaired (`leaks`:
    findings about OpenPBS, pbs_harness.suite.leaks, which the caller must not let pass)."""

    left: list[str]
    leaks: list[str]


def restore(
    pbs: Pbs,
    base: Snapshot,
    timeout: float = 90,
    repaired: Callable[[str], None] | None = None,
    held_before: frozenset[str] = frozenset(),
) -> Restored:
    """Bring the cluster back to `base`: what is still different afterwards, and the leaks repaired.

    `repaired` is told about every repair beyond removing the test's work (server attributes put back,
    jobs moms kept restarted away, hooks a mom kept deleted again, a pbs_server restart to clear
    assignments with no job), so that the conformance report lists them with the test that left them.
    A job a mom kept is a leak of this test unless a mom held it already when the test began
    (`held_before`); it is repaired all the same.
    """

    def tell(text: str) -> None:
        if repaired is not None:
            repaired(text)

    clear_workload(pbs)
    reset = _restore_configs(pbs, base)
    now = take(pbs)
    server_reset, unrestored = _restore_server(pbs, base, now)
    reset += server_reset
    for name, attrs in base.nodes.items():
        reset += _restore_node(pbs, name, attrs, now.nodes.get(name, {}))
    for what in reset:  # what a test changed is put back, and the report says what
        tell(f"after the test: {what}")
    left = _wait_for(pbs, base, timeout) + unrestored
    if left or pbs.jobs.all(history=False):
        return Restored(left, [])
    found: list[str] = []
    kept_jobs = repair_kept_jobs(pbs)
    if kept_jobs is not None:
        found += [
            str(leaks_mod.kept_job(host, job))
            for host, jobs in kept_jobs.kept.items()
            for job in jobs
            if job not in held_before
        ]
        tell(kept_jobs.describe())
        left += _wait_for(pbs, base, timeout)  # the restarted moms' vnodes back
        if kept_jobs.still_there:
            left.append(kept_jobs.describe())
    mom_hooks = repair_stale_mom_hooks(pbs)
    if mom_hooks is not None:
        found += [
            f"mom {host}: hook {name}, deleted on the server"
            for host, names in mom_hooks.kept.items()
            for name in names
        ]
        tell(mom_hooks.describe())
        if mom_hooks.still_there:
            left.append(mom_hooks.describe())
    try:  # assignments of just-deleted jobs drain within a few server cycles
        wait_until(lambda: phantom_assignments(pbs), lambda p: not p, timeout=10, describe="no phantom assignments")
    except WaitTimeout as exc:
        phantoms = exc.last
        found += phantoms
        # Only a server restart recomputes resources_assigned from the jobs it knows. A restart also
        # brings back a reserve_retry_init kept in the server's database out of view (pbs_harness.suite.drift),
        # so the server's attributes are restored once more after it.
        settle = timeout
        try:
            pbs.server.restart(timeout=timeout)
        except VnodesNotReported:
            settle = 0  # a vnode that never came back in `timeout`: the baseline is read once, for the leaks
        again, unrestored = _restore_server(pbs, base, take(pbs))
        left = _wait_for(pbs, base, settle) + unrestored
        still = phantom_assignments(pbs)
        tell(
            f"resources assigned but no job ({'; '.join(phantoms)}): pbs_server restarted"
            + (f", still: {'; '.join(still)}" if still else ", cleared")
            + (f"; then {'; '.join(again)}" if again else "")
        )
        left += [f"phantom assignment {p}" for p in still]
    return Restored(left, found)


def _wait_for(pbs: Pbs, base: Snapshot, timeout: float) -> list[str]:
    try:
        wait_until(
            lambda: take(pbs),
            lambda snap: not diff(base, snap),
            timeout=timeout,
            describe="cluster back at its baseline",
        )
    except WaitTimeout as exc:
        return diff(base, exc.last)  # type: ignore[arg-type]
    return []
