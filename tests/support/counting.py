"""Counting stand-ins for the runtime's synchronisation objects: the wakes it sends, pinned as counts."""

from __future__ import annotations

import threading
from typing import Any


class CountingCondition(threading.Condition):
    """A condition that records each ``notify(n)`` (as ``n``) and ``notify_all()`` (as ``"all"``) in ``notified``."""

    def __init__(self, lock: Any = None) -> None:
        super().__init__(lock)
        self.notified: list[int | str] = []

    def notify(self, n: int = 1) -> None:
        self.notified.append(n)
        super().notify(n)

    def notify_all(self) -> None:
        self.notified.append("all")
        super().notify_all()


class CountingLock:
    """A lock that counts its acquisitions (``with``, or ``acquire`` that got it) in ``acquired``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.acquired = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self._lock.acquire(blocking, timeout)
        if got:
            self.acquired += 1  # under the lock: counted exactly
        return got

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
