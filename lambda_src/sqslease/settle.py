"""Ending leases: batched deletes and visibility changes (release, backoff), and dead-lettering.

Every settle first takes the lease out of the heartbeat's hands (``LeaseScheduler.begin_settle``), so
no extension can land after it. Failures are logged and never lose a message: if a delete or release
cannot be done, the message reappears when its lease runs out.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from sqslease.retry import EntryOutcome, classify_error, error_code
from sqslease.rules import SQS_MAX_BATCH_ENTRIES
from sqslease.scheduler import Lease, LeaseScheduler, LeaseState

logger = logging.getLogger("sqslease")

MAX_ATTEMPTS = 3


@dataclass
class _Item:
    lease: Lease
    visibility_timeout: int | None  # None: delete
    final_state: LeaseState
    future: Future[bool]
    attempts: int = 0


class Settler:
    """Batches settles per operation: up to 10 entries a request, waiting at most ``linger`` seconds to fill.

    :param sqs: a boto3 SQS client.
    :param queue_url: the source queue.
    :param scheduler: the lease table.
    :param linger: seconds to wait for more entries before sending a partial batch. Default 0.02.
    """

    def __init__(self, sqs: Any, queue_url: str, scheduler: LeaseScheduler, linger: float = 0.02) -> None:
        self.sqs = sqs
        self.queue_url = queue_url
        self.scheduler = scheduler
        self.linger = linger
        self._deletes: queue.Queue[_Item | None] = queue.Queue()
        self._changes: queue.Queue[_Item | None] = queue.Queue()
        self._threads = [
            threading.Thread(target=self._drain, args=(self._deletes, self._send_deletes), daemon=True),
            threading.Thread(target=self._drain, args=(self._changes, self._send_changes), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # -- public operations ------------------------------------------------------------------------
    def delete(self, lease: Lease) -> Future[bool]:
        """Delete the message (handler succeeded). Resolves to True once deleted."""
        return self._submit(self._deletes, lease, None, LeaseState.DELETED)

    def change_visibility(self, lease: Lease, seconds: int) -> Future[bool]:
        """End the lease by setting the message's visibility timeout: 0 releases it now, more backs off."""
        return self._submit(self._changes, lease, int(seconds), LeaseState.RELEASED)

    def release_all(self, leases: list[Lease], timeout: float = 30) -> list[bool]:
        """Release many leases now (shutdown, deadline guard), batched; return once SQS has answered."""
        futures = [self.change_visibility(lease, 0) for lease in leases]
        return [future.result(timeout=timeout) for future in futures]

    def stop_tracking(self, lease: Lease) -> bool:
        """Lapse: stop extending and let the current lease run out. No API call."""
        if not self.scheduler.begin_settle(lease):
            return False
        self.scheduler.finish(lease, LeaseState.RELEASED)
        return True

    def close(self) -> None:
        """Send what is queued, then stop the sender threads."""
        self._deletes.put(None)
        self._changes.put(None)
        for thread in self._threads:
            thread.join()

    # -- batching ---------------------------------------------------------------------------------
    def _submit(self, q: queue.Queue[_Item | None], lease: Lease, vt: int | None, final: LeaseState) -> Future[bool]:
        future: Future[bool] = Future()
        if not self.scheduler.begin_settle(lease):
            if lease.lost:
                logger.warning("lease %s was lost before it could be settled", lease.receipt_handle[:16])
            future.set_result(False)
            return future
        q.put(_Item(lease, vt, final, future))
        return future

    def _drain(self, q: queue.Queue[_Item | None], send: Callable[[list[_Item]], None]) -> None:
        closing = False
        while not closing:
            first = q.get()
            if first is None:
                break
            batch = [first]
            deadline = time.monotonic() + self.linger
            while len(batch) < SQS_MAX_BATCH_ENTRIES:
                try:
                    item = q.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if item is None:
                    closing = True
                    break
                batch.append(item)
            self._send_with_retries(batch, send)
        # drain anything left after the close marker
        rest = []
        while not q.empty():
            item = q.get_nowait()
            if item is not None:
                rest.append(item)
        for start in range(0, len(rest), SQS_MAX_BATCH_ENTRIES):
            self._send_with_retries(rest[start : start + SQS_MAX_BATCH_ENTRIES], send)

    def _send_with_retries(self, batch: list[_Item], send: Callable[[list[_Item]], None]) -> None:
        pending = batch
        while pending:
            for item in pending:
                item.attempts += 1
            send(pending)
            pending = [item for item in pending if not item.future.done()]
            if pending:
                time.sleep(0.1 * 2 ** pending[0].attempts)

    def _send_deletes(self, batch: list[_Item]) -> None:
        entries = [{"Id": str(i), "ReceiptHandle": item.lease.receipt_handle} for i, item in enumerate(batch)]
        self._send(
            batch, "DeleteMessageBatch", lambda: self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)
        )

    def _send_changes(self, batch: list[_Item]) -> None:
        entries = [
            {"Id": str(i), "ReceiptHandle": item.lease.receipt_handle, "VisibilityTimeout": item.visibility_timeout}
            for i, item in enumerate(batch)
        ]
        self._send(
            batch,
            "ChangeMessageVisibilityBatch",
            lambda: self.sqs.change_message_visibility_batch(QueueUrl=self.queue_url, Entries=entries),
        )

    def _send(self, batch: list[_Item], operation: str, call: Callable[[], dict]) -> None:
        try:
            response = call()
        except Exception as error:
            code, message = error_code(error)
            for item in batch:
                self._failed(item, operation, classify_error(code, message), f"{code}: {message}")
            return
        for success in response.get("Successful", []):
            item = batch[int(success["Id"])]
            self.scheduler.finish(item.lease, item.final_state)
            item.future.set_result(True)
        for failure in response.get("Failed", []):
            item = batch[int(failure["Id"])]
            outcome = classify_error(failure.get("Code", ""), failure.get("Message", ""))
            self._failed(item, operation, outcome, f"{failure.get('Code')}: {failure.get('Message')}")

    def _failed(self, item: _Item, operation: str, outcome: EntryOutcome, reason: str) -> None:
        if outcome is EntryOutcome.LOST:
            logger.warning("%s of %s: lease lost (%s)", operation, item.lease.receipt_handle[:16], reason)
            self.scheduler.lost(item.lease)
            item.future.set_result(False)
        elif item.attempts >= MAX_ATTEMPTS:
            logger.error(
                "%s of %s failed %d times (%s); the message reappears when its lease runs out",
                operation,
                item.lease.receipt_handle[:16],
                item.attempts,
                reason,
            )
            self.scheduler.abort_settle(item.lease)
            item.future.set_result(False)
        # else: left pending; _send_with_retries sends it again after a backoff
