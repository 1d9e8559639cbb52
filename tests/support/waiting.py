"""Polling for a condition with a bound: tests assert invariants, never a tight wall-clock window."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(predicate: Callable[[], bool], timeout_s: float, interval_s: float = 0.05) -> bool:
    """True as soon as ``predicate()`` is; after ``timeout_s`` seconds, its last answer."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()


def until(
    predicate: Callable[[], bool], timeout_s: float = 60, what: str = "the condition", interval_s: float = 0.05
) -> None:
    """Return as soon as ``predicate()`` is true; an ``AssertionError`` naming ``what`` after ``timeout_s`` seconds
    (a bound for a failing test, never a measure: default 60)."""
    if not wait_for(predicate, timeout_s, interval_s):
        raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
