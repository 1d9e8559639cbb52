"""The settles queued for one of the settler's senders (deletes, or visibility changes), and when its thread wakes.

A sender thread used to wake twice a batch: for the batch's first settle, then once it was full. Now a settle wakes
it only when it sleeps with nothing to do (the first settle after a quiet spell), and a close always does; while
settles keep coming it looks again once the oldest queued has waited ``linger`` seconds, and sends what is queued
then. A full batch of deletes is not its work at all: the thread that queues the tenth takes the ten and sends them
itself (:meth:`SettleQueue.put` returns them; see :mod:`sqslease.settle`), one such batch at a time, so that at
most one more lease request is in flight than the sender threads send (:data:`sqslease.clients.SETTLER_THREADS`).
A full batch of visibility changes wakes its sender, which sends it without waiting out ``linger``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from sqslease.lease import Lease, LeaseState
from sqslease.rules import SQS_MAX_BATCH_ENTRIES
from sqslease.settle_future import SettleFuture


@dataclass(slots=True, eq=False)
class SettleItem:
    """One queued settle of a lease: a delete, or a visibility change to ``visibility_timeout`` seconds."""

    lease: Lease
    visibility_timeout: int | None  # None: delete
    final_state: LeaseState
    future: SettleFuture
    attempts: int = 0
    not_before: float = 0.0


class SettleQueue:
    """Thread-safe queue of one sender's settles.

    :param linger: seconds the oldest queued settle waits for a batch to fill before the sender sends what there is.
    :param takes_full: a full batch is taken by the thread that fills it (:meth:`put` returns it), not woken for.
    """

    def __init__(self, linger: float, takes_full: bool) -> None:
        self.linger = linger
        self.takes_full = takes_full
        self._lock = threading.Lock()
        self._items: list[SettleItem] = []
        self._since = 0.0  # when (time.monotonic(): linger is real time) the oldest of _items was queued
        self._wake = threading.Event()
        self._asleep = False  # the sender waits without a bound: only a settle or a close ends that
        self._taken = False  # a full batch taken by put() is being sent (done_sending ends it)
        self._closing = False
        #: Times a settle or a close woke the sender (for the counts the tests pin).
        self.wakes = 0

    def put(self, item: SettleItem, take: bool = True) -> list[SettleItem]:
        """Queue ``item``. Returns the full batch it completed when the caller is to send it (``take``,
        ``takes_full``, no other taken batch in flight, not closing), else an empty list. Default True."""
        with self._lock:
            if not self._items:
                self._since = time.monotonic()
            self._items.append(item)
            full = len(self._items) >= SQS_MAX_BATCH_ENTRIES
            if full and take and self.takes_full and not self._taken and not self._closing:
                batch, self._items, self._taken = self._items, [], True
                return batch
            wake = self._asleep or (full and len(self._items) == SQS_MAX_BATCH_ENTRIES)
            if wake:
                self._asleep = False
                self.wakes += 1
        if wake:
            self._wake.set()
        return []

    def done_sending(self) -> None:
        """The batch :meth:`put` returned was sent: the next full batch may be taken the same way."""
        with self._lock:
            self._taken = False

    def close(self) -> None:
        """Wake the sender to send what is left (:meth:`next` returns True from now on)."""
        with self._lock:
            self._closing = True
            self._asleep = False
            self.wakes += 1
        self._wake.set()

    def next(self, poll: float | None) -> tuple[list[SettleItem], bool]:
        """The sender's wait: returns the queued settles once the oldest has waited ``linger`` seconds, a batch is
        full or the queue closes (then with True); or none after ``poll`` seconds (None: no bound), when the
        sender has a backlog to look at again."""
        until = None if poll is None else time.monotonic() + poll
        while True:
            with self._lock:
                now = time.monotonic()
                items = self._items
                due = items and (len(items) >= SQS_MAX_BATCH_ENTRIES or now >= self._since + self.linger)
                if self._closing or due:
                    self._items = []
                    return items, self._closing
                if until is not None and now >= until:
                    return [], False
                waits = [t for t in (until, self._since + self.linger if items else None) if t is not None]
                timeout = min(waits) - now if waits else None
                self._asleep = timeout is None
                self._wake.clear()
            self._wake.wait(timeout)

    def take_rest(self) -> list[SettleItem]:
        """Everything queued (the sender gives up at the end of its close)."""
        with self._lock:
            items, self._items = self._items, []
            return items

    def idle(self) -> bool:
        """Nothing queued, and no batch taken by :meth:`put` still being sent (its refused entries may come back)."""
        with self._lock:
            return not self._items and not self._taken
