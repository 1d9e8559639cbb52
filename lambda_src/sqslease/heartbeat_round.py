"""One heartbeat round: a batch of up to 10 due leases, extended with one ChangeMessageVisibilityBatch, and the
entries that failed (throttled, 5xx, timed out) retried until they are extended or their lease runs out.

A round runs on its own thread (:class:`sqslease.heartbeat.Heartbeat` starts one per batch and never waits for it),
so no slow or held request delays any other lease: requests have connect and read timeouts
(``LeaseSettings.lease_request_timeout``), and a round's retries are bounded by the slack of the leases in it.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqslease.late_extension import STARVED, log_answered_late, warn_if_late
from sqslease.lease import DELETING, Lease
from sqslease.lease_table import LeaseScheduler
from sqslease.retry import (
    TIMEOUT_ERRORS,
    EntryOutcome,
    FatalSqsError,
    classify_error,
    classify_exception,
    extension_retry_delay,
)
from sqslease.retry import is_throttling as _is_throttling
from sqslease.settings import LeaseSettings

logger = logging.getLogger("sqslease")

#: Below this much slack no request can land in time: the lease is given up (logged).
MIN_SLACK_S = 0.02


@dataclass
class TickStats:
    """What one heartbeat round (or tick: the sum of its rounds) did. Counts of leases, and of requests."""

    due: int = 0
    requests: int = 0
    extended: int = 0
    lost: int = 0
    retried: int = 0  # entries sent again after a failed attempt
    limit_reached: int = 0
    throttled: int = 0  # requests or entries answered with throttling
    records_extended: int = 0  # idempotency records moved with their leases
    records_missed: int = 0  # idempotency records not extended (lost or unavailable)

    def add(self, other: TickStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Answer:
    """What SQS answered a ChangeMessageVisibilityBatch its caller sent at ``sent_at`` (monotonic seconds), asking
    ``vts`` seconds of each entry: its ``response``, or what the call raised."""

    sent_at: float
    vts: list[int]
    response: dict[str, Any] | Exception


def allowed_visibility(settings: LeaseSettings, received_at: float, now: float) -> int:
    """The visibility timeout, in seconds, an extension sent at ``now`` asks for a lease received at ``received_at``
    (monotonic seconds): ``settings.visibility_timeout``, at most what is left of ``max_total_lease`` (SQS: 12 h from
    receipt), never below 0."""
    return max(int(min(settings.visibility_timeout, settings.max_total_lease - (now - received_at))), 0)


class HeartbeatRounds:
    """What a heartbeat round does: the base class of :class:`sqslease.heartbeat.Heartbeat`, which sets every
    attribute declared here."""

    sqs: Any
    queue_url: str
    scheduler: LeaseScheduler
    settings: LeaseSettings
    clock: Callable[[], float]
    sleep: Callable[[float], object]
    on_fatal: Callable[[FatalSqsError], None] | None
    rng: random.Random
    request_timeout: float
    _requests: threading.BoundedSemaphore
    _stop: threading.Event
    _fatal: FatalSqsError | None
    _fatal_lock: threading.Lock

    def _allowed(self, lease: Lease, now: float) -> int:
        """The visibility timeout an extension sent at ``now`` asks for: at most the 12 h from receipt."""
        return allowed_visibility(self.settings, lease.received_at, now)

    # -- one round: a batch of up to 10, retried within its slack ----------------------------------
    def _round(self, batch: list[Lease], answer: Answer | None = None, judged: bool = False) -> TickStats:
        """``judged``: its first request warns if sent late (see :meth:`_attempt`)."""
        stats = TickStats()
        try:
            self._run_round(batch, stats, answer, judged)
        except Exception:  # a bug must not leave leases stuck in EXTENDING: hand them back, log it
            logger.exception("heartbeat round failed")
            for lease in batch:
                self.scheduler.end_round(lease)
        return stats

    def answered_round(self, batch: list[Lease], answer: Answer) -> TickStats:
        """The round of ``batch`` (its leases EXTENDING) whose first request its caller sent: from that request's
        ``answer`` on, as if the round had sent it (retried, lost, reported fatal alike). The Lambda adapter's renewal
        at the start (:mod:`sqslease.renewal`)."""
        return self._round(batch, answer)

    def _run_round(
        self, pending: list[Lease], stats: TickStats, answer: Answer | None = None, judged: bool = False
    ) -> None:
        attempt = 0
        at_risk_logged = False
        while True:
            if answer is not None:  # its first request was sent by the caller
                pending, throttled, timed_out = self._first_answer(pending, answer, stats)
                answer = None
            else:
                # A lease a visibility change now waits for, or one that ended, needs no more extension.
                for lease in pending:
                    if not self.scheduler.wants_extension(lease):
                        self.scheduler.end_round(lease)
                pending = [lease for lease in pending if self.scheduler.wants_extension(lease)]
                if not pending or self._stop.is_set() or self._fatal is not None:
                    for lease in pending:
                        self.scheduler.end_round(lease)
                    return
                pending, throttled, timed_out = self._attempt(pending, stats, judged and attempt == 0)
            if not pending:
                return
            attempt += 1
            stats.retried += len(pending)
            now = self.clock()
            slack = min(lease.deadline for lease in pending) - now
            if slack <= MIN_SLACK_S:
                for lease in pending:
                    if self.scheduler.lapsed(lease):
                        stats.lost += 1
                        logger.error(
                            "lease %s ran out after %d failed extension attempts; the message may be delivered "
                            "to another consumer while its handler still runs",
                            lease.receipt_handle[:16],
                            attempt,
                        )
                return
            if not at_risk_logged and slack < 2 * self.request_timeout:
                at_risk_logged = True
                logger.warning(
                    "%d leases at risk: extension failing (attempt %d%s), %.2f s left before they lapse",
                    len(pending),
                    attempt,
                    ", throttled" if throttled else "",
                    slack,
                )
            if not timed_out:  # a timed-out attempt waited a request timeout already
                self.sleep(
                    extension_retry_delay(
                        attempt, throttled, self.settings.heartbeat_interval, slack, self.request_timeout, self.rng
                    )
                )

    def _attempt(self, batch: list[Lease], stats: TickStats, judged: bool = False) -> tuple[list[Lease], bool, bool]:
        """Send one request for ``batch``; return the leases to retry, whether throttling was seen and whether the
        request timed out. ``judged`` (a round's first request, on the heartbeat thread's tick): warn if it is sent
        with a lease holding less than half the least slack a tick on time leaves. Default False."""
        with self._requests:
            sent_at = self.clock()
            batch = self._drop_lapsed(batch, sent_at, stats)
            if not batch:
                return [], False, False
            if judged:
                warn_if_late(batch, sent_at, self.settings)
            entries: list[dict[str, object]] = []
            vts: list[int] = []
            for i, lease in enumerate(batch):  # positional ids: MessageIds can repeat in a batch
                vts.append(self._allowed(lease, sent_at))
                entries.append({"Id": str(i), "ReceiptHandle": lease.receipt_handle, "VisibilityTimeout": vts[-1]})
            stats.requests += 1
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug(
                    "extending %s",
                    ", ".join(f"{lease.receipt_handle[:16]} slack {lease.deadline - sent_at:.3f}" for lease in batch),
                )
            try:
                response = self.sqs.change_message_visibility_batch(QueueUrl=self.queue_url, Entries=entries)
            except Exception as error:  # the whole request failed: classify once for every entry
                return self._request_failed(error, batch, stats)
            answered_at = self.clock()
        retry, throttled = self._answered(response, batch, vts, sent_at, stats, answered_at)
        return retry, throttled, False

    def _first_answer(self, batch: list[Lease], answer: Answer, stats: TickStats) -> tuple[list[Lease], bool, bool]:
        """:meth:`_attempt`'s result for a request its caller sent (:meth:`answered_round`)."""
        stats.requests += 1
        if isinstance(answer.response, Exception):
            return self._request_failed(answer.response, batch, stats)
        retry, throttled = self._answered(answer.response, batch, answer.vts, answer.sent_at, stats)
        return retry, throttled, False

    def _request_failed(self, error: Exception, batch: list[Lease], stats: TickStats) -> tuple[list[Lease], bool, bool]:
        """The whole request failed: the leases to retry, whether it was throttled and whether it timed out."""
        outcome, code, message = classify_exception(error)
        throttled = _is_throttling(code)
        stats.throttled += throttled
        if outcome is EntryOutcome.FATAL:
            self._report_fatal(FatalSqsError("ChangeMessageVisibilityBatch", code, message), batch)
            return [], throttled, False
        if outcome is not EntryOutcome.RETRY:
            for lease in batch:
                self._apply_failure(lease, outcome, stats)
            return [], throttled, False
        logger.info("ChangeMessageVisibilityBatch failed (%s: %s); %d leases to retry", code, message, len(batch))
        return batch, throttled, code in TIMEOUT_ERRORS

    def _answered(
        self,
        response: dict[str, Any],
        batch: list[Lease],
        vts: list[int],
        sent_at: float,
        stats: TickStats,
        answered_at: float | None = None,
    ) -> tuple[list[Lease], bool]:
        """Apply the answer to a request sent at ``sent_at``: the leases to retry, and whether throttling was seen.

        With ``answered_at`` (when the answer came; not for a request its caller sent), a success answered once the
        lease had run out is not one: the request may have landed after the lease's end, when SQS may have handed
        the message to another consumer, and accepts the old receipt handle all the same. Such a lease is lost."""
        extended: list[tuple[Lease, float]] = []
        retry: list[Lease] = []
        throttled = False
        answered: set[int] = set()
        late: list[Lease] = []
        for success in response.get("Successful", []):
            index = int(success["Id"])
            answered.add(index)
            if answered_at is not None and answered_at >= batch[index].deadline:
                late.append(batch[index])
            else:
                extended.append((batch[index], vts[index]))
        self.scheduler.extended_all(extended, sent_at)
        stats.extended += len(extended)
        if late and answered_at is not None:
            self._answered_late(late, answered_at, stats)
        for failure in response.get("Failed", []):
            index = int(failure["Id"])
            answered.add(index)
            lease = batch[index]
            code, message = failure.get("Code", ""), failure.get("Message", "")
            outcome = classify_error(code, message)
            if outcome is EntryOutcome.RETRY:
                throttled = throttled or _is_throttling(code)
                retry.append(lease)
                continue
            if outcome is EntryOutcome.FATAL:
                self._report_fatal(FatalSqsError("ChangeMessageVisibilityBatch", code, message), [lease])
                continue
            if lease.settling != DELETING:  # after a delete landed, a failing extension is expected
                logger.warning("extension of %s failed: %s %s", lease.receipt_handle[:16], code, message)
            self._apply_failure(lease, outcome, stats)
        retry += [lease for index, lease in enumerate(batch) if index not in answered]  # missing: transient
        stats.throttled += throttled
        return retry, throttled

    def _answered_late(self, late: list[Lease], answered_at: float, stats: TickStats) -> None:
        lost = [lease for lease in late if self.scheduler.lapsed(lease)]
        stats.lost += len(lost)
        if lost:
            log_answered_late(lost, answered_at)

    def _drop_lapsed(self, batch: list[Lease], now: float, stats: TickStats) -> list[Lease]:
        """Leases that ran out before their extension could be sent (a late round) are lost, not extended: the
        message may be with another consumer, and SQS can accept this receipt handle all the same."""
        live = []
        for lease in batch:
            if lease.deadline > now:
                live.append(lease)
            elif self.scheduler.lapsed(lease):
                stats.lost += 1
                logger.error(
                    "lease %s ran out before its extension could be sent (%.2f s late); the message may be "
                    "delivered to another consumer while its handler still runs. %s",
                    lease.receipt_handle[:16],
                    now - lease.deadline,
                    STARVED,
                )
        return live

    def _apply_failure(self, lease: Lease, outcome: EntryOutcome, stats: TickStats) -> None:
        if outcome is EntryOutcome.LOST:
            self.scheduler.lost(lease)
            stats.lost += 1
        elif outcome is EntryOutcome.LIMIT:
            self.scheduler.stop_extending(lease)
            stats.limit_reached += 1

    def _report_fatal(self, error: FatalSqsError, leases: list[Lease]) -> None:
        for lease in leases:
            self.scheduler.end_round(lease)
        with self._fatal_lock:
            if self._fatal is not None:
                return
            self._fatal = error
        if self.on_fatal is not None:
            self.on_fatal(error)
        else:
            logger.critical("lease extensions stopped: %s", error)
