"""The Lambda adapter's deadline watchdog, for records that run on the invocation's own thread.

A record without a ``max_processing_time`` shorter than the time its invocation has runs on the invocation's thread
(:mod:`sqslease.record_runner`: no thread hand-off per record), where nothing can notice its handler hang; Lambda
would kill the environment at the function's timeout without a line written, and every record of the batch, the
finished ones too, would come back. So one thread of the process, the watchdog, looks at that record every
``LOOK_S`` while an invocation runs. A record still running with less than the hang margin left (half the deadline
margin, :func:`sqslease.rules.lambda_hang_margin`) is timed out as a record on a spare thread is
(:meth:`~sqslease.processor.MessageProcessor.time_out`, its lease held: EMF ``timed_out``, reported as a failure).
If its handler still runs then (a thread cannot be stopped; a cancelled ``async def`` one gets
:func:`~sqslease.hung_records.cancel_wait_s` to end), the watchdog settles the batch as Lambda would for a failed
invocation (:func:`~sqslease.hung_records.settle_failed_invocation`) and hands
:class:`~sqslease.hung_records.RecordsHungError` to the invocation's ``on_hung``: ``sqs_batch_handler`` ends the
execution environment (:func:`~sqslease.hung_records.end_environment`: a CRITICAL line, exit status 3). A record that
ends before the hang point, inside the deadline margin or not, is left alone: its invocation still answers in time.

The invocation's thread, back from a record the watchdog timed out, waits for the watchdog's verdict, so that only
one of them goes on with the batch: the invocation (the handler returned, or its task ended on its cancellation) or
the watchdog (it was hung); in the latter case the invocation raises that error once the watchdog is done (where
``on_hung`` did not end the process).

The watchdog thread (``sqslease-deadline``) starts with this module, in Lambda's init phase, and sleeps on an
event between invocations: an invocation starts no thread for it (a process forked after the import starts its
own in its first invocation). An invocation arms and disarms its watch (a lock each, and the watchdog's wake when
it sleeps); a record sets and clears the watched attempt without a lock.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from sqslease.attempt import Attempt
from sqslease.hung_records import RecordsHungError, TimedOutRecords, cancel_wait_s
from sqslease.invocation import EventLeases, remaining_seconds
from sqslease.message import Message
from sqslease.processor import MessageProcessor, ProcessResult
from sqslease.rules import lambda_hang_margin

logger = logging.getLogger("sqslease")

#: Seconds between two looks at a running record's limits (the watchdog's, and an invocation's at a spare thread).
LOOK_S = 0.05
#: The watchdog thread's name.
WATCHDOG_THREAD = "sqslease-deadline"

_lock = threading.Lock()  # guards the armed watches and each watch's verdict
_wake = threading.Event()  # set while any watch is armed (the watchdog clears it, under the lock, when none is)
_armed: set[InlineWatch] = set()
_watchdog: threading.Thread | None = None


class InlineWatch:
    """One invocation's watch over the records its own thread runs (see the module doc).

    :param context: Lambda's context of the invocation (its ``get_remaining_time_in_millis``), read by the watchdog.
    :param deadline_margin_s: the invocation's deadline margin; the hang point is half of it.
    :param timed_out: the invocation's timed-out records, to which a record timed out here is added.
    :param settle_failed: settles the batch around the hung record (given its message id), on the watchdog's thread.
    :param on_hung: called with the error on the watchdog's thread once the batch is settled. Default none.
    :param clock: the monotonic clock the attempts' start times are on.
    """

    __slots__ = (
        "_clock",
        "_context",
        "_current",
        "_decided",
        "_ended",
        "_hang_margin_s",
        "_hung",
        "_on_hung",
        "_processor",
        "_settle_failed",
        "_settled",
        "_timed_out",
    )

    def __init__(
        self,
        processor: MessageProcessor,
        context: Any,
        deadline_margin_s: float,
        timed_out: TimedOutRecords,
        settle_failed: Callable[[str], None],
        on_hung: Callable[[RecordsHungError], object] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._processor = processor
        self._context = context
        self._hang_margin_s = lambda_hang_margin(deadline_margin_s)
        self._timed_out = timed_out
        self._settle_failed = settle_failed
        self._on_hung = on_hung
        self._clock = clock
        #: The record the invocation's thread runs. Set and cleared without the lock (one reference at a time):
        #: the invocation's thread takes it only after the watchdog timed its record out (``_ended`` set first).
        self._current: Attempt | None = None
        self._ended: threading.Event | None = None  # made by the watchdog as it times the current record out
        self._decided: threading.Event | None = None  # set once the watchdog's verdict on that record is in
        self._hung: RecordsHungError | None = None
        self._settled: threading.Event | None = None  # made with a verdict of hung

    def arm(self) -> None:
        """Start watching (the invocation begins)."""
        with _lock:
            if _watchdog is None:  # only in the child of a fork (the import started one)
                _start_watchdog()
            _armed.add(self)
        if not _wake.is_set():  # after the add: a watchdog that found none armed cleared it first
            _wake.set()

    def disarm(self) -> None:
        """Stop watching (the invocation ends)."""
        with _lock:
            _armed.discard(self)

    def run(self, message: Message, attempt: Attempt) -> ProcessResult:
        """Run ``message`` through the processor on this (the invocation's) thread, watched. Raises the watchdog's
        :class:`RecordsHungError` once it settled the batch, if it gave up on this record."""
        self._current = attempt
        try:
            result = self._processor.process(message, attempt)
        finally:
            self._current = None
            # ``_ended`` is set before the watchdog's timeout claims the attempt, so a record it timed out sees it
            hung = None if self._ended is None else self._verdict()
        if hung is not None:
            assert self._settled is not None
            self._settled.wait()  # from the entry point the process ends meanwhile
            raise hung
        return result

    def _verdict(self) -> RecordsHungError | None:
        """The watchdog's verdict on the record it timed out, once its handler ended (or was found hung)."""
        with _lock:
            ended, decided = self._ended, self._decided
        if ended is not None and decided is not None:
            ended.set()  # a cancelled coroutine's end, which the watchdog may be waiting for
            decided.wait()
        return self._hung

    def look(self) -> None:
        """On the watchdog's thread: time the current record out if it is past the hang point, and if its handler
        still runs, settle the batch and hand the error over."""
        with _lock:
            attempt = self._current
            if attempt is None or self._ended is not None:
                return
            remaining = remaining_seconds(self._context)
            if remaining is None or remaining >= self._hang_margin_s:
                return
            ended = self._ended = threading.Event()
            decided = self._decided = threading.Event()
        hung: RecordsHungError | None = None
        settled = None
        try:
            hung = self._time_out(attempt, ended, remaining)
        finally:
            with _lock:
                self._hung = hung
                if hung is None:
                    self._ended = None  # its handler ended: the invocation goes on, watched
                else:
                    settled = self._settled = threading.Event()
            decided.set()
        if hung is None or settled is None:
            return
        try:
            self._settle_failed(attempt.message.message_id)
            if self._on_hung is not None:
                with contextlib.suppress(RecordsHungError):  # end_environment raises it only where os._exit returns
                    self._on_hung(hung)
        finally:
            settled.set()

    def _time_out(self, attempt: Attempt, ended: threading.Event, remaining: float) -> RecordsHungError | None:
        reason = f"less than {self._hang_margin_s:.2f} s of the invocation left (half its deadline margin)"
        if not self._processor.time_out(attempt, self._clock(), reason, hold=True):
            return None  # its handler ended first
        self._timed_out.add(attempt, ended)
        hung = self._timed_out.still_running(cancel_wait_s(remaining))
        return RecordsHungError([a.message.message_id for a in hung]) if hung else None


def watch_inline_records(
    processor: MessageProcessor,
    held: EventLeases,
    timed_out: TimedOutRecords,
    settle_failed: Callable[[str], None],
    on_hung: Callable[[RecordsHungError], object] | None,
) -> InlineWatch | None:
    """An armed watch over the records the invocation ``held`` runs on its own thread; ``None`` when its context
    has no deadline (no ``get_remaining_time_in_millis``). Arguments as :class:`InlineWatch`'s."""
    if getattr(held.context, "get_remaining_time_in_millis", None) is None:
        return None
    watch = InlineWatch(processor, held.context, held.deadline_margin, timed_out, settle_failed, on_hung)
    watch.arm()
    return watch


def _serve() -> None:
    """The watchdog: while any invocation is armed, look at its record every ``LOOK_S``; else sleep."""
    while True:
        _wake.wait()
        with _lock:
            watches = list(_armed)
            if not watches:
                _wake.clear()  # under the lock: an arm adds its watch, then sets it again
                continue
        for watch in watches:
            try:
                watch.look()
            except Exception:  # a bug in sqslease: the watchdog must outlive it
                logger.exception("the deadline watchdog failed")
        time.sleep(LOOK_S)


def _start_watchdog() -> None:
    global _watchdog
    _watchdog = threading.Thread(target=_serve, name=WATCHDOG_THREAD, daemon=True)
    _watchdog.start()


def _after_fork_in_child() -> None:
    """The child of a fork has no watchdog thread, and its locks may have been held by it: start afresh."""
    global _lock, _wake, _watchdog
    _lock, _wake, _watchdog = threading.Lock(), threading.Event(), None
    _armed.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)
_start_watchdog()  # with the import: Lambda's init phase, not an invocation
