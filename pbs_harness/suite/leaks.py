"""Leaks: what OpenPBS still holds for a test's work once that work is gone. A leak is a finding about
OpenPBS, never a repair that lets the test pass (issue #30).

Checked after a test's body passed (pbs_harness.suite.plugin, inside the test's call phase, so that the
verdict is the test's own): its faults healed, its jobs and reservations deleted, the hooks it made
deleted (pbs_harness.suite.baseline.clear_test_work), then, once the few server cycles in which a deleted
job's assignment drains and a hook deletion reaches the moms are over (`settle`), what is left:
- every consumable resource a vnode has assigned (all of resources_assigned: ncpus, mem, ngpus,
  nodect, custom consumables, ...) while no job is on it, and a vnode still listing jobs when the
  server has none;
- with no job left at all, the server's and every queue's resources_assigned;
- site hooks a mom still holds although the server has none of that name;
- jobs a mom still holds (mom_priv/jobs) that it did not hold when the test began and that the server
  no longer has (a sister that never lets go of a job: the job's end never reaches it).
Each leak fails the test (`Leaked`), naming the resource, where, and its values. A leak of a known,
reproduced OpenPBS bug raises that bug's own class (a subclass of `Leaked`, only when every leak
found is of that bug), so that the test that reproduces it is a strict xfail expecting exactly it.
The baseline restore afterwards repairs what was found (reported as a repair, pbs_harness.suite.baseline),
so the next test starts at its baseline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pbs_harness.common.fanout import each, together
from pbs_harness.common.waits import WaitTimeout, wait_until
from pbs_harness.pbs.parsers import size_kb

SETTLE = 60  # seconds: a deleted job's assignment drains in a few cycles; a hook deletion reaches busy moms late


@dataclass(frozen=True)
class Leak:
    """One leaked thing: where ("vnode lk02", "server", "queue workq", "mom lk03"), what
    ("resources_assigned.ncpus", "hook rd_end"), and its value (an amount, a hook's events)."""

    where: str
    what: str
    value: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what} = {self.value}"


class Leaked(AssertionError):
    """OpenPBS kept something of a test's work after the work was gone (the message lists each leak)."""

    def __init__(self, leaks: list[Leak], context: str = "") -> None:
        self.leaks = leaks
        super().__init__(
            f"leak seen after the test{context}: OpenPBS still holds what the test's work used once it was gone: "
            + "; ".join(map(str, leaks))
        )


class MomKeptDeletedEndHook(Leaked):
    """The known OpenPBS bug behind a site execjob_end hook that a mom keeps after the server deleted it."""


MOM_KEPT_DELETED_END_HOOK = (
    "OpenPBS (master cd7ab5e, 23.06.06, 22.05.11): pbs_mom acknowledges the deletion of an execjob_end hook "
    "that arrives while any of its jobs runs a hook in the background, and never deletes it "
    "(src/resmom/requests.c req_del_hookfile: reply_ack and return when a job has ji_hook_running_bg_on and the "
    "hook's event has HOOK_EVENT_EXECJOB_END; hook_purge is not called and nothing retries the deletion). The "
    "server logs 'successfully deleted hook file NAME.HK from MOM' and forgets the hook; the mom keeps it. Seen "
    "(pbla, 28 Nov 2026, master cd7ab5e): a sister's mom log with the job's end hook and the deletion in the "
    "same second ('ramp_down hook rd_end on pbla06', then 'Hook;rd_end.HK;delete hook-related file request "
    "received'), 240 ms after qdel -W force, and rd_end.HK still on that mom 60 s later"
)


def amount(value: Any) -> float:
    """A resources_assigned value as a number (sizes in kb in any unit: the server shows '0gb');
    anything else the server shows counts as assigned."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip().lower()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return float(size_kb(text))
    except (ValueError, KeyError):
        return 1.0


def nonzero(assigned: Mapping[str, Any]) -> dict[str, Any]:
    """The resources of a resources_assigned value with an amount other than 0."""
    return {name: value for name, value in sorted(assigned.items()) if amount(value) != 0}


def assignments(pbs) -> list[Leak]:
    """Every consumable resource assigned with no job to hold it: on a vnode with no job, and, when the
    server has no job at all, the server's and the queues' totals and vnodes listing jobs."""
    out: list[Leak] = []
    # Read at once (pbs_harness.common.fanout); the totals are used only when the server has no job.
    jobs, vnodes, server, queues = together(
        lambda: pbs.jobs.all(history=False), pbs.nodes.all, pbs.server.status, pbs.server.queues
    )
    no_job = not jobs
    for name, node in sorted(vnodes.items()):
        if node.get("jobs"):
            if no_job:
                out.append(Leak(f"vnode {name}", "jobs", str(node["jobs"])))
            continue
        for res, value in nonzero(node.get("resources_assigned") or {}).items():
            out.append(Leak(f"vnode {name}", f"resources_assigned.{res}", str(value)))
    if no_job:
        for res, value in nonzero(server.get("resources_assigned") or {}).items():
            out.append(Leak("server", f"resources_assigned.{res}", str(value)))
        for queue, attrs in sorted(queues.items()):
            for res, value in nonzero(attrs.get("resources_assigned") or {}).items():
                out.append(Leak(f"queue {queue}", f"resources_assigned.{res}", str(value)))
    return out


def stale_mom_hooks(pbs) -> dict[str, list[str]]:
    """Site hooks a mom still holds although the server has no such hook, by mom."""
    moms = pbs.cluster.moms
    names_on_server, *listings = together(
        pbs.hooks.names,
        *[(lambda h=h: h.check(["ls", f"{pbs.cluster.pbs_home}/mom_priv/hooks"]).stdout.split()) for h in moms],
    )
    on_server = set(names_on_server)
    found: dict[str, list[str]] = {}
    for host, listing in zip(moms, listings, strict=True):
        names = {f.removesuffix(".HK") for f in listing if f.endswith(".HK") and not f.startswith("PBS_")}
        if names - on_server:
            found[host.name] = sorted(names - on_server)
    return found


def moms_holding_jobs(pbs) -> dict[str, list[str]]:
    """Jobs a mom still holds (its mom_priv/jobs/*.JB files), by mom: a mom keeps a job the server has
    forgotten until its execjob_epilogue/execjob_end hooks have run and it purged the job."""
    held: dict[str, list[str]] = {}
    moms = pbs.cluster.moms
    listings = each(moms, lambda h: h.run(["ls", f"{pbs.cluster.pbs_home}/mom_priv/jobs"]).stdout.split())
    for host, listing in zip(moms, listings, strict=True):
        jobs = sorted(f.removesuffix(".JB") for f in listing if f.endswith(".JB"))
        if jobs:
            held[host.name] = jobs
    return held


def held_job_ids(pbs) -> frozenset[str]:
    """The ids of the jobs any mom holds (moms_holding_jobs, without the moms)."""
    return frozenset(job for jobs in moms_holding_jobs(pbs).values() for job in jobs)


def kept_jobs(pbs, held_before: frozenset[str] = frozenset()) -> dict[str, list[str]]:
    """Jobs a mom holds that the server no longer has, by mom, but those held before the test began
    (`held_before`: not the test's)."""
    held, known = together(lambda: moms_holding_jobs(pbs), lambda: pbs.jobs.all(history=False))
    kept = {host: [j for j in jobs if j not in held_before and j not in known] for host, jobs in held.items()}
    return {host: jobs for host, jobs in sorted(kept.items()) if jobs}


KEPT_JOB = "in mom_priv/jobs, gone from the server"


def kept_job(host: str, job: str) -> Leak:
    """The leak of a job a mom keeps after the server let it go."""
    return Leak(f"mom {host}", f"job {job}", KEPT_JOB)


def mom_jobs(pbs, held_before: frozenset[str] = frozenset()) -> list[Leak]:
    return [kept_job(host, job) for host, jobs in kept_jobs(pbs, held_before).items() for job in jobs]


def _hook_events(pbs, host_name: str, hook: str) -> str:
    """The events line of a hook's control file on a mom ("event=execjob_end,..."), or '?'."""
    host = next(h for h in pbs.cluster.moms if h.name == host_name)
    res = host.run(["cat", f"{pbs.cluster.pbs_home}/mom_priv/hooks/{hook}.HK"])
    lines = [ln.split("=", 1)[1] for ln in (res.stdout or "").splitlines() if ln.startswith("event=")]
    return lines[0] if lines else "?"


def mom_hooks(pbs) -> list[Leak]:
    return [
        Leak(f"mom {host}", f"hook {hook}", f"events {_hook_events(pbs, host, hook)}, deleted on the server")
        for host, hooks in sorted(stale_mom_hooks(pbs).items())
        for hook in hooks
    ]


def find(pbs, held_before: frozenset[str] = frozenset()) -> list[Leak]:
    """Every leak (module docstring); `held_before`: jobs moms held when the test began, not its own."""
    assigned, hooks, jobs = together(
        lambda: assignments(pbs), lambda: mom_hooks(pbs), lambda: mom_jobs(pbs, held_before)
    )
    return assigned + hooks + jobs


def settle(
    pbs,
    timeout: float = SETTLE,
    probe: Callable[[Any], list[Leak]] = find,
    kept_already: frozenset[str] = frozenset(),
) -> list[Leak]:
    """What is still leaked after `timeout` (empty as soon as nothing is). `kept_already`: jobs moms
    were already seen holding for a whole SETTLE (baseline.clear_test_work waited for them): when they
    are all that is left, that is the answer at once, not after another SETTLE."""

    def settled(found: list[Leak]) -> bool:  # nothing, or only jobs already kept for a whole SETTLE
        return all(leak.what.startswith("job ") and leak.what.removeprefix("job ") in kept_already for leak in found)

    try:
        return wait_until(lambda: probe(pbs), settled, timeout=timeout, describe="nothing leaked")
    except WaitTimeout as exc:
        return list(exc.last)  # type: ignore[arg-type]


def _is_kept_end_hook(leak: Leak) -> bool:
    return leak.what.startswith("hook ") and "execjob_end" in leak.value


def error(leaks: list[Leak], expected: type[Leaked] | None = None, context: str = "") -> Leaked:
    """The exception for what was found: a known bug's own class when every leak is of that bug —
    the test's expected one (`leak_of` marker: a Leaked subclass whose `matches` says whether the
    leaks, as text, are all of its bug), or the end hook a mom kept."""
    if expected is not None and expected_matches(expected, [str(leak) for leak in leaks]):
        return expected(leaks, context)
    if leaks and all(_is_kept_end_hook(leak) for leak in leaks):
        return MomKeptDeletedEndHook(leaks, context)
    return Leaked(leaks, context)


def expected_matches(expected: type[Leaked], found: list[str]) -> bool:
    """Whether every leak found (as text) is of the expected bug; none found is no match."""
    matches = getattr(expected, "matches", None)
    return bool(found) and callable(matches) and bool(matches(found))
