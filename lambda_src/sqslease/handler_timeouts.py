"""The handler pool's watchdog: handlers still running at ``max_processing_time`` are timed out, and reported hung
(see :mod:`sqslease.handler_pool`, whose base class this is); and a message whose lease cap can no longer cover
``max_processing_time`` is released unstarted.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqslease.attempt import Attempt
from sqslease.handler_groups import HandlerGroups
from sqslease.message import Message
from sqslease.rules import ASYNC_CANCEL_GRACE_S

logger = logging.getLogger("sqslease")


class HandlerTimeouts(HandlerGroups):
    """What the handler pool's watchdog does: the base class of :class:`sqslease.handler_pool.HandlerPool`, which
    sets every attribute declared here."""

    max_processing_time: float | None
    on_hung: Callable[[Attempt], None] | None
    processed: int
    _running: dict[threading.Thread, Attempt]
    _timed_out: dict[threading.Thread, Attempt]
    _reported: set[int]
    _watchdog_stop: threading.Event

    def release_timed_out(self) -> None:
        """Settle by the failure policy the messages whose timed-out handler still runs: the process exits next,
        and with it their threads (until now their leases were held, so they could not run elsewhere)."""
        with self._running_lock:
            attempts = list(self._timed_out.values())
        for attempt in attempts:
            if attempt.take_held():
                self.processor.apply_failure_policy(attempt.message)

    def check_timeouts(self, now: float) -> None:
        """Time out the handlers running for ``max_processing_time`` by ``now`` (clock); report the hung ones."""
        limit = self.max_processing_time
        if limit is None:
            return
        with self._running_lock:
            overdue = [(t, a) for t, a in self._running.items() if now - a.started >= limit]
        for thread, attempt in overdue:
            # The lease stays held while the thread may run: released, the message could start again meanwhile.
            # (Without the heartbeat nothing could hold it past its visibility timeout: settled at once.)
            reason = f"max_processing_time is {limit:g} s"
            if not self.processor.time_out(attempt, now, reason, hold=self.processor.settings.heartbeat):
                continue  # it ended meanwhile, and settled itself
            with self._running_lock:
                if self._running.get(thread) is attempt:
                    del self._running[thread]
                if not attempt.ended:  # else its thread is back already (and saw it timed out)
                    self._timed_out[thread] = attempt
                self.processed += 1
            self._finished(attempt.message, failed=True)
        with self._running_lock:
            hung = [a for a in self._timed_out.values() if _hung(a, now) and id(a) not in self._reported]
            self._reported.update(id(a) for a in hung)
        for attempt in hung:
            if self.on_hung is not None:
                self.on_hung(attempt)

    def _lease_too_short(self, message: Message) -> bool:
        """Release ``message`` unstarted if what is left of its lease's cap (``max_total_lease`` from the receive;
        its wait here counts) cannot cover ``max_processing_time`` and a visibility timeout to settle it."""
        settings = self.processor.settings
        if self.max_processing_time is None or not settings.heartbeat:  # no cap to outlive
            return False
        left = settings.max_total_lease - (self.clock() - message.lease.received_at)
        if left >= self.max_processing_time + settings.visibility_timeout:
            return False
        logger.warning(
            "message %s: %.0f s left of its max_total_lease cannot cover max_processing_time (%g s) plus the "
            "visibility timeout: releasing it unstarted",
            message.message_id,
            left,
            self.max_processing_time,
        )
        self.settler.change_visibility(message.lease, 0)
        self.processor.record_released(message)
        self._finished(message, failed=True)
        return True

    def _watch(self, interval: float) -> None:
        while not self._watchdog_stop.wait(interval):
            try:
                self.check_timeouts(self.clock())
            except Exception:  # a bug must not silently end every timeout: log it and keep watching
                logger.exception("handler watchdog failed")


def _hung(attempt: Attempt, now: float) -> bool:
    """Timed out and still running: at once for a thread, after a grace for a cancelled task."""
    if attempt.timed_out_at is None or attempt.ended:
        return False
    return now >= attempt.timed_out_at + (ASYNC_CANCEL_GRACE_S if attempt.cancellable else 0)
