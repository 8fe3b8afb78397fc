"""Waiting for something that happens in another process or thread: one helper instead of a loop per test."""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def eventually(predicate: Callable[[], T], timeout_s: float, what: str | Callable[[], str],
               interval_s: float = 0.5) -> T:
    """Call `predicate` until it returns something truthy and return that; every `interval_s` seconds, for at most
    `timeout_s` seconds (it is called at least once, and once more at the time out). Raises
    AssertionError("timed out after <timeout_s> s waiting for <what>") if it never does. `what` may be a function
    giving the text, called only at the time out (to show what a log said by then, say). An exception of the
    predicate is not caught: a predicate that can fail while the thing starts must say so itself."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            text = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {text}")
        time.sleep(min(interval_s, left))
