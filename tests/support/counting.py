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
