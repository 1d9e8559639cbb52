"""Lambda records whose handler still runs after its timeout, and the end of the execution environment holding them.

A plain handler's thread cannot be stopped. Left alive, Lambda would freeze it with the environment when the
invocation returns and thaw it with the environment's next invocation, while its message, visible again, runs
elsewhere or in that very invocation: two live handlers of one message. So:

- a timed-out record's lease is held, not released (:mod:`sqslease.record_runner`): its message cannot be received
  again while its handler may run. A handler that returns while the invocation still runs settles its message by
  the failure policy then (:meth:`sqslease.processor.MessageProcessor.process`), and nothing more happens;
- an invocation that ends with such a handler still running (:meth:`TimedOutRecords.still_running`: a cancelled
  ``async def`` handler gets :func:`cancel_wait_s` to end) deletes the records Lambda would have deleted
  (:func:`delete_finished`: Lambda deletes nothing of a failed invocation), releases its unstarted ones as always,
  and raises :class:`RecordsHungError`;
- the entry point (:func:`sqslease.lambda_adapter.sqs_batch_handler`, so ``sqslease.lambda_entry`` too) then ends
  the process (:func:`end_environment`), and the thread with it. Lambda reports the invocation as
  ``Runtime.ExitError`` and starts a new environment for the next one. The hung message's lease was never
  released: it lapses after the process is gone (at most ``visibility_timeout`` after its last renewal), and the
  message is received again then, its receive count one higher.

A record that hangs on the invocation's own thread (no ``max_processing_time``) cannot let the invocation answer at
all: the deadline watchdog (:mod:`sqslease.deadline_watch`) times it out at the hang point, settles the batch as
above (:func:`settle_failed_invocation`) and hands the error to the entry point, which ends the process the same way.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Iterable
from typing import Any, NoReturn

from sqslease.attempt import Attempt
from sqslease.invocation import EventLeases
from sqslease.lease import Lease
from sqslease.message import Message
from sqslease.processor import MessageProcessor
from sqslease.rules import ASYNC_CANCEL_GRACE_S, HUNG_EXIT_CODE
from sqslease.settle import Settler

logger = logging.getLogger("sqslease")


class RecordsHungError(RuntimeError):
    """Records timed out and their handlers still run: the process must end (:func:`end_environment`) so that no
    redelivery runs beside them. ``message_ids``: theirs."""

    def __init__(self, message_ids: list[str]) -> None:
        super().__init__(
            f"{len(message_ids)} timed-out record(s) still running after the invocation ({', '.join(message_ids)}): "
            "ending this execution environment so that no redelivery runs beside them (their leases lapse after it)"
        )
        self.message_ids = message_ids


class TimedOutRecords:
    """One invocation's timed-out records, each with the event its record thread sets once it is done."""

    __slots__ = ("_records",)

    def __init__(self) -> None:
        self._records: list[tuple[Attempt, threading.Event]] = []

    def add(self, attempt: Attempt, ended: threading.Event) -> None:
        self._records.append((attempt, ended))

    def __bool__(self) -> bool:
        return bool(self._records)

    def still_running(self, wait_s: float) -> list[Attempt]:
        """The records whose handler still runs, after waiting at most ``wait_s`` seconds in all for the cancelled
        coroutines (``async def`` handlers) to end; a thread is not waited for (it ran past its timeout already).
        The held lease of each one returned is taken from its handler: a return after this settles nothing."""
        give_up_at = time.monotonic() + wait_s
        hung = []
        for attempt, ended in self._records:
            if attempt.cancellable:
                ended.wait(max(0.0, give_up_at - time.monotonic()))
            if attempt.take_held() or not attempt.ended:
                hung.append(attempt)
            else:  # it returned and took its settle: let its thread queue that (at once) before the settler closes
                ended.wait(max(0.0, give_up_at - time.monotonic()))
        return hung


def cancel_wait_s(remaining_s: float | None) -> float:
    """Seconds an invocation waits for its cancelled coroutines to end: half the time it has left (``remaining_s``,
    ``None`` when unknown; the other half settles and answers), at most ``ASYNC_CANCEL_GRACE_S`` (5 s)."""
    if remaining_s is None:
        return ASYNC_CANCEL_GRACE_S
    return max(0.0, min(ASYNC_CANCEL_GRACE_S, remaining_s / 2))


def delete_finished(
    settler: Settler, leases: dict[str, Lease], records: Iterable[dict[str, Any]], failures: list[dict[str, str]]
) -> None:
    """Delete the records Lambda would have deleted had the invocation answered (those not in ``failures``):
    it will fail instead, and Lambda deletes nothing of a failed invocation. Confirmed by the settler's close."""
    failed = {failure["itemIdentifier"] for failure in failures}
    for record in records:
        if record["messageId"] not in failed:
            settler.delete(leases[record["messageId"]])


def release_unstarted(
    processor: MessageProcessor, held: EventLeases, records: list[dict[str, Any]]
) -> list[dict[str, str]]:
    """Release ``records``, which did not start, at once (one EMF line ``released`` each: they spent a receive);
    returns their ``batchItemFailures`` entries."""
    leases = [held.leases[record["messageId"]] for record in records]
    held.settler.release_all(leases, timeout=held.time_left())
    for record, lease in zip(records, leases, strict=True):
        processor.record_released(Message.from_lambda_record(record, held.queue_url, lease))
    return [{"itemIdentifier": record["messageId"]} for record in records]


def settle_failed_invocation(
    processor: MessageProcessor,
    held: EventLeases,
    records: list[dict[str, Any]],
    failures: list[dict[str, str]],
    skipped: list[dict[str, Any]],
    hung_id: str,
) -> None:
    """Settle an invocation that will not answer, its record ``hung_id`` hung on the invocation's own thread
    (:mod:`sqslease.deadline_watch`), as :func:`sqslease.lambda_adapter.process_event` does on its way out: the
    records after it and those ``skipped`` (FIFO) released unstarted, those that finished deleted (Lambda deletes
    nothing of a failed invocation; ``failures`` and the hung one excepted), the leases' heartbeat and settler
    closed (confirmed within the time left)."""
    position = next(i for i, record in enumerate(records) if record["messageId"] == hung_id)
    unstarted = [*skipped, *records[position + 1 :]]
    if unstarted:
        logger.warning("record %s hung: releasing %d unstarted records", hung_id, len(unstarted))
    failed = [*failures, *release_unstarted(processor, held, unstarted), {"itemIdentifier": hung_id}]
    delete_finished(held.settler, held.leases, records, failed)
    processor.loop.stop()
    held.close()


def end_environment(error: RecordsHungError) -> NoReturn:
    """End this process (Lambda's execution environment) with ``HUNG_EXIT_CODE`` (3), its logs flushed: the only
    way to stop a thread. Lambda answers the invocation with ``Runtime.ExitError`` and starts a new environment."""
    logger.critical("%s", error)
    for handler in (*logging.getLogger().handlers, *logger.handlers):
        handler.flush()
    sys.stdout.flush()  # the EMF lines
    sys.stderr.flush()
    os._exit(HUNG_EXIT_CODE)
    raise error  # only where os._exit is replaced (a test)
