"""The settler's sender threads: one per operation (deletes, visibility changes), each sending its queued settles
in batches of up to 10 (:mod:`sqslease.settle_queue`: when it wakes), retrying what SQS refused and never repeating a
visibility change that may have landed (see :mod:`sqslease.settle`).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any

from sqslease.lease import LeaseState
from sqslease.lease_table import LeaseScheduler
from sqslease.retry import EntryOutcome, FatalSqsError, classify_error, classify_exception, may_have_landed
from sqslease.rules import SQS_MAX_BATCH_ENTRIES
from sqslease.settle_queue import SettleItem, SettleQueue

__all__ = ["SettleItem", "SettleSender"]

logger = logging.getLogger("sqslease")

RETRY_BASE_S = 0.05
RETRY_MAX_S = 1.0
_LOST = LeaseState.LOST  # looked up once: read for every delete a batch
POLL_S = 0.01  # how often a change waiting for an extension in flight looks again


class SettleSender:
    """What a sender thread does: the base class of :class:`sqslease.settle.Settler`, which sets every attribute
    declared here."""

    sqs: Any
    queue_url: str
    scheduler: LeaseScheduler
    linger: float
    on_fatal: Callable[[FatalSqsError], None] | None
    clock: Callable[[], float]
    before_deletes: Callable[[], None] | None
    _close_by: float | None

    # -- the sender loop --------------------------------------------------------------------------
    def _loop(self, q: SettleQueue, operation: str) -> None:
        backlog: list[SettleItem] = []  # waiting for an extension in flight, or for a retry backoff
        closing = False
        while True:
            # Sleep until a settle comes when idle; with a backlog, look again every POLL_S (backoffs, extensions
            # in flight); once closing, only take what is left.
            if closing:
                items = q.take_rest()
            else:
                items, closing = q.next(POLL_S if backlog else None)
            backlog += items
            backlog = self._send_ready(backlog, operation)
            if closing and not backlog and q.idle():  # a batch a handler sends meanwhile is waited for
                return
            if closing and self._close_by is not None and self.clock() >= self._close_by:
                self._give_up(backlog + q.take_rest(), operation)
                return
            if closing:  # nothing wakes it now: a backoff, an extension or a handler's batch in flight waited out
                time.sleep(POLL_S)

    def _send_ready(self, items: list[SettleItem], operation: str) -> list[SettleItem]:
        """Send the ``items`` ready now, in batches of 10; returns those to look at again (a retry's backoff, an
        extension in flight)."""
        if operation == "DeleteMessageBatch":
            if self.before_deletes is not None:
                self.before_deletes()  # the lines held for these deletes first: none is written after its delete
            sendable, waiting = self._deletes_ready(items)
        else:
            sendable, waiting = self._changes_ready(items)
        for start in range(0, len(sendable), SQS_MAX_BATCH_ENTRIES):
            waiting += self._send(sendable[start : start + SQS_MAX_BATCH_ENTRIES], operation)
        return waiting

    def _deletes_ready(self, items: list[SettleItem]) -> tuple[list[SettleItem], list[SettleItem]]:
        """The deletes to send now, and those whose retry's backoff still runs. A delete is sent while its lease
        is held (the heartbeat holds it meanwhile); one whose lease was lost is dropped. One loop with no call a
        delete: a handler runs it for each batch it fills (``bench/runtime_bench.py``)."""
        now = self.clock()
        sendable: list[SettleItem] = []
        waiting: list[SettleItem] = []
        for item in items:
            if item.future.done():
                continue
            lease = item.lease
            if lease.state is _LOST:
                # SQS also rejects the handle once an earlier, timed-out attempt of this delete has landed.
                logger.warning(
                    "delete of %s unconfirmed and its receipt handle now rejected: deleted by an attempt that timed "
                    "out, or the message will be delivered again",
                    lease.receipt_handle[:16],
                )
                item.future.set_result(False)
            elif item.not_before <= now:
                sendable.append(item)
            else:
                waiting.append(item)
        return sendable, waiting

    def _changes_ready(self, items: list[SettleItem]) -> tuple[list[SettleItem], list[SettleItem]]:
        """The visibility changes to send now, and those to look at again: an extension still in flight, or a
        retry's backoff."""
        now = self.clock()
        sendable: list[SettleItem] = []
        waiting: list[SettleItem] = []
        for item in items:
            ready = self._change_ready(item)
            if ready is False:
                continue
            (sendable if ready and item.not_before <= now else waiting).append(item)
        return sendable, waiting

    def _change_ready(self, item: SettleItem) -> bool | None:
        """True: send now (or after its backoff); None: an extension is still in flight; False: dropped."""
        lease = item.lease
        if item.future.done():
            return False
        ready = self.scheduler.change_ready(lease)
        if ready is False:
            logger.warning("lease %s was lost before its visibility change", lease.receipt_handle[:16])
            item.future.set_result(False)
        elif ready and self.clock() >= lease.deadline:
            # SQS may have handed the message out again since: a change with this stale receipt handle could end the
            # new delivery's lease. The message is visible anyway.
            logger.warning("lease %s ran out before its visibility change: not sent", lease.receipt_handle[:16])
            self.scheduler.lapsed(lease)
            item.future.set_result(False)
            return False
        return ready

    def _send(self, batch: list[SettleItem], operation: str) -> list[SettleItem]:
        """Send one batch; return the items to retry (with their backoff set)."""
        for item in batch:
            item.attempts += 1
        try:
            entries: list[dict[str, object]]
            if operation == "DeleteMessageBatch":
                entries = [{"Id": str(i), "ReceiptHandle": item.lease.receipt_handle} for i, item in enumerate(batch)]
                response = self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)
            else:
                entries = [
                    {
                        "Id": str(i),
                        "ReceiptHandle": item.lease.receipt_handle,
                        "VisibilityTimeout": item.visibility_timeout,
                    }
                    for i, item in enumerate(batch)
                ]
                response = self.sqs.change_message_visibility_batch(QueueUrl=self.queue_url, Entries=entries)
        except Exception as error:
            outcome, code, message = classify_exception(error)
            if operation != "DeleteMessageBatch" and outcome is EntryOutcome.RETRY and may_have_landed(error):
                for item in batch:
                    self._unconfirmed(item, code)
                return []
            return [item for item in batch if self._failed(item, operation, outcome, code, message)]
        retry = []
        answered: set[int] = set()
        confirmed = [int(success["Id"]) for success in response.get("Successful", [])]
        self.scheduler.finish_all([(batch[i].lease, batch[i].final_state) for i in confirmed])  # one lock, not 10
        for index in confirmed:
            answered.add(index)
            batch[index].future.set_result(True)
        for failure in response.get("Failed", []):
            index = int(failure["Id"])
            answered.add(index)
            item = batch[index]
            code, message = failure.get("Code", ""), failure.get("Message", "")
            if self._failed(item, operation, classify_error(code, message), code, message):
                retry.append(item)
        for index, item in enumerate(batch):
            if index in answered:
                continue
            if operation != "DeleteMessageBatch":
                self._unconfirmed(item, "no answer for the entry")
            elif self._failed(item, operation, EntryOutcome.RETRY, "missing", "no answer"):
                retry.append(item)
        return retry

    def _unconfirmed(self, item: SettleItem, reason: str) -> None:
        """A visibility change that may have landed: never repeat it (see the module docstring)."""
        logger.warning(
            "visibility change of %s to %d s unconfirmed (%s); not sent again, as a repeat could land after another "
            "consumer received the message: it is visible again when its lease ends, at the latest",
            item.lease.receipt_handle[:16],
            item.visibility_timeout,
            reason,
        )
        self.scheduler.abort_settle(item.lease)
        item.future.set_result(False)

    def _failed(self, item: SettleItem, operation: str, outcome: EntryOutcome, code: str, message: str) -> bool:
        """Handle one failed entry; True if it should be retried."""
        lease = item.lease
        if outcome is EntryOutcome.FATAL:
            item.future.set_result(False)
            error = FatalSqsError(operation, code, message)
            if self.on_fatal is not None:
                self.on_fatal(error)
            else:
                logger.critical("%s", error)
            return False
        if outcome is EntryOutcome.LOST:
            logger.warning("%s of %s: lease lost (%s: %s)", operation, lease.receipt_handle[:16], code, message)
            self.scheduler.lost(lease)
            item.future.set_result(False)
            return False
        if item.visibility_timeout is not None and self.clock() >= lease.deadline:
            # The change never landed, but the lease ran out: the message is visible now anyway.
            logger.warning(
                "%s of %s failed until its lease ran out (%s); the message is visible again",
                operation,
                lease.receipt_handle[:16],
                code,
            )
            self.scheduler.abort_settle(lease)
            item.future.set_result(False)
            return False
        delay = min(RETRY_MAX_S, RETRY_BASE_S * 2 ** (item.attempts - 1)) * random.uniform(1.0, 1.25)
        item.not_before = self.clock() + delay
        log = logger.warning if item.attempts % 5 == 0 else logger.info
        log(
            "%s of %s failed (%s: %s), attempt %d; retrying",
            operation,
            lease.receipt_handle[:16],
            code,
            message,
            item.attempts,
        )
        return True

    def _give_up(self, items: list[SettleItem], operation: str) -> None:
        if operation == "DeleteMessageBatch" and self.before_deletes is not None:
            self.before_deletes()
        for item in items:
            if item.future.done():
                continue
            logger.error(
                "%s of %s not confirmed before shutdown; the message will be delivered again when its lease ends",
                operation,
                item.lease.receipt_handle[:16],
            )
            self.scheduler.abort_settle(item.lease)
            item.future.set_result(False)
