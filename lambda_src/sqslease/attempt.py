"""One run of a handler on one message, settled once: by the handler's end or by its timeout, whichever comes first.

A per-message timeout (``LeaseSettings.max_processing_time``) and the handler race to settle the message;
:meth:`Attempt.claim` lets exactly one of them. A handler that returns after its timeout claimed the settle has
its result ignored (logged). A timeout holds the message's lease while the thread may run
(:meth:`Attempt.take_held`), so the message cannot run elsewhere meanwhile: the worker's (heartbeat on) until it
exits, the Lambda adapter's until the invocation ends, and then the process ends if the thread still runs
(:mod:`sqslease.hung_records`). A timed-out ``async def`` handler's task is cancelled; a thread cannot be.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from sqslease.message import Message


class HandlerTimeoutError(TimeoutError):
    """The handler was still running at its ``max_processing_time`` (or at the Lambda invocation's deadline)."""


#: One lock for every attempt's claim: held for a few bytecodes, and a lock of its own cost every message its
#: allocation (``bench/runtime_bench.py``).
_CLAIM_LOCK = threading.Lock()


class Attempt:
    """One handler run of ``message``, begun at ``started`` (seconds, on the consumer's monotonic clock)."""

    __slots__ = ("_cancel", "_claimed", "ended", "held", "message", "started", "timed_out_at")

    def __init__(self, message: Message, started: float) -> None:
        self.message = message
        self.started = started
        #: When (clock) its timeout claimed the settle; None while it has not timed out.
        self.timed_out_at: float | None = None
        #: True once the handler returned (or raised), however late. A flag, not an Event: nothing waits on it
        #: (a watcher looks at it), and an Event's condition costs every record.
        self.ended = False
        #: Its timeout left the message's lease held (the worker: the thread may still run); see :meth:`take_held`.
        self.held = False
        self._claimed = False
        self._cancel: Callable[[], object] | None = None

    @property
    def cancellable(self) -> bool:
        """An ``async def`` handler's task, which a timeout cancels. False for a plain function's thread."""
        return self._cancel is not None

    def claim(self) -> bool:
        """True for the first caller only: it settles the message."""
        with _CLAIM_LOCK:
            claimed, self._claimed = self._claimed, True
        return not claimed

    def time_out(self, now: float, hold: bool = False) -> bool:
        """Claim the settle for the timeout and cancel the task, if any. False when the handler ended first.

        :param hold: leave the message's lease held, to be settled by whoever :meth:`take_held` first (the handler
            when it returns, or the worker as it exits). Default False: the timeout settles it.
        """
        with _CLAIM_LOCK:
            if self._claimed:
                return False
            self._claimed = True
            self.timed_out_at = now
            self.held = hold  # with the claim: a handler returning now sees it
            cancel = self._cancel
        if cancel is not None:
            cancel()
        return True

    def take_held(self) -> bool:
        """True for the first caller only, and only if its timeout held the lease: that caller settles it."""
        with _CLAIM_LOCK:
            held, self.held = self.held, False
        return held

    def on_cancel(self, cancel: Callable[[], object]) -> None:
        """Register how to cancel the handler's task; called at once if the attempt already timed out."""
        with _CLAIM_LOCK:
            self._cancel = cancel
            late = self.timed_out_at is not None
        if late:
            cancel()
