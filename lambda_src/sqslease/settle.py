"""Ending leases: batched deletes and visibility changes (release, backoff).

A lease is held until SQS confirms its delete or release:

- A delete leaves the lease with the heartbeat, which keeps extending it while the delete is queued, in flight
  or being retried. A failed delete is retried (backoff 0.05 s doubling, at most 1 s) as long as the lease is
  held; only a lost lease or the end of :meth:`Settler.close`'s time gives it up (logged: the message will be
  delivered again).
- A visibility change first takes the lease from the heartbeat (no late extension can overwrite a release or a
  backoff delay). If an extension is in flight it waits for it on the sender thread, never in a handler.
  Until the change is confirmed the lease keeps its last deadline; if that passes, the message is visible
  anyway, which is what a release wants. A change is sent again only after SQS refused it (throttling, an
  entry's failure): once an attempt may have landed (a timeout, a dropped connection, a 5xx), another
  consumer may hold the message, and a repeat with this receipt handle would make it visible (or hide it)
  under that consumer. The message then reappears when this lease ends, at the latest.

Nothing here waits without a bound: requests have timeouts (the lease client), and :meth:`Settler.close` has one.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqslease.lease import Lease, LeaseState
from sqslease.lease_table import LeaseScheduler
from sqslease.retry import EntryOutcome, FatalSqsError, classify_error, classify_exception, may_have_landed
from sqslease.rules import SQS_MAX_BATCH_ENTRIES
from sqslease.settle_future import SettleFuture

logger = logging.getLogger("sqslease")

RETRY_BASE_S = 0.05
RETRY_MAX_S = 1.0
POLL_S = 0.01  # how often a change waiting for an extension in flight looks again


@dataclass(slots=True, eq=False)
class _Item:
    lease: Lease
    visibility_timeout: int | None  # None: delete
    final_state: LeaseState
    future: SettleFuture
    attempts: int = 0
    not_before: float = 0.0


_CLOSE: Any = object()


class Settler:
    """Batches settles per operation: up to 10 entries a request, waiting at most ``linger`` seconds to fill.

    :param sqs: a boto3 SQS client (the lease client: short timeouts, no botocore retries).
    :param queue_url: the source queue.
    :param scheduler: the lease table.
    :param linger: seconds to wait for more entries before sending a partial batch. Default 0.02.
    :param on_fatal: called with a :class:`FatalSqsError` (access denied, missing queue, KMS). Default: log it.
    :param clock: monotonic clock in seconds.
    """

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        scheduler: LeaseScheduler,
        linger: float = 0.02,
        on_fatal: Callable[[FatalSqsError], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sqs = sqs
        self.queue_url = queue_url
        self.scheduler = scheduler
        self.linger = linger
        self.on_fatal = on_fatal
        self.clock = clock
        self._close_by: float | None = None
        # Each sender's queue and thread start with its first settle: a Lambda invocation whose records all
        # succeed settles nothing (Lambda deletes them) and so starts none.
        self._queues: dict[str, queue.SimpleQueue[_Item]] = {}
        #: Set once a sender's queue holds a full batch: its sender then sends without waiting out ``linger``.
        self._full: dict[str, threading.Event] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._threads_lock = threading.Lock()
        self._closed = False

    # -- public operations ------------------------------------------------------------------------
    def delete(self, lease: Lease) -> SettleFuture:
        """Delete the message (handler succeeded). Resolves to True once SQS confirmed the delete."""
        future = SettleFuture()
        if not self.scheduler.begin_delete(lease):
            self._refused(lease, future)
            return future
        self._put("DeleteMessageBatch", _Item(lease, None, LeaseState.DELETED, future))
        return future

    def change_visibility(self, lease: Lease, seconds: int) -> SettleFuture:
        """End the lease by setting the message's visibility timeout: 0 releases it now, more backs off."""
        future = SettleFuture()
        if not self.scheduler.begin_change(lease):
            self._refused(lease, future)
            return future
        self._put("ChangeMessageVisibilityBatch", _Item(lease, int(seconds), LeaseState.RELEASED, future))
        return future

    def release_all(self, leases: list[Lease], timeout: float = 30) -> list[bool]:
        """Release many leases now (shutdown, deadline guard), batched; return once SQS answered or ``timeout``."""
        futures = [self.change_visibility(lease, 0) for lease in leases]
        deadline = time.monotonic() + timeout
        results = []
        for future in futures:
            try:
                results.append(future.result(timeout=max(0.0, deadline - time.monotonic())))
            except TimeoutError:
                results.append(False)
        return results

    def stop_tracking(self, lease: Lease) -> bool:
        """Lapse: stop extending and let the current lease run out. No API call."""
        if not self.scheduler.begin_change(lease):
            return False
        self.scheduler.finish(lease, LeaseState.RELEASED)  # an extension in flight may still land: harmless
        return True

    def close(self, timeout: float = 30) -> None:
        """Send what is queued (retrying failures) for at most ``timeout`` seconds, then stop the sender threads."""
        self._close_by = self.clock() + timeout
        with self._threads_lock:
            self._closed = True  # as before, nothing queued after close starts a sender
            started = dict(self._threads)
        for operation, thread in started.items():
            self._queues[operation].put(_CLOSE)
            self._full[operation].set()  # a sender lingering for a batch sends it now
            thread.join()

    def _put(self, operation: str, item: _Item) -> None:
        q = self._sender(operation)
        q.put(item)
        if q.qsize() >= SQS_MAX_BATCH_ENTRIES:
            self._full[operation].set()

    def _sender(self, operation: str) -> queue.SimpleQueue[_Item]:
        """The queue of ``operation``'s sender, its thread started unless it runs (or the settler is closed)."""
        q = self._queues.get(operation)
        if q is not None:
            return q
        with self._threads_lock:
            q = self._queues.get(operation)
            if q is None:
                self._full[operation] = threading.Event()
                q = self._queues[operation] = queue.SimpleQueue()
                if not self._closed:  # as before: nothing queued after close is sent
                    name = "sqslease-delete" if operation == "DeleteMessageBatch" else "sqslease-release"
                    thread = threading.Thread(target=self._loop, args=(q, operation), name=name, daemon=True)
                    thread.start()
                    self._threads[operation] = thread
            return q

    def _refused(self, lease: Lease, future: SettleFuture) -> None:
        if lease.lost:
            logger.warning("lease %s was lost before it could be settled", lease.receipt_handle[:16])
        future.set_result(False)

    # -- the sender loop --------------------------------------------------------------------------
    def _loop(self, q: queue.SimpleQueue[_Item], operation: str) -> None:
        backlog: list[_Item] = []  # waiting for an extension in flight, or for a retry backoff
        closing = False
        while True:
            # Block for new work when idle; with a backlog, look again every POLL_S (backoffs, extensions in flight).
            wait = POLL_S if backlog else (0 if closing else None)
            closing = self._collect(q, self._full[operation], backlog, wait) or closing
            now = self.clock()
            sendable: list[_Item] = []
            waiting: list[_Item] = []
            for item in backlog:
                ready = self._ready(item, operation)
                if ready is False:
                    continue
                (sendable if ready and item.not_before <= now else waiting).append(item)
            backlog = waiting
            for start in range(0, len(sendable), SQS_MAX_BATCH_ENTRIES):
                backlog += self._send(sendable[start : start + SQS_MAX_BATCH_ENTRIES], operation)
            if closing and not backlog and q.empty():
                return
            if closing and self._close_by is not None and self.clock() >= self._close_by:
                self._give_up(backlog + self._take_rest(q), operation)
                return

    def _collect(
        self, q: queue.SimpleQueue[_Item], full: threading.Event, backlog: list[_Item], wait: float | None
    ) -> bool:
        """Move queued items into ``backlog``: block up to ``wait`` for the first, then up to ``linger`` for a full
        batch, woken once (by ``full``) rather than by every item: a wake per message was a thread switch per
        message. Returns True when the close marker was seen."""
        try:
            first = q.get(timeout=wait) if wait != 0 else q.get_nowait()
        except queue.Empty:
            return False
        if first is _CLOSE:
            return True
        backlog.append(first)
        if q.qsize() < SQS_MAX_BATCH_ENTRIES - 1:
            full.wait(self.linger)
        full.clear()  # a batch filled after this is sent early, at worst
        for _ in range(SQS_MAX_BATCH_ENTRIES - 1):
            try:
                item = q.get_nowait()
            except queue.Empty:
                return False
            if item is _CLOSE:
                return True
            backlog.append(item)
        return False

    def _take_rest(self, q: queue.SimpleQueue[_Item]) -> list[_Item]:
        rest: list[_Item] = []
        while True:
            try:
                item = q.get_nowait()
            except queue.Empty:
                return rest
            if item is not _CLOSE:
                rest.append(item)

    def _ready(self, item: _Item, operation: str) -> bool | None:
        """True: send now (or after its backoff); None: an extension is still in flight; False: dropped."""
        lease = item.lease
        if item.future.done():
            return False
        if item.visibility_timeout is None:  # delete: the heartbeat holds the lease meanwhile
            if lease.lost:
                # SQS also rejects the handle once an earlier, timed-out attempt of this delete has landed.
                logger.warning(
                    "delete of %s unconfirmed and its receipt handle now rejected: deleted by an attempt that timed "
                    "out, or the message will be delivered again",
                    lease.receipt_handle[:16],
                )
                item.future.set_result(False)
                return False
            return True
        ready = self.scheduler.change_ready(lease)
        if ready is False:
            logger.warning("lease %s was lost before its visibility change", lease.receipt_handle[:16])
            item.future.set_result(False)
        return ready

    def _send(self, batch: list[_Item], operation: str) -> list[_Item]:
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

    def _unconfirmed(self, item: _Item, reason: str) -> None:
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

    def _failed(self, item: _Item, operation: str, outcome: EntryOutcome, code: str, message: str) -> bool:
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

    def _give_up(self, items: list[_Item], operation: str) -> None:
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
