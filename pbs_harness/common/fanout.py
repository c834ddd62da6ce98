"""Independent remote reads run at once instead of one after another.

The harness's per-test reads (the baseline snapshot, the leak check, the mom listings) are many short
commands whose time is mostly waiting: an SSH round trip, and OpenPBS's own qstat, which measured
0.2 s per call on an idle cluster while pbsnodes took 0.005 s (docs/performance.md). Run one after
another they add up; run at once (each on its own SSH channel: pbs_harness.remote.transport opens
one per command) they cost about the slowest. Every read is still made and every result used:
only the waiting overlaps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

MAX_AT_ONCE = 16  # a cluster's moms plus the server's reads; more would only queue on 2 cores


def together(*calls: Callable[[], Any]) -> list[Any]:
    """Each call's result, in the order given. All calls run to their end; then the first call's
    exception (in the order given) is raised, as running them one after another would have raised
    it — a failed read never passes for an empty one."""
    if len(calls) <= 1:
        return [call() for call in calls]
    pool = ThreadPoolExecutor(max_workers=min(len(calls), MAX_AT_ONCE), thread_name_prefix="fanout")
    try:
        futures = [pool.submit(call) for call in calls]
        errors = [f.exception() for f in futures]  # waits for every call
    finally:
        # On Ctrl-C/SIGTERM (KeyboardInterrupt here) the caller's healing must not wait for reads still
        # running: they end by their own command timeouts, in threads nobody waits for.
        pool.shutdown(wait=False, cancel_futures=True)
    for error in errors:
        if error is not None:
            raise error
    return [f.result() for f in futures]


def each(items: Iterable[T], call: Callable[[T], R]) -> list[R]:
    """`call(item)` for every item (say, every mom), at once; results in the items' order."""
    return together(*[(lambda item=item: call(item)) for item in items])
