"""The handler pool's FIFO groups after a failure: the failed message parked for its retry in process, or its
group's later messages released.

A FIFO message that fails is retried in process when the worker knows the queue's ``maxReceiveCount`` and DLQ
(:mod:`sqslease.fifo_retry`): parked until the failure policy's delay has passed (:mod:`sqslease.fifo`), its lease
and its group's later messages held meanwhile. Otherwise, and once a drain began, it sends its group's later
messages back to the queue (released unrun). During a drain they are held back instead, and released with the
other unstarted messages at the drain's release point (see :mod:`sqslease.drain`), and so are the parked messages
(hidden for what is left of their delay): released earlier, they could meet the long poll of another worker
drained at the same moment, which might have no handler for them.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

from sqslease.failure_policy import retry_delay
from sqslease.fifo import ReadyQueue
from sqslease.message import Message
from sqslease.processor import MessageProcessor
from sqslease.settle import Settler

logger = logging.getLogger("sqslease")


class HandlerGroups:
    """What the handler pool does with a FIFO group: the base class of :class:`sqslease.handler_pool.HandlerPool`,
    which sets every attribute declared here."""

    processor: MessageProcessor
    settler: Settler
    clock: Callable[[], float]
    release_at: float
    _ready: ReadyQueue
    _stopping: threading.Event
    _running_lock: threading.Lock
    _held_back: list[Message]
    _parked_at_drain: list[tuple[Message, float]]
    _released: bool

    def release_parked(self) -> None:
        """Hide the failed messages whose retry in process was to come for what is left of their delay (the drain
        ends their hold: the next consumer retries them then). Each of them ran: no EMF line, the run had one."""
        with self._running_lock:
            parked, self._parked_at_drain = self._parked_at_drain, []
        now = self.clock()
        for message, due in parked:
            logger.info("message %s: its retry was %.1f s away; released until then", message.message_id, due - now)
            self.settler.change_visibility(message.lease, math.ceil(max(0.0, due - now)))

    def parked(self) -> dict[str, float]:
        """Message id -> when (clock) its retry in process is due, for every failed FIFO message held for one."""
        return self._ready.parked()

    def _finished(self, message: Message, failed: bool) -> None:
        """``message`` no longer runs: its group goes on, or (it failed) the group's later messages are released."""
        if not self._ready.fifo:  # no group to open or to hand back: no lock taken
            return
        with self._running_lock:
            # One step with the hold: a drain looking whether messages wait (``waiting``) must not find the group's
            # later messages neither in the ready queue nor held back, or it closes before they are held.
            later = self._ready.done(message, failed)
            hold = bool(later) and self._stopping.is_set() and not self._released
            if hold:
                self._held_back += later
        if later:
            self._release_later(message, later, held=hold)

    def _retry_later(self, message: Message) -> None:
        """Park ``message``, a failed FIFO message held for a retry in process, for the failure policy's delay; if
        a drain closed the queue meanwhile, settle it by the failure policy instead (its group's later messages are
        the drain's)."""
        failed_run = message.receive_count
        delay = retry_delay(self.processor.settings, failed_run)
        message.retries_in_process += 1
        if not self._ready.park(message, self.clock() + delay):
            message.retries_in_process -= 1
            self.processor.apply_failure_policy(message)
            self._finished(message, failed=True)
            return
        logger.warning(
            "message %s of group %s failed (receive %d): retried in process in %.1f s, its lease and its group's "
            "later messages held meanwhile",
            message.message_id,
            message.message_group_id,
            failed_run,
            delay,
        )

    def _release_later(self, message: Message, later: list[Message], held: bool) -> None:
        # FIFO: the group's later messages must not run before this one succeeds. Draining (``held``): released
        # with the unstarted ones, once no poll drained with this one is open.
        logger.info(
            "message group %s: message %s failed; releasing %d later messages of the group",
            message.message_group_id,
            message.message_id,
            len(later),
        )
        if not held:
            if self._stopping.is_set():  # ready is closed: this thread has nothing else to do
                time.sleep(max(0.0, self.release_at - self.clock()))
            for other in later:
                self.settler.change_visibility(other.lease, 0)
                self.processor.record_released(other)
