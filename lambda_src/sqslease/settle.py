"""Ending leases: batched deletes and visibility changes (release, backoff).

A lease is held until SQS confirms its delete or release:

- A delete leaves the lease with the heartbeat, which keeps extending it while the delete is queued, in flight
  or being retried. A failed delete is retried (backoff 0.05 s doubling, at most 1 s, each with up to 25 % added)
  as long as the lease is held; only a lost lease or the end of :meth:`Settler.close`'s time gives it up (logged:
  the message will be delivered again).
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
import threading
import time
from collections.abc import Callable
from typing import Any

from sqslease.lease import Lease, LeaseState
from sqslease.lease_table import LeaseScheduler
from sqslease.retry import FatalSqsError
from sqslease.settle_future import SettleFuture
from sqslease.settle_queue import SettleItem, SettleQueue
from sqslease.settle_sender import SettleSender

logger = logging.getLogger("sqslease")


class Settler(SettleSender):
    """Batches settles per operation: up to 10 entries a request, waiting at most ``linger`` seconds to fill. A
    full batch of deletes is sent by the thread that queued its tenth (a handler), without a wake of the sender
    thread (:mod:`sqslease.settle_queue`).

    :param sqs: a boto3 SQS client (the lease client: short timeouts, no botocore retries).
    :param queue_url: the source queue.
    :param scheduler: the lease table.
    :param linger: seconds to wait for more entries before sending a partial batch. Default 0.02.
    :param on_fatal: called with a :class:`FatalSqsError` (access denied, missing queue, KMS). Default: log it.
    :param clock: monotonic clock in seconds.
    :param before_deletes: called before the deletes of a batch are sent (or given up): the worker writes the EMF
        lines it held for them (:meth:`sqslease.emf.EmfLogger.flush`), so that a message's line is never written
        after its delete. Default none.
    """

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        scheduler: LeaseScheduler,
        linger: float = 0.02,
        on_fatal: Callable[[FatalSqsError], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        before_deletes: Callable[[], None] | None = None,
    ) -> None:
        self.sqs = sqs
        self.before_deletes = before_deletes
        self.queue_url = queue_url
        self.scheduler = scheduler
        self.linger = linger
        self.on_fatal = on_fatal
        self.clock = clock
        self._close_by: float | None = None
        # Each sender's queue and thread start with its first settle: a Lambda invocation whose records all
        # succeed settles nothing (Lambda deletes them) and so starts none.
        self._queues: dict[str, SettleQueue] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._threads_lock = threading.Lock()
        self._closed = False

    # -- public operations ------------------------------------------------------------------------
    def delete(self, lease: Lease, future: SettleFuture | None = None) -> SettleFuture:
        """Delete the message (handler succeeded). Resolves to True once SQS confirmed the delete.

        :param future: the future to resolve (one that acts on its result: a payload's deletion,
            :class:`sqslease.payload_pointer.PayloadDeletion`). Default: a new one.
        """
        future = future or SettleFuture()
        if not self.scheduler.begin_delete(lease):
            self._refused(lease, future)
            return future
        self._put("DeleteMessageBatch", SettleItem(lease, None, LeaseState.DELETED, future))
        return future

    def change_visibility(self, lease: Lease, seconds: int) -> SettleFuture:
        """End the lease by setting the message's visibility timeout: 0 releases it now, more backs off."""
        future = SettleFuture()
        if not self.scheduler.begin_change(lease):
            self._refused(lease, future)
            return future
        self._put("ChangeMessageVisibilityBatch", SettleItem(lease, int(seconds), LeaseState.RELEASED, future))
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
        with self._threads_lock:
            self._closed = True  # from now on a settle queued starts no sender: it is never sent
            if not self._threads:  # none started (an all-successful Lambda invocation): nothing to send or wait for
                return
            started = dict(self._threads)
        self._close_by = self.clock() + timeout  # before their queues close: a sender reads it only once closing
        for operation, thread in started.items():
            self._queues[operation].close()  # a sender lingering for a batch sends it now
            thread.join()

    def _put(self, operation: str, item: SettleItem) -> None:
        q = self._sender(operation)
        batch = q.put(item)
        if batch:  # it completed a full batch of deletes: sent here, what SQS refused retried by the sender
            try:
                for again in self._send_ready(batch, operation):
                    q.put(again, take=False)
            finally:
                q.done_sending()  # after the retries are queued: a closing sender waits for both

    def _sender(self, operation: str) -> SettleQueue:
        """The queue of ``operation``'s sender, its thread started unless it runs (or the settler is closed)."""
        q = self._queues.get(operation)
        if q is not None:
            return q
        with self._threads_lock:
            q = self._queues.get(operation)
            if q is None:
                # After close nothing queued is sent (see close): no thread, and no batch sent by a caller either.
                takes_full = operation == "DeleteMessageBatch" and not self._closed
                q = self._queues[operation] = SettleQueue(self.linger, takes_full)
                if not self._closed:
                    name = "sqslease-delete" if operation == "DeleteMessageBatch" else "sqslease-release"
                    thread = threading.Thread(target=self._loop, args=(q, operation), name=name, daemon=True)
                    thread.start()
                    self._threads[operation] = thread
            return q

    def _refused(self, lease: Lease, future: SettleFuture) -> None:
        if self.before_deletes is not None:  # a line held for a delete refused here has no batch to go with
            self.before_deletes()
        if lease.lost:
            logger.warning("lease %s was lost before it could be settled", lease.receipt_handle[:16])
        future.set_result(False)
