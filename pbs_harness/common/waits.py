"""Waiting on conditions, never on the clock.

`wait_until` polls a probe with a growing interval until a predicate holds or the deadline
passes; the WaitTimeout names what was expected and the last value seen (or the caller builds its
own error from that value).
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
    fail: Callable[[T], BaseException] | None = None,
) -> T:
    """Return the first probe() value satisfying predicate; raise WaitTimeout at the deadline, or
    `fail(last value)` when given (for callers whose callers expect another error)."""
    __tracebackhide__ = True
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = probe()
        if predicate(last):
            return last
        now = time.monotonic()
        if now >= deadline:
            raise fail(last) if fail else WaitTimeout(describe, timeout, last)
        time.sleep(min(interval, deadline - now))
        interval = min(interval * 1.5, max_interval)
