"""The event source mapping's job: receive a batch from the queue, invoke the function, delete what Lambda would.

Like Lambda's pollers, it outlives SQS's faults: a failed receive is retried with backoff (:func:`poll_retry_delay_s`)
and a failed delete leaves its records to come back when their visibility timeout ends, each fault one log line
(:mod:`.sqs_faults`)."""

from __future__ import annotations

import base64
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jobqueues.emulator.lambda_driver.filters import matches, parse_filters
from jobqueues.emulator.lambda_driver.function import DeployedFunction, DriverError
from jobqueues.emulator.lambda_driver.runtime import Invocation, LocalRuntime
from jobqueues.emulator.lambda_driver.sqs_faults import SQS_FAILURES, describe, poll_retry_delay_s
from jobqueues.emulator.server import Emulator

logger = logging.getLogger("jobqueues.emulator.lambda_driver")

#: System attributes Lambda puts in a record's ``attributes`` (when SQS returns them).
RECORD_ATTRIBUTES = (
    "ApproximateReceiveCount",
    "SentTimestamp",
    "SenderId",
    "ApproximateFirstReceiveTimestamp",
    "SequenceNumber",
    "MessageGroupId",
    "MessageDeduplicationId",
    "AWSTraceHeader",
    "DeadLetterQueueSourceArn",
)


def lambda_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """One record of the SQS event Lambda sends, from one ``ReceiveMessage`` message (boto3's shape)."""
    record = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": {k: v for k, v in message.get("Attributes", {}).items() if k in RECORD_ATTRIBUTES},
        "messageAttributes": {
            name: {
                "stringValue": value.get("StringValue"),
                "binaryValue": base64.b64encode(value["BinaryValue"]).decode() if "BinaryValue" in value else None,
                "stringListValues": list(value.get("StringListValues", [])),
                "binaryListValues": [base64.b64encode(v).decode() for v in value.get("BinaryListValues", [])],
                "dataType": value["DataType"],
            }
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message.get("MD5OfBody"),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


def records_to_delete(records: list[dict[str, Any]], invocation: Invocation, report_failures: bool) -> list[str]:
    """The message ids Lambda deletes after ``invocation``: all of them, none, or those not named as failures.

    A function error fails the batch. With ``ReportBatchItemFailures``, a response without failures (no
    ``batchItemFailures``, null, or empty) succeeds it, and a failure entry whose ``itemIdentifier`` is
    missing, empty or not a record of the batch fails the whole batch (Lambda's rules).
    """
    ids = [r["messageId"] for r in records]
    if invocation.error is not None:
        return []
    result = invocation.result
    failures = result.get("batchItemFailures") if report_failures and isinstance(result, dict) else None
    if not failures:
        return ids
    named = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if not identifier or identifier not in ids:
            return []
        named.add(identifier)
    return [i for i in ids if i not in named]


@dataclass
class DriverStats:
    """Counters across the driver's invocations."""

    invocations: int = 0
    records: int = 0
    deleted: int = 0
    reported_failures: int = 0
    #: Records that matched none of the mapping's filters: deleted unprocessed, as Lambda does.
    filtered_out: int = 0
    function_errors: int = 0
    delete_errors: int = 0
    #: SQS requests that failed (a receive, retried with backoff; a delete, whose records come back).
    sqs_errors: int = 0
    batch_sizes: list[int] = field(default_factory=list)


class LambdaDriver:
    """Polls the mapping's queue and invokes the function, as the event source mapping would.

    :param idle_wait_s: long-poll wait while no record is gathered (the real poller waits 20 s; shorter
        makes :meth:`stop` prompt).
    :param on_invocation: called after each invocation with its records, outcome and deleted ids.
    """

    def __init__(
        self,
        emulator: Emulator,
        function: DeployedFunction,
        runtime: LocalRuntime,
        idle_wait_s: int = 2,
        on_invocation: Callable[[list[dict[str, Any]], Invocation, list[str]], None] | None = None,
    ) -> None:
        self.function = function
        self.mapping = function.mapping
        self.runtime = runtime
        self.idle_wait_s = idle_wait_s
        self.on_invocation = on_invocation
        self.sqs = emulator.client("sqs")
        _, _, _, self.region, self._account, self._queue_name = self.mapping.queue_arn.split(":", 5)
        # Looked up by the first poll, so that a fault on it is retried with the receives' backoff (chaos faults it).
        self._queue_url: str | None = None
        self.stats = DriverStats()
        #: The mapping's filter patterns; one the driver cannot apply as Lambda would is refused here.
        self.filters = parse_filters(self.mapping.filter_patterns)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failure: BaseException | None = None

    @property
    def queue_url(self) -> str:
        """The mapping's queue's URL, looked up on first use (an SQS request, which may fail: ``SQS_FAILURES``)."""
        if self._queue_url is None:
            found = self.sqs.get_queue_url(QueueName=self._queue_name, QueueOwnerAWSAccountId=self._account)
            self._queue_url = str(found["QueueUrl"])
        return self._queue_url

    # -- one round -------------------------------------------------------------------------------------
    def gather(self) -> list[dict[str, Any]]:
        """Receive one batch: up to ``batch_size`` messages, waiting up to the batching window to fill it."""
        messages: list[dict[str, Any]] = []
        window_ends: float | None = None
        while len(messages) < self.mapping.batch_size:
            if window_ends is None:
                if self._stop.is_set():
                    break
                wait = self.idle_wait_s
            else:
                remaining = window_ends - time.monotonic()
                if remaining <= 0:
                    break
                wait = min(20, math.floor(remaining))
            try:
                response = self.sqs.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=min(10, self.mapping.batch_size - len(messages)),
                    WaitTimeSeconds=wait,
                    MessageSystemAttributeNames=["All"],
                    MessageAttributeNames=["All"],
                )
            except SQS_FAILURES as error:
                if not messages:
                    raise  # the poller's loop backs off
                self.stats.sqs_errors += 1
                logger.warning(
                    "%s: ReceiveMessage failed (%s): invoking the %d records gathered",
                    self.function.name,
                    describe(error),
                    len(messages),
                )
                break
            received = response.get("Messages", [])
            if received and window_ends is None:
                window_ends = time.monotonic() + self.mapping.batching_window_s
            messages += received
            if not received and wait == 0:
                time.sleep(0.05)  # less than a second of window left: short polls, not a busy loop
        return messages

    def invoke(self, messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Invocation, list[str]]:
        """Invoke the function on ``messages`` and delete what Lambda would delete."""
        records = [lambda_record(m, self.mapping.queue_arn, self.region) for m in messages]
        invocation = self.runtime.invoke({"Records": records})
        to_delete = set(records_to_delete(records, invocation, self.mapping.report_batch_item_failures))
        deleted = self._delete([m for m in messages if m["MessageId"] in to_delete])
        self.stats.invocations += 1
        self.stats.records += len(records)
        self.stats.batch_sizes.append(len(records))
        self.stats.deleted += len(deleted)
        if invocation.error is not None:
            self.stats.function_errors += 1
        elif isinstance(invocation.result, dict):
            self.stats.reported_failures += len(invocation.result.get("batchItemFailures") or [])
        if self.on_invocation is not None:
            self.on_invocation(records, invocation, deleted)
        return records, invocation, deleted

    def _delete(self, messages: list[dict[str, Any]]) -> list[str]:
        """Delete ``messages``; the ids deleted. One that could not be deleted comes back when its visibility
        timeout ends (its record runs again), as on Lambda."""
        deleted = []
        for start in range(0, len(messages), 10):
            chunk = messages[start : start + 10]
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)]
            try:
                failed = self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=entries).get("Failed", [])
            except SQS_FAILURES as error:
                self.stats.sqs_errors += 1
                logger.warning(
                    "%s: DeleteMessageBatch failed (%s): its %d records come back when their visibility timeout "
                    "ends, as on Lambda",
                    self.function.name,
                    describe(error),
                    len(chunk),
                )
                continue
            for entry in failed:
                self.stats.delete_errors += 1
                logger.error("DeleteMessageBatch entry failed: %s", entry)
            failed_ids = {entry.get("Id") for entry in failed}
            deleted += [m["MessageId"] for i, m in enumerate(chunk) if str(i) not in failed_ids]
        return deleted

    def drop_filtered(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages that match the mapping's filters; the others are deleted unprocessed (Lambda's rule)."""
        kept: list[dict[str, Any]] = []
        dropped: list[dict[str, Any]] = []
        for message in messages:
            (kept if matches(self.filters, message.get("Body", "")) else dropped).append(message)
        if dropped:
            self._delete(dropped)
            self.stats.filtered_out += len(dropped)
            logger.info("%s: %d record(s) matched no filter, deleted unprocessed", self.function.name, len(dropped))
        return kept

    def poll_once(self) -> Invocation | None:
        """Gather one batch, drop what the filters filter out, and invoke on the rest; None if nothing is left.

        Lambda filters before it batches; here a batch is gathered first, so a filtered batch can be smaller."""
        messages = self.drop_filtered(self.gather())
        return self.invoke(messages)[1] if messages else None

    # -- background ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Poll in a background thread until :meth:`stop`."""
        self._thread = threading.Thread(target=self._run, name=f"esm-{self.function.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        failures = 0  # failed receives in a row
        try:
            while not self._stop.is_set():
                try:
                    self.poll_once()
                    failures = 0
                except SQS_FAILURES as error:  # as Lambda's pollers: back off, then receive again
                    failures += 1
                    self.stats.sqs_errors += 1
                    delay = poll_retry_delay_s(failures)
                    logger.warning(
                        "%s: polling failed (%s): retrying in %g s",
                        self.function.name,
                        describe(error),
                        delay,
                    )
                    self._stop.wait(delay)
        except BaseException as error:  # kept for stop() to raise in the caller's thread
            self.failure = error
            logger.exception("the event source stand-in for %s failed", self.function.name)

    @property
    def alive(self) -> bool:
        """The poller's thread runs (started and not ended)."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> None:
        """Stop polling (a gathered batch is still invoked), end the runtime; raise what the poller raised."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.runtime.stop()
        if self.failure is not None:
            raise DriverError(f"the event source stand-in for {self.function.name} failed") from self.failure

    def __enter__(self) -> LambdaDriver:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
