"""``jobqueues dlq list|purge``: what is in a job type's dead-letter queue, and why.

``list`` peeks: it receives the DLQ's messages with a short visibility timeout, then makes each visible again at
once (``ChangeMessageVisibilityBatch`` to 0), so nothing is consumed. Each peek adds one to a message's receive
count on the DLQ: the count shown is the one before this peek. For each message it finds **the last error the
consumer logged for it** (:mod:`jobqueues.ops.last_errors`: one ``FilterLogEvents`` search for a page of 20
messages). A message sqslease dead-lettered itself is a copy: it carries the original's id
(``sqslease.source_message_id``), the error's text (``sqslease.error``), used when no line is found, and the
receive count of its last run (``sqslease.receive_count``: a FIFO consumer retries in process, so SQS counted
fewer), shown as its receives.

On a FIFO DLQ a receive locks the groups of the messages it brings until they are visible again, so a peek sees
the first messages of each group only (up to 10 per receive); :func:`depth` says how many there are in all.
"""

from __future__ import annotations

import ast
import time
from dataclasses import dataclass
from typing import Any

from jobqueues.ops.discovery import JobType
from jobqueues.ops.errors import OpsError, error_code
from jobqueues.ops.last_errors import ErrorSearch, LastError, last_logged_errors
from jobqueues.ops.queues import message_counts
from sqslease.failure_policy import DLQ_ERROR_ATTRIBUTE, DLQ_RECEIVE_COUNT_ATTRIBUTE, DLQ_SOURCE_ID_ATTRIBUTE
from sqslease.payload_pointer import PayloadPointerError, pointer_of

#: Seconds the peeked messages stay invisible before they are made visible again (they are released at once;
#: this bounds how long a peek interrupted half-way hides them).
PEEK_VISIBILITY_S = 30
#: Characters of a body shown.
BODY_PREVIEW = 60
SOURCE_ID_ATTRIBUTE = DLQ_SOURCE_ID_ATTRIBUTE
ERROR_ATTRIBUTE = DLQ_ERROR_ATTRIBUTE


@dataclass(frozen=True)
class DeadLetter:
    """One message in a DLQ, as peeked. ``age_s`` is from its first send (seconds). A payload kept in S3 (the SQS
    Extended Client's pointer, :mod:`sqslease.payload_pointer`): its size in bytes and ``s3://bucket/key``."""

    message_id: str
    source_message_id: str
    receive_count: int
    age_s: float
    group: str | None
    body: str
    body_bytes: int
    last_error: LastError | None
    payload_bytes: int | None = None
    payload_pointer: str | None = None

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
            "payload_bytes": self.payload_bytes,
            "payload_pointer": self.payload_pointer,
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
        release(sqs, url, handles)
    return list(found.values())[:limit]


def release(sqs: Any, url: str, handles: list[str]) -> None:
    """Make the peeked messages visible again; a handle SQS refuses (already visible) needs nothing."""
    for first in range(0, len(handles), 10):
        entries = [
            {"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": 0}
            for i, handle in enumerate(handles[first : first + 10])
        ]
        sqs.change_message_visibility_batch(QueueUrl=url, Entries=entries)


def _system_int(message: dict[str, Any], name: str) -> int:
    return int(message.get("Attributes", {}).get(name, 0))


def _string_attribute(message: dict[str, Any], name: str) -> str | None:
    value = message.get("MessageAttributes", {}).get(name)
    return None if value is None else value.get("StringValue")


@dataclass(frozen=True)
class DeadLetters:
    """What ``dlq list`` found: the rows (oldest first), and why errors may be missing.

    ``no_log_reason``: why the consumer's log was not searched (``None``: it was). ``log_calls``: the
    ``FilterLogEvents`` calls made; ``log_complete``: ``False`` when a search stopped at :data:`MAX_LOG_PAGES`.
    """

    rows: list[DeadLetter]
    no_log_reason: str | None = None
    log_calls: int = 0
    log_complete: bool = True


def attribute_error(text: str) -> LastError:
    """The error sqslease wrote on its DLQ copy (``repr(error)``, cut at 1,000 characters) as its type and its
    text: ``RuntimeError('card declined')`` is ``RuntimeError`` and ``card declined``. Arguments that are not one
    string are shown as written, and a text that is not a call (not written by sqslease) is kept whole."""
    kind, call, arguments = text.partition("(")
    if not call:
        return LastError("error", text, None, "attribute")
    inside = arguments.removesuffix(")") if arguments.endswith(")") else arguments
    try:
        value = ast.literal_eval(inside) if inside else ""
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    return LastError(kind, value if isinstance(value, str) else inside, None, "attribute")


def no_log_reason(job: JobType) -> str | None:
    """Why ``job``'s consumer log cannot be searched (``None``: it can)."""
    if job.consumer is None:
        return f"{job.name} has no consumer in its stacks, so no log to search"
    if not job.consumer.log_group:
        return f"the log group of {job.name}'s {job.consumer.kind} consumer is unknown (a log driver of your own?)"
    return None


def list_dead_letters(
    job: JobType, sqs: Any, logs: Any | None, limit: int = 20, now_ms: int | None = None
) -> DeadLetters:
    """Peek at up to ``limit`` messages of ``job``'s DLQ, oldest first, each with the consumer's last error for
    it (``logs`` ``None``: no log search; sqslease's dead-letter copies still carry theirs)."""
    url = dead_letter_url(job)
    messages = peek(sqs, url, limit)
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    reason = no_log_reason(job) if logs is not None else "the log search was not asked for"
    source_ids = [_string_attribute(m, SOURCE_ID_ATTRIBUTE) or m["MessageId"] for m in messages]
    search = ErrorSearch({}, 0, True)
    if messages and reason is None and job.consumer is not None and job.consumer.log_group:
        since: dict[str, int] = {}
        for source_id, message in zip(source_ids, messages, strict=True):
            sent = _system_int(message, "SentTimestamp")
            since[source_id] = min(since.get(source_id, sent), sent)
        search = last_logged_errors(logs, job.consumer.log_group, since)
    rows = []
    for source_id, message in zip(source_ids, messages, strict=True):
        error = search.errors.get(source_id)
        text = _string_attribute(message, ERROR_ATTRIBUTE)
        if error is None and text:
            error = attribute_error(text)
        body = message.get("Body", "")
        peeks = max(0, _system_int(message, "ApproximateReceiveCount") - 1)  # this peek excluded
        runs = _string_attribute(message, DLQ_RECEIVE_COUNT_ATTRIBUTE)
        try:
            pointer = pointer_of(body, message.get("MessageAttributes", {}))
        except PayloadPointerError:
            pointer = None  # marked as a pointer but not one: its body is shown as it is
        rows.append(
            DeadLetter(
                message_id=message["MessageId"],
                source_message_id=source_id,
                receive_count=peeks + int(runs) if runs and runs.isdigit() else peeks,
                age_s=max(0.0, (now_ms - _system_int(message, "SentTimestamp")) / 1000),
                group=message.get("Attributes", {}).get("MessageGroupId"),
                body=body[:BODY_PREVIEW],
                body_bytes=len(body.encode()),
                last_error=error,
                payload_bytes=pointer.size if pointer else None,
                payload_pointer=pointer.url if pointer else None,
            )
        )
    rows.sort(key=lambda row: -row.age_s)
    return DeadLetters(rows, reason, search.calls, search.complete)


def depth(sqs: Any, url: str) -> int:
    """Visible + in-flight + delayed messages of ``url`` (SQS's approximate counts)."""
    return sum(message_counts(sqs, url))


def purge(sqs: Any, url: str) -> None:
    """``PurgeQueue``; SQS takes one purge per queue every 60 s: a second one is an :class:`OpsError`."""
    from botocore.exceptions import ClientError

    try:
        sqs.purge_queue(QueueUrl=url)
    except ClientError as error:
        if "PurgeQueueInProgress" in error_code(error):
            raise OpsError(
                "a purge of this queue ran in the last 60 s (SQS allows one a minute): try again later"
            ) from None
        raise
