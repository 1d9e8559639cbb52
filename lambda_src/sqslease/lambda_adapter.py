"""SQS-triggered Lambda functions: the same handler signature, partial batch failures, leases, deadline guard.

    from sqslease.lambda_adapter import sqs_batch_handler

    @sqs_batch_handler
    def handler(body: str, message) -> None:
        ...  # raise to fail this record only

The decorated function is the Lambda entry point ``handler(event, context)``; it returns
``{"batchItemFailures": [...]}`` (enable ``ReportBatchItemFailures`` on the event source mapping).

Already on Powertools' ``BatchProcessor``? Keep it, and wrap its call in :func:`leases_held` to add lease
extension and the deadline guard's release of unstarted records.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from sqslease.emf import EmfLogger
from sqslease.heartbeat import Heartbeat
from sqslease.message import Message, queue_url_from_arn
from sqslease.processor import Handler, MessageProcessor
from sqslease.scheduler import Lease, LeaseScheduler
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler

logger = logging.getLogger("sqslease")

LambdaHandler = Callable[[dict, Any], dict]


class _EventLeases:
    """Leases for every record of one invocation, with their heartbeat and settler."""

    def __init__(self, event: dict, context: Any, settings: LeaseSettings, sqs: Any, queue_url: str | None) -> None:
        records = event.get("Records", [])
        self.queue_url = queue_url or queue_url_from_arn(records[0]["eventSourceARN"])
        self.settings = settings
        self.context = context
        self.scheduler = LeaseScheduler(settings.extension_threshold, settings.pull_forward)
        # Lambda's poller received the batch before invoking us, up to a batching window earlier.
        received_at = time.monotonic() - settings.max_batching_window
        self.leases: dict[str, Lease] = {
            r["messageId"]: self.scheduler.add(r["receiptHandle"], received_at, settings.visibility_timeout)
            for r in records
        }
        self.heartbeat = Heartbeat(sqs, self.queue_url, self.scheduler, settings)
        self.settler = Settler(sqs, self.queue_url, self.scheduler)
        remaining_s = remaining_seconds(context)
        if settings.heartbeat and (
            remaining_s is None or remaining_s > settings.visibility_timeout - settings.extension_threshold
        ):
            self.heartbeat.start()

    def out_of_time(self) -> bool:
        remaining_s = remaining_seconds(self.context)
        return remaining_s is not None and remaining_s < self.settings.deadline_margin

    def close(self) -> None:
        self.heartbeat.stop()
        self.settler.close()


def remaining_seconds(context: Any) -> float | None:
    getter = getattr(context, "get_remaining_time_in_millis", None)
    return None if getter is None else getter() / 1000


def process_event(
    event: dict,
    context: Any,
    handler: Handler,
    settings: LeaseSettings | None = None,
    sqs: Any = None,
    queue_url: str | None = None,
    emf: EmfLogger | None = None,
) -> dict:
    """Run ``handler(body, message)`` on each record; return the partial batch response."""
    records = event.get("Records", [])
    if not records:
        return {"batchItemFailures": []}
    settings = settings or LeaseSettings.from_env()
    sqs = sqs or _default_client()
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
    failures: list[dict[str, str]] = []
    try:
        for index, record in enumerate(records):
            if held.out_of_time():
                unstarted = records[index:]
                logger.warning(
                    "less than %.0f s left: releasing %d unstarted records", settings.deadline_margin, len(unstarted)
                )
                held.settler.release_all([held.leases[r["messageId"]] for r in unstarted])
                failures.extend({"itemIdentifier": r["messageId"]} for r in unstarted)
                break
            message = Message.from_lambda_record(record, held.queue_url, held.leases[record["messageId"]])
            if processor.process(message).retry:
                failures.append({"itemIdentifier": record["messageId"]})
    finally:
        held.close()
    return {"batchItemFailures": failures}


def sqs_batch_handler(
    handler: Handler | None = None,
    *,
    settings: LeaseSettings | None = None,
    sqs: Any = None,
    queue_url: str | None = None,
) -> Any:
    """Decorator: ``handler(body, message)`` -> Lambda entry point ``(event, context) -> batch response``."""

    def wrap(func: Handler) -> LambdaHandler:
        @functools.wraps(func)
        def lambda_handler(event: dict, context: Any) -> dict:
            return process_event(event, context, func, settings, sqs, queue_url)

        return lambda_handler

    return wrap(handler) if handler is not None else wrap


@contextlib.contextmanager
def leases_held(
    event: dict, context: Any, settings: LeaseSettings | None = None, sqs: Any = None, queue_url: str | None = None
) -> Iterator[None]:
    """Extend the leases of every record of ``event`` while the block runs (e.g. Powertools' processing).

    Lambda settles the records itself (deletes successes, retries ``batchItemFailures``); this only keeps
    them from reappearing while the invocation still works on them.
    """
    if not event.get("Records"):
        yield
        return
    held = _EventLeases(event, context, settings or LeaseSettings.from_env(), sqs or _default_client(), queue_url)
    try:
        yield
    finally:
        held.close()


def _default_client() -> Any:
    import boto3

    return boto3.client("sqs")
