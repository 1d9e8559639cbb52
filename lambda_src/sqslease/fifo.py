"""Received messages waiting for a handler, in receive order, one running message per FIFO group.

SQS FIFO queues keep order per ``MessageGroupId`` only if the consumer does too: it must not start a group's
next message before the previous one ended, and if one fails, the group's later messages must go back to
the queue (released) rather than run before it. For standard queues every message is its own group.

A failed message that the worker retries in process (:mod:`sqslease.fifo_retry`) is *parked* instead: its group
stays closed, its later messages wait behind it (held, not released: they spend no receive), and it is handed out
again once its retry is due, before them. A parked group counts as one outstanding message (its head), so that a
poison message does not keep its worker from receiving other groups' messages.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from sqslease.message import Message

#: Seconds a handler waiting for a parked retry sleeps at most before it looks at the clock again: the clock need
#: not be the one the wait is timed on (a test's fake clock). A wake a second per idle handler, while one is parked.
PARKED_LOOK_S = 1.0


class ReadyQueue:
    """Thread-safe queue of received messages that hands out at most one message per group at a time.

    :param fifo: group by ``MessageGroupId`` (a FIFO queue). Default False: no grouping.
    :param clock: monotonic clock in seconds (when parked retries are due). Default ``time.monotonic``.
    """

    def __init__(self, fifo: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self.fifo = fifo
        self.clock = clock
        self._items: deque[Message] = deque()
        self._busy: set[str] = set()  # groups with a message running or parked
        self._parked: dict[str, tuple[Message, float]] = {}  # group -> its failed head, and when (clock) to retry it
        self._closed = False
        # A plain lock under the condition: the paths that never wait take it directly (a C call, where entering a
        # Condition is a Python one), and a wake is sent only to a handler that waits (``_idle``).
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._idle = 0  # handlers waiting in get()

    def __len__(self) -> int:
        """Messages waiting for a handler, a parked group counting as one (its head): its later messages wait
        for the retry, not for a handler."""
        if not self.fifo:  # nothing parked: a deque's length is read atomically, no lock needed
            return len(self._items)
        with self._lock:
            if not self._parked:
                return len(self._items)
            behind = sum(1 for message in self._items if self._group(message) in self._parked)
            return len(self._items) - behind + len(self._parked)

    def parked(self) -> dict[str, float]:
        """Message id -> when (clock) its retry is due, for every parked message."""
        with self._lock:
            return {message.message_id: due for message, due in self._parked.values()}

    def put(self, messages: list[Message], relay: bool = False) -> bool:
        """Append messages in the order SQS returned them. ``relay``: wake one waiting handler more, to poll next
        (handlers that receive, :func:`sqslease.handler_pool.handlers_receive`). False (nothing added) once closed."""
        with self._lock:
            if self._closed:
                return False
            self._items.extend(messages)
            # One handler per message at most, and only handlers that wait: waking them all made every idle one
            # switch in for nothing. (FIFO: a message may wait for its group, and a handler woken for it waits
            # again; done() wakes them all.)
            if self._idle:
                self._cond.notify(min(len(messages) + relay, self._idle))
            return True

    def get(self) -> Message | None:
        """A parked message whose retry is due, else the oldest message whose group is neither running nor parked
        (marking its group running); None once closed."""
        with self._lock:
            while True:
                if self._closed:
                    return None
                now = self.clock()
                message = self._take(now)
                if message is not None:
                    return message
                due = min((at for _, at in self._parked.values()), default=None)
                self._idle += 1
                try:
                    self._cond.wait(None if due is None else min(PARKED_LOOK_S, max(0.0, due - now)))
                finally:
                    self._idle -= 1

    def take(self, now: float) -> Message | None:
        """What :meth:`get` hands out at ``now`` (clock), without waiting: None when nothing is startable."""
        if not self.fifo:  # no group to mark: a popleft is atomic, so no lock (close pops too: none is taken twice)
            items = self._items
            if items:
                try:
                    return items.popleft()
                except IndexError:  # another handler took the last one meanwhile
                    return None
            return None
        with self._lock:
            return self._take(now)

    def standard_items(self) -> deque[Message]:
        """A standard queue's waiting messages, for a handler loop to take from with ``popleft`` as :meth:`take`
        does, a call less a message: a popleft is atomic, and :meth:`close` pops too, so none is taken twice. The
        deque stays the same one (only a FIFO group's failure replaces it)."""
        assert not self.fifo, "a FIFO queue's take marks its group: take()"
        return self._items

    def _take(self, now: float) -> Message | None:
        if not self.fifo:  # no group, nothing parked: the oldest
            return self.take(now)  # (lock-free: another handler's take may empty it meanwhile)
        for group, (message, due) in self._parked.items():
            if due <= now:
                del self._parked[group]  # its group stays busy: it runs now
                return message
        return self._take_startable()

    def park(self, message: Message, due: float) -> bool:
        """Hand ``message`` (just failed, its group still running) out again at ``due`` (clock), before its group's
        later messages. False (nothing parked) once closed."""
        group = self._group(message)
        assert group is not None, "only a FIFO message is retried in process"
        with self._lock:
            if self._closed:
                return False
            self._parked[group] = (message, due)
            self._cond.notify_all()  # a waiting handler sleeps until the earliest retry
            return True

    def _take_startable(self) -> Message | None:
        for index, message in enumerate(self._items):
            group = self._group(message)
            if group is None or group not in self._busy:
                del self._items[index]
                if group is not None:
                    self._busy.add(group)
                return message
        return None

    def done(self, message: Message, failed: bool) -> list[Message]:
        """A message ended. After a failure, remove and return the group's later messages (to release)."""
        group = self._group(message)
        if group is None:  # no group to open: nothing to lock, no one to wake
            return []
        with self._lock:
            self._busy.discard(group)
            later: list[Message] = []
            if failed:
                later = [m for m in self._items if self._group(m) == group]
                self._items = deque(m for m in self._items if self._group(m) != group)
            if self._idle:
                self._cond.notify_all()
            return later

    def close(self) -> tuple[list[Message], list[tuple[Message, float]]]:
        """Stop: every :meth:`get` returns None and :meth:`put` and :meth:`park` refuse from now on. Returns the
        messages that were waiting (to release) and the parked ones with when their retry was due, atomically, so
        none is left behind."""
        with self._lock:
            self._closed = True
            items = []
            while self._items:  # one popleft each, as a lock-free take does: a message is taken once, by either
                try:
                    items.append(self._items.popleft())
                except IndexError:
                    break
            parked = list(self._parked.values())
            self._parked.clear()
            self._cond.notify_all()
            return items, parked

    def _group(self, message: Message) -> str | None:
        return message.message_group_id if self.fifo else None
