"""The heartbeat: extends due leases with ChangeMessageVisibilityBatch, exactly ceil(due / 10) requests a tick.

A tick never waits for a request. Each batch of up to 10 due leases is a *round* that runs on its own
thread (:mod:`sqslease.heartbeat_round`): it sends the batch, and retries the entries that failed (throttled, 5xx,
timed out) until they are extended or their lease runs out. No slow or held request delays any other lease:
requests have connect and read timeouts (``LeaseSettings.lease_request_timeout``), and a round's retries are bounded
by the slack of the leases in it.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from sqslease.heartbeat_round import HeartbeatRounds, TickStats
from sqslease.idempotency import Hold
from sqslease.idempotency_gate import IdempotencyGate
from sqslease.lease import Lease
from sqslease.lease_table import LeaseScheduler
from sqslease.retry import FatalSqsError
from sqslease.rules import SQS_MAX_BATCH_ENTRIES
from sqslease.settings import LeaseSettings

logger = logging.getLogger("sqslease")

__all__ = ["Heartbeat", "Tick", "TickStats"]

#: Rounds that may wait (in a retry backoff) at once, per request slot. Only requests hold a slot.
ROUND_THREADS_PER_REQUEST = 4
#: The retry jitter's default source, shared: seeding one per heartbeat (per Lambda invocation) reads os.urandom.
_RNG = random.Random()


class RanInline:
    """A round the tick ran on its own thread (``first_inline``): done, with its stats, as a ``Future`` would hold
    them without the condition every ``Future`` builds (a Lambda invocation with lease extension makes one)."""

    __slots__ = ("_stats",)

    def __init__(self, stats: TickStats) -> None:
        self._stats = stats

    def done(self) -> bool:
        return True

    def result(self, timeout: float | None = None) -> TickStats:
        return self._stats


@dataclass
class Tick:
    """The rounds one tick started. :meth:`wait` is for tests and benchmarks; the heartbeat never waits."""

    stats: TickStats = field(default_factory=TickStats)  # what the tick itself decided (due, limit)
    rounds: list[Future[TickStats] | RanInline] = field(default_factory=list)

    def wait(self, timeout: float | None = None) -> TickStats:
        """Wait for every round of this tick to end; their stats added to the tick's."""
        total = TickStats()
        total.add(self.stats)
        for future in self.rounds:
            total.add(future.result(timeout=timeout))
        return total


class Heartbeat(HeartbeatRounds):
    """Ticks every ``heartbeat_interval`` seconds and extends the leases that are due.

    Per-entry failures never fail a round: an invalid receipt handle marks the lease lost, the 12 h limit stops
    its extensions, throttling and transient faults are retried within the lease's slack (throttling backs off,
    at least one interval, doubling; see :func:`sqslease.retry.extension_retry_delay`). A lease whose
    extension is still failing with less than two request timeouts of slack left is logged as at risk; one
    that runs out is logged and marked lost. A fatal error (access denied, missing queue, unusable KMS key)
    is handed to ``on_fatal``.

    :param sqs: a boto3 SQS client with request timeouts and no retries of its own
        (:func:`sqslease.clients.lease_client`).
    :param queue_url: the queue the leases belong to.
    :param scheduler: the lease table.
    :param settings: lease settings (visibility timeout, threshold, interval, limits, request timeout).
    :param clock: monotonic clock in seconds (injectable for tests).
    :param sleep: ``sleep(seconds)`` between retries; returns early when the heartbeat stops. Injectable.
    :param on_fatal: called once with the :class:`FatalSqsError`. Default: log it.
    :param rng: random source of the retry jitter.
    :param idempotency: the records held with the leases: each tick moves those of its due leases to the leases'
        new ends, in one ``IdempotencyStore.extend`` (a round of its own). Default none.
    :param requests: bounds its requests in flight (``settings.max_requests_in_flight`` slots). Default: its own; the
        Lambda adapter shares one between the heartbeats of a process's invocations (one at a time).
    """

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        scheduler: LeaseScheduler,
        settings: LeaseSettings,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] | None = None,
        on_fatal: Callable[[FatalSqsError], None] | None = None,
        rng: random.Random | None = None,
        idempotency: IdempotencyGate | None = None,
        requests: threading.BoundedSemaphore | None = None,
    ) -> None:
        self.sqs = sqs
        self.idempotency = idempotency
        self.queue_url = queue_url
        self.scheduler = scheduler
        self.settings = settings
        self.clock = clock
        self._stop = threading.Event()
        self.sleep = sleep or self._stop.wait
        self.on_fatal = on_fatal
        self.rng = rng or _RNG
        self.request_timeout = settings.lease_request_timeout
        self._requests = threading.BoundedSemaphore(settings.max_requests_in_flight) if requests is None else requests
        # Created with the first round it runs: a Lambda invocation whose renewal fits one request needs none.
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._fatal: FatalSqsError | None = None
        self._fatal_lock = threading.Lock()

    @property
    def fatal(self) -> FatalSqsError | None:
        """The fatal error that stopped extensions, if any."""
        return self._fatal

    # -- one tick ---------------------------------------------------------------------------------
    def tick(self, *, first_inline: bool = False, judged: bool = False) -> Tick:
        """Take the due leases and start one round per batch of 10. Returns at once.

        :param first_inline: run the first round on the calling thread, then start the others on the pool: for
            a caller that waits for the tick anyway, so that a tick of at most 10 leases starts no thread.
            Default False.
        :param judged: each round warns if it sends its request late (:meth:`scheduled_tick`). Default False.
        """
        tick = Tick()
        if self._fatal is not None:
            return tick
        now = self.clock()
        batch: list[Lease] = []
        batches: list[list[Lease]] = []
        for lease in self.scheduler.take_due(now):
            if self.settings.max_total_lease - (now - lease.received_at) < 1:  # SQS: 12 h from receipt
                self.scheduler.stop_extending(lease)
                tick.stats.limit_reached += 1
                logger.warning("lease %s reached its maximum total time; no more extensions", lease.receipt_handle[:16])
                continue
            batch.append(lease)
            if len(batch) == SQS_MAX_BATCH_ENTRIES:
                batches.append(batch)
                batch = []
        if batch:
            batches.append(batch)
        tick.stats.due = sum(len(b) for b in batches)
        ends: list[tuple[Lease, float]] = []
        if self.idempotency is not None:  # before the rounds: a record claimed meanwhile is written to these ends
            ends = [(lease, now + self._allowed(lease, now)) for b in batches for lease in b]
            for lease, end in ends:
                lease.extending_to = end
        if first_inline and batches:
            tick.rounds.append(RanInline(self._round(batches[0], judged=judged)))
        tick.rounds += [self._pool().submit(self._round, b, judged=judged) for b in batches[first_inline:]]
        if self.idempotency is not None and ends:
            records = self.idempotency.held(ends)
            if records:
                tick.rounds.append(self._pool().submit(self._extend_records, records))
        return tick

    def scheduled_tick(self) -> Tick:
        """The heartbeat thread's :meth:`tick`: each round warns when it sends its request late, a lease in it having
        less than half the least slack a tick on time leaves one (``extension_threshold - heartbeat_interval``; see
        :meth:`sqslease.heartbeat_round.HeartbeatRounds._attempt`). Not :meth:`tick`'s: a Lambda invocation's first
        tick takes its records with whatever slack the poll left them."""
        return self.tick(judged=True)

    def _extend_records(self, records: list[tuple[Hold, float]]) -> TickStats:
        """The idempotency round: each record to its lease's new end, computed when the tick took the lease, so
        never past the end SQS grants (whose extension is sent later). A record not extended keeps its SQS lease:
        its handler runs on (logged)."""
        assert self.idempotency is not None
        stats = TickStats()
        try:
            stats.records_extended, stats.records_missed = self.idempotency.extend(records)
        except FatalSqsError as error:  # FatalStoreError: the table or the role
            self._report_fatal(error, [])
        except Exception:
            logger.exception("idempotency heartbeat round failed")
        return stats

    def _pool(self) -> ThreadPoolExecutor:
        with self._executor_lock:
            if self._executor is None:
                if self._stop.is_set():
                    raise RuntimeError("cannot schedule new futures after shutdown")  # as a shut-down pool
                self._executor = ThreadPoolExecutor(
                    self.settings.max_requests_in_flight * ROUND_THREADS_PER_REQUEST,
                    thread_name_prefix="sqslease-extend",
                )
            return self._executor

    # -- background thread ------------------------------------------------------------------------
    def start(self) -> Heartbeat:
        """Start ticking in a daemon thread (no-op when heartbeats are switched off)."""
        if self.settings.heartbeat and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="sqslease-heartbeat", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        # A fixed cadence: rounds run on their own, so neither a slow request nor throttling moves the ticks.
        interval = self.settings.heartbeat_interval
        while not self._stop.wait(interval):
            try:
                self.scheduled_tick()
            except Exception:  # a bug must not silently stop all extensions: log it and keep ticking
                logger.exception("heartbeat tick failed")

    def stop(self) -> None:
        """Stop ticking; rounds waiting to retry return at once, a request in flight ends within its timeout."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._executor_lock:
            executor = self._executor
        if executor is not None:
            executor.shutdown(wait=True)  # queued rounds see the stop and hand their leases back
