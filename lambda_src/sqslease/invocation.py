"""One Lambda invocation's hold on its records: their queue, their leases (renewed at the start and heartbeated),
the settler that releases them, and the invocation's deadline. See :mod:`sqslease.lambda_adapter`."""

from __future__ import annotations

import functools
import logging
import os
import time
import urllib.parse
from typing import Any

from sqslease.clients import queue_region
from sqslease.config import SETTINGS
from sqslease.heartbeat import Heartbeat
from sqslease.idempotency_gate import IdempotencyGate
from sqslease.lease import Lease
from sqslease.message import queue_url_from_arn
from sqslease.renewal import renew_at_start, untracked_leases
from sqslease.retry import FatalSqsError
from sqslease.rules import MIN_LAMBDA_DEADLINE_MARGIN_S, lambda_deadline_margin
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler

logger = logging.getLogger("sqslease")

#: The environment variable naming the consumer's queue (set by the ``jobqueues`` constructs).
QUEUE_URL_ENV = SETTINGS["queue_url"].variable


class FatalReport:
    """The first fatal SQS error (access denied, missing queue, unusable KMS key) of one invocation's queue: the
    settler, the heartbeat and the processor report theirs by calling it, the invocation reads :attr:`error`.

    An object of its own, not a method of :class:`EventLeases`: the settler's reference to a bound method made a
    reference cycle, so that every invocation's leases and settler waited for the garbage collector instead of
    being freed as the invocation returned (16 objects an invocation, ``bench/runtime_bench.py``).

    :param queue_url: the queue, for the log line.
    """

    __slots__ = ("error", "queue_url")

    def __init__(self, queue_url: str) -> None:
        self.error: FatalSqsError | None = None
        self.queue_url = queue_url

    def __call__(self, error: FatalSqsError) -> None:
        if self.error is None:
            self.error = error
            logger.critical("fatal: %s (queue %s)", error, self.queue_url)


class EventLeases:
    """Leases for every record of one invocation, with their heartbeat and settler."""

    def __init__(
        self,
        event: dict[str, Any],
        context: Any,
        settings: LeaseSettings,
        sqs: Any,
        queue_url: str,
        idempotency: IdempotencyGate | None = None,
    ) -> None:
        records = event.get("Records", [])
        self.queue_url = queue_url
        self.settings = settings
        self.context = context
        self._remaining_ms = getattr(context, "get_remaining_time_in_millis", None)
        #: Reports the invocation's first fatal SQS error (the settler, heartbeat and processor call it).
        self.on_fatal = FatalReport(queue_url)
        started_with = None if self._remaining_ms is None else self._remaining_ms() / 1000
        #: Seconds: no record starts with less left (see :func:`sqslease.rules.lambda_deadline_margin`).
        self.deadline_margin = (
            settings.deadline_margin
            if started_with is None
            else lambda_deadline_margin(started_with, settings.deadline_margin)
        )
        now = time.monotonic()
        # Lambda's poller received the batch before invoking us, up to a batching window earlier.
        received_at = now - settings.max_batching_window
        # With the heartbeat on, the poller's lease may be nearly over (throttled invocations are retried within
        # it): every lease counts as due now and is renewed before any record starts, retried for at most this.
        renew_within = min(settings.extension_threshold, max(self.deadline_margin, MIN_LAMBDA_DEADLINE_MARGIN_S))
        first_lease = (now + renew_within - received_at) if settings.heartbeat else settings.visibility_timeout
        #: Whether its leases are renewed as it starts (the heartbeat on): only then may one be lost before its record
        #: starts (nothing else touches a lease before its record runs).
        self.renewed = settings.heartbeat
        #: None with the heartbeat off (``lease_extension=False``), or when nothing heartbeats the renewed leases.
        self.heartbeat: Heartbeat | None = None
        self.leases: dict[str, Lease]
        if settings.heartbeat:  # every lease renewed (or lost) before a record starts (sqslease.renewal)
            ends_at = None if started_with is None else now + started_with
            self.scheduler, leases, self.heartbeat = renew_at_start(
                [r["receiptHandle"] for r in records],
                received_at,
                first_lease,
                ends_at,
                settings,
                sqs,
                queue_url,
                self.on_fatal,
                idempotency,
            )
            self.leases = {r["messageId"]: lease for r, lease in zip(records, leases, strict=True)}
        else:  # nothing renews them: no table to file them in, only the settles' lock (untracked_leases)
            self.scheduler = untracked_leases()
            deadline = received_at + first_lease  # one pass, no list of handles
            self.leases = {r["messageId"]: Lease(r["receiptHandle"], received_at, deadline) for r in records}
        self.settler = Settler(sqs, self.queue_url, self.scheduler, on_fatal=self.on_fatal)

    @property
    def fatal(self) -> FatalSqsError | None:
        """The invocation's first fatal SQS error, or ``None``."""
        return self.on_fatal.error

    def raise_if_fatal(self) -> None:
        if self.on_fatal.error is not None:
            raise self.on_fatal.error

    def out_of_time(self) -> bool:
        # Asked before every record: the context's getter is looked up once (remaining_seconds does per call).
        getter = self._remaining_ms
        return getter is not None and getter() / 1000 < self.deadline_margin

    def remaining(self) -> float:
        """Seconds before the function's timeout, less the deadline margin (infinite when the context has none)."""
        getter = self._remaining_ms
        return float("inf") if getter is None else getter() / 1000 - self.deadline_margin

    def time_left(self, at_most: float = 30) -> float:
        """Seconds the invocation may still spend waiting for SQS (at most ``at_most``)."""
        getter = self._remaining_ms
        if getter is None:
            return at_most
        left = getter() / 1000
        return at_most if left > at_most else left if left > 0 else 0.0  # min and max without their calls

    def close(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.stop()
        # Unconfirmed releases are safe: those records are reported as failures and reappear after their lease.
        self.settler.close(timeout=self.time_left())


def event_queue_url(records: list[dict[str, Any]], queue_url: str | None = None) -> str:
    """The URL of the queue the records came from: ``queue_url``, else ``SQSLEASE_QUEUE_URL``, else the one
    their ``eventSourceARN`` names. A configured URL naming another queue than the ARN is logged as an error and
    the ARN's is used (see the module docstring)."""
    arn = records[0]["eventSourceARN"]
    from_arn = queue_url_from_arn(arn)
    configured = queue_url or os.environ.get(QUEUE_URL_ENV, "").strip()
    if not configured:
        return from_arn
    if names_queue_of(configured, arn):
        return configured
    source = "the queue_url argument" if queue_url else QUEUE_URL_ENV
    logger.error(
        "%s is %s but the records come from %s: settling them on %s, the queue their receipt handles belong to; "
        "fix %s or the function's event source",
        source,
        configured,
        arn,
        from_arn,
        source,
    )
    return from_arn


@functools.lru_cache(maxsize=64)  # pure, and asked every invocation with the same two strings
def names_queue_of(queue_url: str, arn: str) -> bool:
    """Whether ``queue_url`` (``.../ACCOUNT/NAME``, any host) names the queue ``arn`` does: the same account and
    name, and the same region when the URL's host names one (AWS hosts do, an emulator's need not)."""
    _, _, _, region, account, name = arn.split(":", 5)
    path = urllib.parse.urlsplit(queue_url).path.rstrip("/").split("/")
    url_region = queue_region(queue_url)
    return path[-2:] == [account, name] and url_region in (None, region)


def remaining_seconds(context: Any) -> float | None:
    getter = getattr(context, "get_remaining_time_in_millis", None)
    return None if getter is None else getter() / 1000
