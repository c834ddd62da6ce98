"""PTL's selected tests shared out among several clusters at once (bench-ptl --clusters N).

Every selected PTL test runs, whole, on one 2-core machine: about three hours on one cluster (docs/ptl.md).
PTL spends most of a test waiting (its revert of the complex, its `expect` polls, sleeps), so clusters
side by side shorten the wall time. Each group (one PTL file's tests that declare the same mom count) is
cut into parts of a few tests, one `pbs_benchpress` each; every cluster takes the next part from one queue
as soon as it is free (the slowest groups first), so a cluster is never idle while parts are left.

A part's figures are its own: its tests' outcomes and durations from PTL's JSON results, and the wall time
of its pbs_benchpress (its setUpClass included). A file's PTL time is the sum over its parts: the time one
cluster would have spent on it, whatever ran beside it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pbs_harness.ptl.results import Outcome
from pbs_harness.ptl.selection import Group


@dataclass(frozen=True)
class Part:
    """Some tests of one group: one pbs_benchpress."""

    group: Group
    index: int  # 1-based within its group
    of: int  # parts of its group

    @property
    def label(self) -> str:
        stem = self.group.file.path.rsplit("/", 1)[-1].removesuffix(".py")
        return f"{stem}-{self.group.num_moms}moms" + (f" part {self.index}/{self.of}" if self.of > 1 else "")


def parts(groups: Iterable[Group], size: int) -> list[Part]:
    """Each group cut into parts of at most `size` tests, in file order (size 0: a group is one part)."""
    out = []
    for group in groups:
        tests = group.tests
        step = size if size > 0 else max(len(tests), 1)
        cuts = [tests[i : i + step] for i in range(0, len(tests), step)]
        out += [Part(Group(group.file, group.num_moms, cut), k, len(cuts)) for k, cut in enumerate(cuts, start=1)]
    return out


@dataclass
class PartResult:
    part: Part
    cluster: str
    rc: int | None  # pbs_benchpress's exit code; None: killed (time limit, interrupt) or not started
    seconds: float
    outcomes: list[Outcome] = field(default_factory=list)
    error: str = ""  # why the part did not run (the cluster failed), else ""


Runner = Callable[[Part, Callable[[], bool]], PartResult]  # (part, stop asked) -> its result


def share_out(
    work: list[Part], runners: dict[str, Runner], say: Callable[[str], None] = lambda _: None
) -> list[PartResult]:
    """Run every part on whichever cluster is free (one thread per cluster), in the order of `work`.

    A cluster whose runner raises stops taking parts (its part is recorded with the error and not run
    again: a PTL run that broke a cluster is a finding, not a retry). Ctrl-C stops every cluster: the
    runners see `stop` and kill their pbs_benchpress; parts never started are left out."""
    todo: queue.Queue[Part] = queue.Queue()
    for part in work:
        todo.put(part)
    stop = threading.Event()
    done: list[PartResult] = []
    lock = threading.Lock()

    def lane(cluster: str, run: Runner) -> None:
        while not stop.is_set():
            try:
                part = todo.get_nowait()
            except queue.Empty:
                return
            try:
                result = run(part, stop.is_set)
            except Exception as exc:  # noqa: BLE001 - the cluster's failure is recorded, the others go on
                result = PartResult(part, cluster, None, 0.0, error=f"{type(exc).__name__}: {exc}")
                say(f"{cluster}: {part.label} did not run ({result.error}); this cluster takes no more parts")
                with lock:
                    done.append(result)
                return
            with lock:
                done.append(result)
                left = todo.qsize()
            say(f"{cluster}: {part.label} done (exit {result.rc}, {result.seconds:.0f}s); {left} parts waiting")

    threads = [threading.Thread(target=lane, args=(c, r), name=f"ptl-{c}", daemon=True) for c, r in runners.items()]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(timeout=1.0)
    except BaseException:
        stop.set()  # each runner kills its pbs_benchpress at its next poll
        for t in threads:
            if t.ident is not None:  # started
                t.join(timeout=120)
        raise
    return done
