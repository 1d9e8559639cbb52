"""``jobqueues dlq list|purge``: what is in a job type's dead-letter queue, and why.

``list`` peeks: it receives the DLQ's messages with a short visibility timeout, then makes each visible again at
once (``ChangeMessageVisibilityBatch`` to 0), so nothing is consumed. Each peek adds one to a message's receive
count on the DLQ: the count shown is the one before this peek. For each message it finds **the last error the
consumer logged for it**: sqslease writes ``ErrorType`` and ``Error`` on a failure's EMF line (docs/sqslease.md),
and ``FilterLogEvents`` on the consumer's log group, with the message id as a quoted term (a pattern AWS and the
emulator both read), finds the latest, one call per message, eight at a time, from the message's first send on.
A message sqslease dead-lettered itself is a copy: it carries the original's id (``sqslease.source_message_id``)
and the error's text (``sqslease.error``), used when no line is found.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from jobqueues.ops.discovery import JobType
from jobqueues.ops.errors import OpsError

#: Seconds the peeked messages stay invisible before they are made visible again (they are released at once;
#: this bounds how long a peek interrupted half-way hides them).
PEEK_VISIBILITY_S = 30
#: Characters of a body shown.
BODY_PREVIEW = 60
#: Log pages read per message, at most (a message's failures are a few lines; this bounds a pathological log).
MAX_LOG_PAGES = 20
SOURCE_ID_ATTRIBUTE = "sqslease.source_message_id"
ERROR_ATTRIBUTE = "sqslease.error"


@dataclass(frozen=True)
class LastError:
    """A failure line of the consumer: its type (``module.Class``), its text, and when it ended (ms, epoch)."""

    error_type: str
    error: str
    timestamp_ms: int | None
    source: str  # "log" (the consumer's EMF line) or "attribute" (sqslease's dead-letter copy)


@dataclass(frozen=True)
class DeadLetter:
    """One message in a DLQ, as peeked. ``age_s`` is from its first send (seconds)."""

    message_id: str
    source_message_id: str
    receive_count: int
    age_s: float
    group: str | None
    body: str
    body_bytes: int
    last_error: LastError | None

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` form."""
        error = self.last_error
        return {
            "message_id": self.message_id,
            "source_message_id": self.source_message_id,
            "receive_count": self.receive_count,
            "age_s": round(self.age_s, 3),
            "group": self.group,
            "body": self.body,
            "body_bytes": self.body_bytes,
            "error_type": error.error_type if error else None,
            "error": error.error if error else None,
            "error_timestamp_ms": error.timestamp_ms if error else None,
            "error_source": error.source if error else None,
        }


def dead_letter_url(job: JobType) -> str:
    """The job type's DLQ URL, or an :class:`OpsError` saying why there is none."""
    if job.dead_letter_queue_url is None:
        raise OpsError(f"job type {job.name} has no dead-letter queue this command can reach (another stack's?)")
    return job.dead_letter_queue_url


def peek(sqs: Any, url: str, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` distinct messages of ``url``, received and made visible again (their receive counts grow
    by one). Stops at the first receive that brings nothing new."""
    found: dict[str, dict[str, Any]] = {}
    handles: list[str] = []
    try:
        while len(found) < limit:
            response = sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=min(10, limit - len(found)),
                VisibilityTimeout=PEEK_VISIBILITY_S,
                WaitTimeSeconds=1,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            messages = response.get("Messages", [])
            handles += [m["ReceiptHandle"] for m in messages]
            new = [m for m in messages if m["MessageId"] not in found]
            if not new:
                break
            found.update((m["MessageId"], m) for m in new)
    finally:
        _release(sqs, url, handles)
    return list(found.values())[:limit]


def _release(sqs: Any, url: str, handles: list[str]) -> None:
    """Make the peeked messages visible again; a handle SQS refuses (already visible) needs nothing."""
    for first in range(0, len(handles), 10):
        entries = [
            {"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": 0}
            for i, handle in enumerate(handles[first : first + 10])
        ]
        sqs.change_message_visibility_batch(QueueUrl=url, Entries=entries)


def parse_failure(message: str) -> dict[str, Any] | None:
    """The EMF object of a log event, if it is a failure line (one with ``ErrorType``); a prefix before the JSON
    (a runtime's own) is skipped."""
    start = message.find("{")
    if start < 0:
        return None
    try:
        line = json.loads(message[start:])
    except ValueError:
        return None
    return line if isinstance(line, dict) and "ErrorType" in line else None


def last_logged_error(logs: Any, log_group: str, message_id: str, since_ms: int) -> LastError | None:
    """The latest failure line for ``message_id`` in ``log_group`` since ``since_ms``, or ``None``."""
    request: dict[str, Any] = {"logGroupName": log_group, "filterPattern": f'"{message_id}"', "startTime": since_ms}
    latest: dict[str, Any] | None = None
    latest_at = -1
    for _ in range(MAX_LOG_PAGES):
        response = logs.filter_log_events(**request)
        for event in response.get("events", []):
            line = parse_failure(event.get("message", ""))
            if line is None or line.get("MessageId") != message_id:
                continue
            at = int(line.get("_aws", {}).get("Timestamp") or event.get("timestamp") or 0)
            if at >= latest_at:
                latest, latest_at = line, at
        if not response.get("nextToken"):
            break
        request["nextToken"] = response["nextToken"]
    if latest is None:
        return None
    return LastError(str(latest["ErrorType"]), str(latest.get("Error", "")), latest_at or None, "log")


def _system_int(message: dict[str, Any], name: str) -> int:
    return int(message.get("Attributes", {}).get(name, 0))


def _string_attribute(message: dict[str, Any], name: str) -> str | None:
    value = message.get("MessageAttributes", {}).get(name)
    return None if value is None else value.get("StringValue")


def list_dead_letters(
    job: JobType, sqs: Any, logs: Any | None, limit: int = 20, now_ms: int | None = None
) -> list[DeadLetter]:
    """Peek at up to ``limit`` messages of ``job``'s DLQ, oldest first, each with the consumer's last error for
    it (``logs`` ``None``, or a job type without a consumer log group: no log lookup)."""
    url = dead_letter_url(job)
    messages = peek(sqs, url, limit)
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    log_group = job.consumer.log_group if job.consumer is not None else None

    def lookup(message: dict[str, Any]) -> LastError | None:
        source_id = _string_attribute(message, SOURCE_ID_ATTRIBUTE) or message["MessageId"]
        found = None
        if logs is not None and log_group:
            found = last_logged_error(logs, log_group, source_id, _system_int(message, "SentTimestamp"))
        text = _string_attribute(message, ERROR_ATTRIBUTE)
        if found is None and text:
            found = LastError(text.split("(", 1)[0], text, None, "attribute")
        return found

    with ThreadPoolExecutor(max_workers=8) as pool:
        errors = list(pool.map(lookup, messages))
    rows = []
    for message, error in zip(messages, errors, strict=True):
        body = message.get("Body", "")
        rows.append(
            DeadLetter(
                message_id=message["MessageId"],
                source_message_id=_string_attribute(message, SOURCE_ID_ATTRIBUTE) or message["MessageId"],
                receive_count=max(0, _system_int(message, "ApproximateReceiveCount") - 1),  # this peek excluded
                age_s=max(0.0, (now_ms - _system_int(message, "SentTimestamp")) / 1000),
                group=message.get("Attributes", {}).get("MessageGroupId"),
                body=body[:BODY_PREVIEW],
                body_bytes=len(body.encode()),
                last_error=error,
            )
        )
    return sorted(rows, key=lambda row: -row.age_s)


def depth(sqs: Any, url: str) -> int:
    """Visible + in-flight + delayed messages of ``url`` (SQS's approximate counts)."""
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(attributes.get(name, 0)) for name in names)


def purge(sqs: Any, url: str) -> None:
    """``PurgeQueue``; SQS takes one purge per queue every 60 s: a second one is an :class:`OpsError`."""
    from botocore.exceptions import ClientError

    try:
        sqs.purge_queue(QueueUrl=url)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if "PurgeQueueInProgress" in code:
            raise OpsError(
                "a purge of this queue ran in the last 60 s (SQS allows one a minute): try again later"
            ) from None
        raise
