"""SQS-triggered Lambda functions: the same handler signature, partial batch failures, leases, deadline guard.

    from sqslease.lambda_adapter import sqs_batch_handler

    @sqs_batch_handler
    def handler(body: str, message) -> None:
        ...  # raise to fail this record only

The decorated function is the Lambda entry point ``handler(event, context)``; it returns
``{"batchItemFailures": [...]}`` (enable ``ReportBatchItemFailures`` on the event source mapping). When every
record failed it raises :class:`BatchFailedError` instead (``raise_on_entire_batch_failure``, default on, as
Powertools does), so that Lambda backs the event source off. A fatal SQS error (access denied, missing queue,
unusable KMS key) is raised as :class:`sqslease.retry.FatalSqsError`.

FIFO queues (``.fifo``): records run in order and a group stops at its first failure; its remaining records
are released and reported as failures. With ``skip_group_on_error=False`` (the default, as Powertools'
``SqsFifoPartialProcessor``) the whole rest of the batch stops; with True only that group does.

The deadline guard: no record starts when less than the deadline margin is left, ``deadline_margin`` but at
most a quarter of the time the invocation started with (:func:`sqslease.rules.lambda_deadline_margin`); the
unstarted records are released and reported as failures.

With the heartbeat on (``lease_extension=True`` on the job type), every record's lease is renewed as the
invocation starts (ceil(records / 10) ChangeMessageVisibilityBatch requests, before the first record runs) and
heartbeated while the records wait their turn and run, so no record becomes visible while its invocation runs,
however long the event source held the batch. A record whose lease cannot be renewed (SQS no longer honours its
receipt handle) is not started and is reported as a failure. The trade-off of the shorter queue visibility
timeout this allows: a batch the event source holds longer than that (while it retries throttled invocations)
becomes visible again before the function runs, at the cost of a receive and possibly a second run.

The SQS clients are created once per process (the first invocation), not per invocation.

Already on Powertools' ``BatchProcessor``? Keep it, and wrap its call in :func:`leases_held` to add lease
extension and the deadline guard's release of unstarted records.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from sqslease.emf import EmfLogger
from sqslease.heartbeat import Heartbeat
from sqslease.message import Message, queue_url_from_arn
from sqslease.processor import Handler, MessageProcessor
from sqslease.retry import FatalSqsError
from sqslease.rules import MIN_LAMBDA_DEADLINE_MARGIN_S, lambda_deadline_margin
from sqslease.scheduler import Lease, LeaseScheduler
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler

logger = logging.getLogger("sqslease")

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


class BatchFailedError(Exception):
    """Every record of the batch failed (raised so that Lambda backs the event source off)."""

    def __init__(self, failures: list[dict[str, str]]) -> None:
        super().__init__(f"all {len(failures)} records of the batch failed")
        self.failures = failures


class _EventLeases:
    """Leases for every record of one invocation, with their heartbeat and settler."""

    def __init__(
        self, event: dict[str, Any], context: Any, settings: LeaseSettings, sqs: Any, queue_url: str | None
    ) -> None:
        records = event.get("Records", [])
        self.queue_url = queue_url or queue_url_from_arn(records[0]["eventSourceARN"])
        self.settings = settings
        self.context = context
        self.fatal: FatalSqsError | None = None
        started_with = remaining_seconds(context)
        #: Seconds: no record starts with less left (see :func:`sqslease.rules.lambda_deadline_margin`).
        self.deadline_margin = (
            settings.deadline_margin
            if started_with is None
            else lambda_deadline_margin(started_with, settings.deadline_margin)
        )
        self.scheduler = LeaseScheduler(settings.extension_threshold, settings.pull_forward)
        now = time.monotonic()
        # Lambda's poller received the batch before invoking us, up to a batching window earlier.
        received_at = now - settings.max_batching_window
        # With the heartbeat on, the poller's lease may be nearly over (throttled invocations are retried within
        # it): every lease counts as due now and is renewed before any record starts, retried for at most this.
        renew_within = min(settings.extension_threshold, max(self.deadline_margin, MIN_LAMBDA_DEADLINE_MARGIN_S))
        first_lease = (now + renew_within - received_at) if settings.heartbeat else settings.visibility_timeout
        self.leases: dict[str, Lease] = {
            r["messageId"]: self.scheduler.add(r["receiptHandle"], received_at, first_lease) for r in records
        }
        self.heartbeat = Heartbeat(sqs, self.queue_url, self.scheduler, settings, on_fatal=self._on_fatal)
        self.settler = Settler(sqs, self.queue_url, self.scheduler, on_fatal=self._on_fatal)
        if settings.heartbeat:
            renewed = self.heartbeat.tick().wait()
            logger.debug("renewed %d of %d leases (%d requests)", renewed.extended, len(records), renewed.requests)
            self.heartbeat.start()

    def _on_fatal(self, error: FatalSqsError) -> None:
        if self.fatal is None:
            self.fatal = error
            logger.critical("fatal: %s (queue %s)", error, self.queue_url)

    def raise_if_fatal(self) -> None:
        if self.fatal is not None:
            raise self.fatal

    def out_of_time(self) -> bool:
        remaining_s = remaining_seconds(self.context)
        return remaining_s is not None and remaining_s < self.deadline_margin

    def time_left(self, at_most: float = 30) -> float:
        """Seconds the invocation may still spend waiting for SQS (at most ``at_most``)."""
        remaining_s = remaining_seconds(self.context)
        return at_most if remaining_s is None else max(0.0, min(at_most, remaining_s))

    def close(self) -> None:
        self.heartbeat.stop()
        # Unconfirmed releases are safe: those records are reported as failures and reappear after their lease.
        self.settler.close(timeout=self.time_left())


def remaining_seconds(context: Any) -> float | None:
    getter = getattr(context, "get_remaining_time_in_millis", None)
    return None if getter is None else getter() / 1000


def process_event(
    event: dict[str, Any],
    context: Any,
    handler: Handler,
    settings: LeaseSettings | None = None,
    sqs: Any = None,
    queue_url: str | None = None,
    emf: EmfLogger | None = None,
    *,
    skip_group_on_error: bool = False,
    raise_on_entire_batch_failure: bool = True,
) -> dict[str, Any]:
    """Run ``handler(body, message)`` on each record; return the partial batch response.

    :param sqs: client for extensions, releases and DLQ sends. Default: one per process (see module doc).
    :param skip_group_on_error: FIFO only: after a failure stop only that record's group, not the batch.
    :param raise_on_entire_batch_failure: raise :class:`BatchFailedError` when every record failed.
    """
    records = event.get("Records", [])
    if not records:
        return {"batchItemFailures": []}
    settings = settings or LeaseSettings.from_env()
    queue_url = queue_url or queue_url_from_arn(records[0]["eventSourceARN"])
    sqs = sqs or default_client(settings, queue_url)
    held = _EventLeases(event, context, settings, sqs, queue_url)
    processor = MessageProcessor(
        handler,
        held.settler,
        settings,
        sqs,
        emf,
        queue_name=held.queue_url.rsplit("/", 1)[-1],
        delete_on_success=False,
    )
    fifo = held.queue_url.endswith(".fifo")
    failures: list[dict[str, str]] = []
    skipped: list[
        dict[str, Any]
    ] = []  # FIFO records not run because an earlier record of their group (or batch) failed
    failed_groups: set[str | None] = set()
    batch_stopped = False
    try:
        for index, record in enumerate(records):
            held.raise_if_fatal()
            group = record.get("attributes", {}).get("MessageGroupId")
            if batch_stopped or (fifo and group in failed_groups):
                skipped.append(record)
                continue
            if held.out_of_time():
                unstarted = records[index:]
                logger.warning(
                    "less than %.2f s left: releasing %d unstarted records", held.deadline_margin, len(unstarted)
                )
                skipped += unstarted
                break
            lease = held.leases[record["messageId"]]
            if lease.lost:  # its renewal found the receipt handle stale: the message may be running elsewhere
                logger.warning("record %s not started: its lease could not be renewed", record["messageId"])
                failures.append({"itemIdentifier": record["messageId"]})
                if fifo:
                    failed_groups.add(group)
                    batch_stopped = not skip_group_on_error
                continue
            message = Message.from_lambda_record(record, held.queue_url, lease)
            if processor.process(message).retry:
                failures.append({"itemIdentifier": record["messageId"]})
                if fifo:
                    failed_groups.add(group)
                    batch_stopped = not skip_group_on_error
        if skipped:
            if fifo and failed_groups:
                logger.warning("FIFO: %d records after a failure in their group released unprocessed", len(skipped))
            held.settler.release_all([held.leases[r["messageId"]] for r in skipped], timeout=held.time_left())
            failures += [{"itemIdentifier": r["messageId"]} for r in skipped]
            for record in skipped:
                processor.record_released(
                    Message.from_lambda_record(record, held.queue_url, held.leases[record["messageId"]])
                )
    finally:
        held.close()  # waits (bounded) for the releases and backoffs to be confirmed
    held.raise_if_fatal()
    if fifo:  # Lambda retries in order only if failures are reported in record order
        position = {r["messageId"]: i for i, r in enumerate(records)}
        failures.sort(key=lambda f: position[f["itemIdentifier"]])
    if raise_on_entire_batch_failure and len(failures) == len(records):
        raise BatchFailedError(failures)
    return {"batchItemFailures": failures}


def sqs_batch_handler(
    handler: Handler | None = None,
    *,
    settings: LeaseSettings | None = None,
    sqs: Any = None,
    queue_url: str | None = None,
    skip_group_on_error: bool = False,
    raise_on_entire_batch_failure: bool = True,
) -> Any:
    """Decorator: ``handler(body, message)`` -> Lambda entry point ``(event, context) -> batch response``.

    Keyword arguments as :func:`process_event`.
    """

    def wrap(func: Handler) -> LambdaHandler:
        @functools.wraps(func)
        def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            return process_event(
                event,
                context,
                func,
                settings,
                sqs,
                queue_url,
                skip_group_on_error=skip_group_on_error,
                raise_on_entire_batch_failure=raise_on_entire_batch_failure,
            )

        return lambda_handler

    return wrap(handler) if handler is not None else wrap


@contextlib.contextmanager
def leases_held(
    event: dict[str, Any],
    context: Any,
    settings: LeaseSettings | None = None,
    sqs: Any = None,
    queue_url: str | None = None,
) -> Iterator[None]:
    """Extend the leases of every record of ``event`` while the block runs (e.g. Powertools' processing).

    Lambda settles the records itself (deletes successes, retries ``batchItemFailures``); this only keeps
    them from reappearing while the invocation still works on them.
    """
    if not event.get("Records"):
        yield
        return
    settings = settings or LeaseSettings.from_env()
    queue_url = queue_url or queue_url_from_arn(event["Records"][0]["eventSourceARN"])
    held = _EventLeases(event, context, settings, sqs or default_client(settings, queue_url), queue_url)
    try:
        yield
    finally:
        held.close()
    held.raise_if_fatal()


_client: Any = None
_client_lock = threading.Lock()


def default_client(settings: LeaseSettings, queue_url: str) -> Any:
    """The process's SQS lease client, created on first use (request timeouts from the first ``settings``), in
    the region :func:`sqslease.clients.consumer_region` finds (Lambda sets ``AWS_REGION`` only).

    Lambda reuses the process across invocations: one client means one connection pool and one TLS handshake.
    """
    global _client
    with _client_lock:
        if _client is None:
            import boto3

            from sqslease.clients import consumer_region, lease_client

            session = boto3.session.Session()
            _client = lease_client(settings, session, region_name=consumer_region(session, queue_url))
        return _client
