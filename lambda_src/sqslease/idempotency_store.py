"""The idempotency store: begin, extend, complete and fail records.

The schema is in :mod:`sqslease.idempotency`. Each request has the discipline of SQS lease requests
(:mod:`sqslease.idempotency_requests`): timeouts, and retries only within the lease's slack. A record that
cannot be written in time is reported UNAVAILABLE: the caller does not run the message and lets its lease
lapse. Never a run without a record.

Requests: ``begin`` one PutItem (plus a GetItem when DynamoDB does not return the item that failed the
condition), ``complete`` one UpdateItem, ``fail`` one DeleteItem, ``extend`` ceil(due / 100) TransactWriteItems
(one more per batch in which a record was lost: a transaction is all-or-nothing; see :meth:`extend`).
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from sqslease.config import SETTINGS
from sqslease.idempotency import (
    KEY_ATTRIBUTE,
    TRANSACTION_MAX_ITEMS,
    Begin,
    BeginStatus,
    ExtendOutcome,
    Hold,
    IdempotencySettings,
    RecordStatus,
    SettleOutcome,
    completed_expiry,
    decode_result,
    encode_result,
    record_key,
)
from sqslease.idempotency_requests import (
    THROTTLING,
    Deadline,
    FatalStoreError,
    Refused,
    Requests,
    Retry,
    Unavailable,
    latest,
    store_client,
)
from sqslease.idempotency_writes import (
    attribute_text,
    begin_request,
    complete_request,
    extend_update,
    fail_request,
)
from sqslease.retry import extension_retry_delay
from sqslease.settings import LeaseSettings

logger = logging.getLogger("sqslease")

__all__ = ["FatalStoreError", "IdempotencyStore", "store_client"]


class IdempotencyStore:
    """Idempotency records of one job type in one table. Thread-safe; all times are epoch seconds on ``clock``.

    :param client: a boto3 DynamoDB client (:func:`store_client`).
    :param settings: the lease settings: request timeout and retry pacing (``heartbeat_interval``).
    :param idempotency: table, retention and result limit.
    :param clock: wall clock, epoch seconds. Default ``time.time``.
    :param sleep: ``sleep(seconds)`` between retries. Default ``time.sleep``.
    :param rng: random source of the retry jitter.
    """

    def __init__(
        self,
        client: Any,
        settings: LeaseSettings,
        idempotency: IdempotencySettings,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], object] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if not idempotency.table:
            table = SETTINGS["idempotency_table"]
            raise ValueError(f"IdempotencySettings.table is not set: give the table ({table.variable})")
        record_key(settings.job_type, "")  # refuses a job type that cannot prefix keys
        self.client = client
        self.settings = settings
        self.idempotency = idempotency
        self.table: str = idempotency.table
        self.clock = clock
        self.sleep = sleep
        self.rng = rng or random.Random()
        self.request_timeout = settings.lease_request_timeout
        self.io = Requests(client, settings, clock, sleep, self.rng)
        #: Requests sent, by DynamoDB operation (for tests and benchmarks).
        self.requests = self.io.counts

    # -- begin ------------------------------------------------------------------------------------------------
    def begin(self, key: str, lease_expires_at: Deadline) -> Begin:
        """Claim ``key`` until ``lease_expires_at`` (the message's lease, epoch seconds) and say what to do.

        The record is written if absent or void (a lapsed IN_PROGRESS: its holder died or lost its lease).
        Sent only while more than a request timeout of the lease is left. ``lease_expires_at`` may be a function,
        asked at each attempt: a lease the heartbeat extends while the claim is retried gives the retries more time,
        and each attempt writes the lease's latest end. The RUN's ``hold.expires_at`` is the expiry that landed.
        """
        pk = record_key(self.settings.job_type, key)
        lease_end = latest(lease_expires_at)
        hold = Hold(pk, uuid.uuid4().hex, lease_end())

        def attempt(now: float) -> dict[str, Any] | None:
            hold.expires_at = lease_end()
            request = begin_request(self.table, pk, hold.token, hold.expires_at, now)
            try:
                self.io.call("PutItem", request)
                return None
            except Refused as refused:
                old = self.io.item_in_the_way(self.table, pk, refused.error)
                if old is None:  # deleted between the two requests: try again at once
                    raise Retry("Vanished", "the record in the way was deleted", pause=False) from None
                return old

        found = self.io.retrying("PutItem", pk, lease_end, attempt, first_always=False)
        if isinstance(found, Unavailable):
            return Begin(BeginStatus.UNAVAILABLE, error=found.reason)
        if found is None:
            return Begin(BeginStatus.RUN, hold=hold)
        if attribute_text(found, "owner") == hold.token:  # ours: an earlier attempt landed though its answer was lost
            hold.expires_at = float(found["expires_at"]["N"])
            return Begin(BeginStatus.RUN, hold=hold)
        if attribute_text(found, "status") == RecordStatus.COMPLETED:
            return Begin(BeginStatus.COMPLETED, result=decode_result(attribute_text(found, "result")))
        return Begin(BeginStatus.IN_PROGRESS_ELSEWHERE, expires_at=float(found["expires_at"]["N"]))

    def get(self, key: str) -> tuple[RecordStatus, Any] | None:
        """What a producer reads: ``key``'s status and stored result (``None`` unless COMPLETED with one), or
        ``None`` when it has no record or a void one. One strongly consistent GetItem, not retried."""
        pk = record_key(self.settings.job_type, key)
        request = {"TableName": self.table, "Key": {KEY_ATTRIBUTE: {"S": pk}}, "ConsistentRead": True}
        item = self.io.call("GetItem", request).get("Item")
        if item is None or float(item["expires_at"]["N"]) <= self.clock():
            return None
        status = RecordStatus(attribute_text(item, "status") or "")
        return status, decode_result(attribute_text(item, "result")) if status is RecordStatus.COMPLETED else None

    # -- complete and fail --------------------------------------------------------------------------------------
    def complete(self, hold: Hold, result: Any = None, deadline: Deadline | None = None) -> SettleOutcome:
        """Mark the record COMPLETED (with ``result`` as JSON unless ``None``) until retention plus margin.

        Raises :class:`~sqslease.idempotency.ResultTooLargeError` (or ``TypeError``) before any request: the record
        stays IN_PROGRESS. One attempt always; retries while ``deadline`` (epoch seconds, or a function asked before
        each attempt; default the record's expiry) leaves slack. LOST: the record is another holder's, untouched.
        """
        result_text = encode_result(result, self.idempotency.max_result_bytes)

        def attempt(now: float) -> SettleOutcome:
            request = complete_request(self.table, hold, result_text, completed_expiry(now, self.idempotency))
            try:
                self.io.call("UpdateItem", request)
                return SettleOutcome.DONE
            except Refused as refused:
                old = self.io.item_in_the_way(self.table, hold.pk, refused.error)
                ours = old is not None and attribute_text(old, "owner") == hold.token
                if ours and attribute_text(old or {}, "status") == RecordStatus.COMPLETED:
                    return SettleOutcome.DONE  # an earlier attempt landed though its answer was lost
                return SettleOutcome.LOST

        return self._settle("UpdateItem", hold, deadline, attempt)

    def fail(self, hold: Hold, deadline: Deadline | None = None) -> SettleOutcome:
        """Delete the record, if it is still ours, so that a retry runs. Same attempts and deadline as
        :meth:`complete`; not deleted (UNAVAILABLE), it lapses at its expiry and a retry runs then."""

        def attempt(now: float) -> SettleOutcome:
            request = fail_request(self.table, hold)
            try:
                self.io.call("DeleteItem", request)
                return SettleOutcome.DONE
            except Refused as refused:
                # Gone: an earlier attempt landed (or TTL cleanup ran). Present: another holder's, or completed.
                return (
                    SettleOutcome.DONE
                    if self.io.item_in_the_way(self.table, hold.pk, refused.error) is None
                    else SettleOutcome.LOST
                )

        return self._settle("DeleteItem", hold, deadline, attempt)

    def _settle(
        self, operation: str, hold: Hold, deadline: Deadline | None, attempt: Callable[[float], SettleOutcome]
    ) -> SettleOutcome:
        outcome = self.io.retrying(operation, hold.pk, hold.expires_at if deadline is None else deadline, attempt, True)
        if isinstance(outcome, Unavailable):
            return SettleOutcome.UNAVAILABLE
        if outcome is SettleOutcome.LOST:
            hold.lost = True
            logger.warning("idempotency record %s is another holder's: %s left it untouched", hold.pk, operation)
        return outcome

    # -- extend ---------------------------------------------------------------------------------------------------
    def extend(self, due: Sequence[tuple[Hold, float]]) -> list[ExtendOutcome]:
        """Move each held record's expiry to its new lease (epoch seconds); outcomes in ``due``'s order.

        One TransactWriteItems of up to 100 conditional updates per batch, ceil(due / 100) requests: each update
        is conditional (ours, IN_PROGRESS, not void a request timeout from now). BatchWriteItem (25 a request)
        cannot be conditional, so it could revive a record a successor holds. A transaction is all-or-nothing:
        when records were lost it is cancelled with a reason per record; those are marked lost and the rest
        sent again at once: one more request per batch however many were lost. Throttled, conflicting and
        timed-out records are retried, paced as the heartbeat's, within the slack of the earliest expiry.
        """
        if len({id(hold) for hold, _ in due}) != len(due):
            raise ValueError("extend: each hold at most once (a transaction cannot name an item twice)")
        outcomes = {id(hold): ExtendOutcome.LOST if hold.lost else ExtendOutcome.UNAVAILABLE for hold, _ in due}
        pending = [(hold, expiry) for hold, expiry in due if not hold.lost]
        attempt = 0
        tried = False
        while pending:
            now = self.clock()
            # Void within a request timeout: an update could land after the expiry. Lost if never tried.
            for hold, _ in pending:
                if hold.expires_at - now <= self.request_timeout:
                    hold.lost = True
                    if not tried:
                        outcomes[id(hold)] = ExtendOutcome.LOST
                    else:
                        logger.error("idempotency record %s could not be extended before it lapses", hold.pk)
            pending = [(hold, expiry) for hold, expiry in pending if not hold.lost]
            if not pending:
                break
            slack = min(hold.expires_at for hold, _ in pending) - now
            tried = True
            again: list[tuple[Hold, float]] = []
            pause = throttled = False
            for start in range(0, len(pending), TRANSACTION_MAX_ITEMS):
                batch = pending[start : start + TRANSACTION_MAX_ITEMS]
                codes = self._extend_batch(batch, now)
                for (hold, expiry), code in zip(batch, codes, strict=True):
                    if code == "":
                        hold.expires_at = expiry
                        outcomes[id(hold)] = ExtendOutcome.EXTENDED
                    elif code == "ConditionalCheckFailed":
                        hold.lost = True
                        outcomes[id(hold)] = ExtendOutcome.LOST
                        logger.warning("idempotency record %s is no longer ours or has lapsed: not extended", hold.pk)
                    else:
                        again.append((hold, expiry))
                        pause = pause or code != "None"  # "None": cancelled only because another record failed
                        throttled = throttled or code in THROTTLING
            pending = again
            if pending and pause:
                attempt += 1
                interval = self.settings.heartbeat_interval
                self.sleep(extension_retry_delay(attempt, throttled, interval, slack, self.request_timeout, self.rng))
        return [outcomes[id(hold)] for hold, _ in due]

    def _extend_batch(self, batch: list[tuple[Hold, float]], now: float) -> list[str]:
        """One TransactWriteItems: per record ``""`` (extended), or the cancellation reason's code, or the whole
        request's error code for each."""
        # Void a request timeout from now is void when the update lands: never revive it.
        void_by = now + self.request_timeout
        items = [extend_update(self.table, hold, expiry, void_by) for hold, expiry in batch]
        try:
            self.io.call("TransactWriteItems", {"TransactItems": items})
            return [""] * len(batch)
        except Retry as fault:
            logger.info("TransactWriteItems failed (%s); %d idempotency records to retry", fault, len(batch))
            return [fault.code] * len(batch)
        except Refused as refused:
            reasons = getattr(refused.error, "response", {}).get("CancellationReasons") or []
            if len(reasons) != len(batch):  # no reason per record: retry all rather than guess
                return ["Unknown"] * len(batch)
            return [str(reason.get("Code", "Unknown")) for reason in reasons]
