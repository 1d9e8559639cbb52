"""The Lambda adapter's per-record timeout (``max_processing_time``).

A record whose ``max_processing_time`` is shorter than the time the invocation has left runs on a spare thread,
watched by the invocation's thread. Still running at ``max_processing_time``, or once less than the deadline margin
is left (the point where no record starts, see :mod:`sqslease.invocation`), it is timed out
(:meth:`MessageProcessor.time_out`): it is reported in ``batchItemFailures``, its EMF line says ``timed_out``, and
the invocation goes on (with time left) or returns. So the invocation answers before Lambda kills it, and the
records it finished are not delivered again. Its lease is held, not released, while its handler may still run: a
handler that returns settles it by the failure policy; one still running when the invocation ends ends the
execution environment (:mod:`sqslease.hung_records`), so that it never runs beside its message's redelivery.

Every other record runs on the invocation's thread: a thread handoff costs tens of microseconds a record
(``bench/runtime_bench.py``), which every invocation would pay. There the deadline guard starts no record with less
than the margin left, and the deadline watchdog (:mod:`sqslease.deadline_watch`) times out a record still running at
the hang point (half the margin before the end) and ends the environment, rather than leave it to Lambda's timeout
(no line written, the batch's records back after their visibility timeout, the finished ones too).

Threads are kept for the process (Lambda reuses it): a record costs no thread start but the first. A thread
still running a timed-out handler is not reused, and its late result is ignored (logged). An ``async def``
handler's task is cancelled.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from sqslease.attempt import Attempt
from sqslease.deadline_watch import LOOK_S, InlineWatch
from sqslease.hung_records import TimedOutRecords
from sqslease.message import Message
from sqslease.processor import TIMED_OUT, MessageProcessor, ProcessResult

logger = logging.getLogger("sqslease")

_Job = tuple[Callable[[], None], threading.Event]
_idle: list[queue.SimpleQueue[_Job]] = []  # spare threads' inboxes
_idle_lock = threading.Lock()


def run_record(
    processor: MessageProcessor,
    message: Message,
    out_of_time: Callable[[], bool],
    time_left: Callable[[], float] | None = None,
    clock: Callable[[], float] = time.monotonic,
    *,
    timed_out: TimedOutRecords,
    watch: InlineWatch | None = None,
) -> ProcessResult:
    """Run ``message`` through ``processor``. With a ``max_processing_time`` below ``time_left()`` (seconds the
    invocation has; ``None``: unknown), on a spare thread, timed out at ``max_processing_time`` or once
    ``out_of_time()`` with its lease held, and then added to ``timed_out``; else on this thread, under ``watch`` (the
    deadline watchdog's; ``None``: unwatched). Returns its result (``timed_out`` with ``retry`` when timed out)."""
    limit = processor.settings.max_processing_time
    attempt = Attempt(message, clock())
    if limit is None or (time_left is not None and limit >= time_left()):
        # no handoff: the deadline watchdog watches it from its own thread
        return processor.process(message, attempt) if watch is None else watch.run(message, attempt)
    results: list[ProcessResult] = []
    ended = _start(lambda: results.append(processor.process(message, attempt)))
    while not ended.wait(LOOK_S):
        now = clock()
        if limit is not None and now - attempt.started >= limit:
            reason = f"max_processing_time is {limit:g} s"
        elif out_of_time():
            reason = "the invocation's deadline is near (less than the deadline margin left)"
        else:
            continue
        if processor.time_out(attempt, now, reason, hold=True):
            timed_out.add(attempt, ended)  # the invocation's end looks whether its handler still runs
            return ProcessResult(TIMED_OUT, (now - attempt.started) * 1000, retry=True)
        ended.wait()  # it ended as it timed out: its result comes at once
        break
    return results[0] if results else ProcessResult("failure", 0, retry=True)


def _start(call: Callable[[], None]) -> threading.Event:
    ended = threading.Event()
    with _idle_lock:
        inbox = _idle.pop() if _idle else None
    if inbox is None:
        inbox = queue.SimpleQueue()
        threading.Thread(target=_serve, args=(inbox,), name="sqslease-record", daemon=True).start()
    inbox.put((call, ended))
    return ended


def _serve(inbox: queue.SimpleQueue[_Job]) -> None:
    while True:
        call, ended = inbox.get()
        try:
            call()
        except BaseException:  # process() settles and logs handler errors; this is a bug in sqslease
            logger.exception("processing a record failed unexpectedly")
        finally:
            ended.set()
            with _idle_lock:
                _idle.append(inbox)  # a thread back from a timed-out handler serves again
