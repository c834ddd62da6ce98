"""The fault log of one test: every fault started and healed, when, on what, how, and with what
outcome (Jepsen's history, for faults). It goes into the test's evidence folder (faults.txt) and
into its JUnit properties, so a reader sees what the cluster went through beside the commands."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path


@dataclass(frozen=True)
class FaultEvent:
    at: datetime  # wall clock, to line up with PBS's logs
    offset: float  # seconds since the log began (the test's start)
    action: str  # start | heal
    kind: str
    target: str
    mechanism: str  # how the host's backend did it
    seconds: float  # how long the action took
    error: str | None = None
    ended: bool = True  # False: the line written when the action began (it may never end: a hung boot)

    def line(self) -> str:
        if not self.ended:
            began = f" +{self.offset:7.2f}s begin {self.action} {self.kind} on {self.target} via {self.mechanism}"
            return f"{self.at:%H:%M:%S.%f}"[:-3] + began
        outcome = f"FAILED: {self.error}" if self.error else "ok"
        return (
            f"{self.at:%H:%M:%S.%f}"[:-3] + f" +{self.offset:7.2f}s {self.action:5} {self.kind} on {self.target} "
            f"({self.seconds:.2f}s, {outcome}) via {self.mechanism}"
        )


@dataclass
class FaultLog:
    events: list[FaultEvent] = field(default_factory=list)
    began: float = field(default_factory=time.monotonic)
    began_at: datetime = field(default_factory=datetime.now)  # the same moment, wall clock

    def record(self, action: str, kind: str, target: str, *, mechanism: str, started: float, error: str | None) -> None:
        """One action that began at `started` (time.monotonic()) and has just ended."""
        now = time.monotonic()
        self.events.append(
            FaultEvent(datetime.now(), started - self.began, action, kind, target, mechanism, now - started, error)
        )

    def begin(self, action: str, kind: str, target: str, *, mechanism: str, started: float | None = None) -> None:
        """The line of an action that is beginning at `started` (time.monotonic(), default now); `record`
        writes its end with the same `started`, so both lines carry the same offset."""
        now = time.monotonic() if started is None else started
        self.events.append(
            FaultEvent(datetime.now(), now - self.began, action, kind, target, mechanism, 0.0, None, ended=False)
        )

    def text(self) -> str:
        return "".join(e.line() + "\n" for e in self.events)

    def windows(self) -> list[dict[str, str]]:
        """Each fault's window in wall-clock time, from the start of its start action to the end of
        its heal (open when it was never healed): the bands of the run's timeline."""
        out: list[dict[str, str]] = []
        open_: dict[tuple[str, str], dict[str, str]] = {}
        for ev in self.events:
            if not ev.ended:
                continue
            key = (ev.kind, ev.target)
            if ev.action == "start":
                began = ev.at - timedelta(seconds=ev.seconds)
                open_[key] = {"kind": ev.kind, "target": ev.target, "started": began.isoformat(timespec="milliseconds")}
                out.append(open_[key])
            elif key in open_:
                open_.pop(key)["healed"] = ev.at.isoformat(timespec="milliseconds")
        return out

    def write(self, path: Path) -> None:
        head = (
            f"# offsets (+s) are seconds from the test's start, {self.began_at:%Y-%m-%d %H:%M:%S.%f}"[:-3]
            + " (wall clock of this machine);\n# the first column is the wall-clock time the action ended"
            + " (on a 'begin' line: began)\n"
        )
        path.write_text(head + (self.text() or "no fault was injected\n"))
