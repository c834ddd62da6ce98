"""Waiting on conditions, never on the clock.

`wait_until` polls a probe with a growing interval until a predicate holds or the deadline
passes; the TimeoutError names what was expected and the last value seen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """The condition did not hold in time; carries the last observed value."""

    def __init__(self, describe: str, timeout: float, last: object) -> None:
        super().__init__(f"timed out after {timeout:.0f}s waiting for {describe}; last observed: {last!r}")
        self.last = last


def wait_until(
    probe: Callable[[], T],
    predicate: Callable[[T], bool],
    *,
    timeout: float,
    describe: str,
    interval: float = 0.2,
    max_interval: float = 2.0,
) -> T:
    """Return the first probe() value satisfying predicate; raise WaitTimeout at the deadline."""
    __tracebackhide__ = True
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = probe()
        if predicate(last):
            return last
        now = time.monotonic()
        if now >= deadline:
            raise WaitTimeout(describe, timeout, last)
        time.sleep(min(interval, deadline - now))
        interval = min(interval * 1.5, max_interval)
