"""Received messages waiting for a handler, in receive order, one running message per FIFO group.

SQS FIFO queues keep order per ``MessageGroupId`` only if the consumer does too: it must not start a group's
next message before the previous one ended, and if one fails, the group's later messages must go back to
the queue (released) rather than run before it. For standard queues every message is its own group.

Releasing them is the price of the retry: SQS hands out none of a group's messages while one is in flight, and
each released message has spent the receive that brought it. So a message that fails until the DLQ takes the
later messages received with it there too, never run (docs/sqslease.md's FIFO section says how to size for it).
"""

from __future__ import annotations

import threading
from collections import deque

from sqslease.message import Message


class ReadyQueue:
    """Thread-safe queue of received messages that hands out at most one message per group at a time.

    :param fifo: group by ``MessageGroupId`` (a FIFO queue). Default False: no grouping.
    """

    def __init__(self, fifo: bool = False) -> None:
        self.fifo = fifo
        self._items: deque[Message] = deque()
        self._busy: set[str] = set()  # groups with a message running
        self._closed = False
        self._cond = threading.Condition()

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)

    def put(self, messages: list[Message]) -> bool:
        """Append messages in the order SQS returned them. False (nothing added) once closed."""
        with self._cond:
            if self._closed:
                return False
            self._items.extend(messages)
            # One handler per message at most: waking them all made every idle one switch in for nothing. (FIFO:
            # a message may wait for its group, and a handler woken for it waits again; done() wakes them all.)
            self._cond.notify(len(messages))
            return True

    def get(self) -> Message | None:
        """The oldest message whose group is not running (marking its group running); None once closed."""
        with self._cond:
            while True:
                if self._closed:
                    return None
                message = self._take_startable()
                if message is not None:
                    return message
                self._cond.wait()

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
        with self._cond:
            if group is None:
                return []
            self._busy.discard(group)
            later: list[Message] = []
            if failed:
                later = [m for m in self._items if self._group(m) == group]
                self._items = deque(m for m in self._items if self._group(m) != group)
            self._cond.notify_all()
            return later

    def close(self) -> list[Message]:
        """Stop: every :meth:`get` returns None and :meth:`put` refuses from now on. Returns the messages that
        were waiting (to release), atomically, so none is left behind."""
        with self._cond:
            self._closed = True
            items = list(self._items)
            self._items.clear()
            self._cond.notify_all()
            return items

    def _group(self, message: Message) -> str | None:
        return message.message_group_id if self.fifo else None
