"""The outcome of one settle (a delete or a visibility change): resolved once, to True once SQS confirmed it.

What :class:`concurrent.futures.Future` offers the settler's callers (``done``, ``result`` with a timeout,
``set_result``), without its price: a ``Future`` builds a condition (a lock and an ``RLock``) when it is created
and notifies it when resolved, a few microseconds per message, though almost no settle is ever waited for (the
worker's deletes never are). Here an event is made only for a caller that waits.
"""

from __future__ import annotations

import threading
from concurrent.futures import InvalidStateError

#: Guards every settle's result and event: held for a few bytecodes, never while waiting.
_LOCK = threading.Lock()
_PENDING: object = object()


class SettleFuture:
    """A settle's result: ``True`` (SQS confirmed it) or ``False`` (refused, lost, given up, unconfirmed)."""

    __slots__ = ("_event", "_result")

    def __init__(self) -> None:
        self._result: object = _PENDING
        self._event: threading.Event | None = None

    def done(self) -> bool:
        return self._result is not _PENDING

    def set_result(self, result: bool) -> None:
        """Resolve it (once: a second call raises ``InvalidStateError``, as a ``Future``'s does)."""
        with _LOCK:
            if self._result is not _PENDING:
                raise InvalidStateError(f"settle already resolved to {self._result}")
            self._result = result
            event = self._event
        if event is not None:
            event.set()

    def result(self, timeout: float | None = None) -> bool:
        """The result, waiting for it at most ``timeout`` seconds (None: without a bound); ``TimeoutError`` if
        it did not come in time."""
        if self._result is _PENDING:
            with _LOCK:
                if self._result is _PENDING and self._event is None:
                    self._event = threading.Event()
                event = self._event
            if event is not None and not event.wait(timeout):
                raise TimeoutError(f"settle not resolved within {timeout} s")
        return bool(self._result)
