"""The heartbeat: extends due leases with ChangeMessageVisibilityBatch, exactly ceil(due / 10) requests a round."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqslease.retry import EntryOutcome, classify_error, error_code
from sqslease.rules import SQS_MAX_BATCH_ENTRIES
from sqslease.scheduler import Lease, LeaseScheduler
from sqslease.settings import LeaseSettings

logger = logging.getLogger("sqslease")


@dataclass
class TickStats:
    """What one heartbeat round did."""

    due: int = 0
    requests: int = 0
    extended: int = 0
    lost: int = 0
    retried: int = 0
    limit_reached: int = 0

    def add(self, other: TickStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class Heartbeat:
    """Ticks every ``heartbeat_interval`` seconds and extends the leases that are due.

    Per-entry failures never fail the round: an invalid receipt handle marks the lease lost, the 12 h
    limit stops its extensions, throttling and transient faults retry on a later (jittered) tick while the
    lease has slack.

    :param sqs: a boto3 SQS client.
    :param queue_url: the queue the leases belong to.
    :param scheduler: the lease table.
    :param settings: lease settings (visibility timeout, threshold, interval, limits).
    :param clock: monotonic clock in seconds (injectable for tests).
    """

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        scheduler: LeaseScheduler,
        settings: LeaseSettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sqs = sqs
        self.queue_url = queue_url
        self.scheduler = scheduler
        self.settings = settings
        self.clock = clock
        self._executor = ThreadPoolExecutor(settings.max_requests_in_flight, thread_name_prefix="sqslease-extend")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._throttled = False

    # -- one round --------------------------------------------------------------------------------
    def tick(self) -> TickStats:
        stats = TickStats()
        now = self.clock()
        batch: list[tuple[Lease, int]] = []
        batches: list[list[tuple[Lease, int]]] = []
        for lease in self.scheduler.take_due(now):
            # Never ask beyond the maximum total lease (SQS: 12 h from receipt).
            allowed = int(
                min(self.settings.visibility_timeout, self.settings.max_total_lease - (now - lease.received_at))
            )
            if allowed < 1:
                self.scheduler.stop_extending(lease)
                stats.limit_reached += 1
                logger.warning("lease %s reached its maximum total time; no more extensions", lease.receipt_handle[:16])
                continue
            batch.append((lease, allowed))
            if len(batch) == SQS_MAX_BATCH_ENTRIES:
                batches.append(batch)
                batch = []
        if batch:
            batches.append(batch)
        stats.due = sum(len(b) for b in batches)
        stats.requests = len(batches)
        if len(batches) == 1:
            stats.add(self._send(batches[0]))
        else:
            for result in self._executor.map(self._send, batches):
                stats.add(result)
        self._throttled = stats.retried > 0
        return stats

    def _send(self, batch: list[tuple[Lease, int]]) -> TickStats:
        stats = TickStats()
        entries = [
            {"Id": str(i), "ReceiptHandle": lease.receipt_handle, "VisibilityTimeout": vt}
            for i, (lease, vt) in enumerate(batch)  # positional ids: MessageIds can repeat in a batch
        ]
        sent_at = self.clock()
        try:
            response = self.sqs.change_message_visibility_batch(QueueUrl=self.queue_url, Entries=entries)
        except Exception as error:  # the whole request failed: classify once for every entry
            code, message = error_code(error)
            logger.warning(
                "ChangeMessageVisibilityBatch failed (%s: %s); %d leases affected", code, message, len(batch)
            )
            outcome = classify_error(code, message)
            for lease, _ in batch:
                self._apply_failure(lease, outcome, stats)
            return stats
        answered: set[int] = set()
        extended = []
        for success in response.get("Successful", []):
            index = int(success["Id"])
            answered.add(index)
            extended.append(batch[index])
        self.scheduler.extended_all(extended, sent_at)
        stats.extended += len(extended)
        for failure in response.get("Failed", []):
            index = int(failure["Id"])
            answered.add(index)
            lease, _ = batch[index]
            outcome = classify_error(failure.get("Code", ""), failure.get("Message", ""))
            if outcome is not EntryOutcome.RETRY:
                logger.warning(
                    "extension of %s failed: %s %s",
                    lease.receipt_handle[:16],
                    failure.get("Code"),
                    failure.get("Message"),
                )
            self._apply_failure(lease, outcome, stats)
        for index, (lease, _) in enumerate(batch):
            if index not in answered:  # not in the response at all: treat as transient
                self._apply_failure(lease, EntryOutcome.RETRY, stats)
        return stats

    def _apply_failure(self, lease: Lease, outcome: EntryOutcome, stats: TickStats) -> None:
        if outcome is EntryOutcome.LOST:
            self.scheduler.lost(lease)
            stats.lost += 1
        elif outcome is EntryOutcome.LIMIT:
            self.scheduler.stop_extending(lease)
            stats.limit_reached += 1
        elif self.scheduler.retry_later(lease, self.clock()):
            stats.retried += 1
        else:
            logger.error(
                "lease %s ran out while extensions were failing; the message may be redelivered",
                lease.receipt_handle[:16],
            )
            stats.lost += 1

    # -- background thread ------------------------------------------------------------------------
    def start(self) -> Heartbeat:
        """Start ticking in a daemon thread (no-op when heartbeats are switched off)."""
        if self.settings.heartbeat and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="sqslease-heartbeat", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        interval = self.settings.heartbeat_interval
        while not self._stop.wait(interval * (random.uniform(0.5, 1.0) if self._throttled else 1.0)):
            try:
                self.tick()
            except Exception:  # a bug must not silently stop all extensions: log it and keep ticking
                logger.exception("heartbeat tick failed")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._executor.shutdown(wait=True)
