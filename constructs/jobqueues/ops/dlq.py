"""``jobqueues dlq list|purge``: what is in a job type's dead-letter queue, and why.

``list`` peeks: it receives the DLQ's messages with a short visibility timeout, then makes each visible again at
once (``ChangeMessageVisibilityBatch`` to 0), so nothing is consumed. Each peek adds one to a message's receive
count on the DLQ: the count shown is the one before this peek. For each message it finds **the last error the
consumer logged for it**: sqslease writes ``ErrorType`` and ``Error`` on a failure's EMF line (docs/sqslease.md);
``FilterLogEvents`` on the consumer's log group finds them, up to 25 message ids per search (``?"id1" ?"id2"``,
any of the terms, within the API's 1,024-character pattern), from the oldest message's first send on (less a
minute of clock skew), so a page of 20 messages costs one search, not one scan of the log per message. The
emulator (moto) ignores a ``?`` pattern and returns every line of the range: the lines are matched here anyway.
A message sqslease dead-lettered itself is a copy: it carries the original's id (``sqslease.source_message_id``),
the error's text (``sqslease.error``), used when no line is found, and the receive count of its last run
(``sqslease.receive_count``: a FIFO consumer retries in process, so SQS counted fewer), shown as its receives.

On a FIFO DLQ a receive locks the groups of the messages it brings until they are visible again, so a peek sees
the first messages of each group only (up to 10 per receive); :func:`depth` says how many there are in all.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from jobqueues.ops.discovery import JobType
from jobqueues.ops.errors import OpsError
from sqslease.failure_policy import DLQ_ERROR_ATTRIBUTE, DLQ_RECEIVE_COUNT_ATTRIBUTE, DLQ_SOURCE_ID_ATTRIBUTE
from sqslease.payload_pointer import PayloadPointerError, pointer_of

#: Seconds the peeked messages stay invisible before they are made visible again (they are released at once;
#: this bounds how long a peek interrupted half-way hides them).
PEEK_VISIBILITY_S = 30
#: Characters of a body shown.
BODY_PREVIEW = 60
#: Characters of a ``FilterLogEvents`` pattern (the API's limit).
PATTERN_LIMIT = 1024
#: Pages read per search, at most: AWS may answer a search of a large group with empty pages and a token while
#: it scans; this bounds the calls, and a search cut short is reported (:attr:`ErrorSearch.complete`).
MAX_LOG_PAGES = 100
#: Milliseconds searched before a message's first send: the log's timestamps come from the consumer's clock.
CLOCK_SKEW_MS = 60_000
SOURCE_ID_ATTRIBUTE = DLQ_SOURCE_ID_ATTRIBUTE
#: Why sqslease releases a message it did not run (docs/sqslease.md): what a DLQ row of such a message says.
RELEASED_WHY = (
    "FIFO: an earlier message of its group failed in the same receive and was released to be retried (a Lambda "
    "invocation without time for the retry, or a consumer not told max_receive_count); or a drain, or a Lambda "
    "deadline, left it unstarted"
)
ERROR_ATTRIBUTE = DLQ_ERROR_ATTRIBUTE


@dataclass(frozen=True)
class LastError:
    """A failure line of the consumer: its type (``module.Class``), its text, and when it ended (ms, epoch)."""

    error_type: str
    error: str
    timestamp_ms: int | None
    source: str  # "log" (the consumer's EMF line) or "attribute" (sqslease's dead-letter copy)


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


def parse_failure(message: str) -> dict[str, Any] | None:
    """The EMF object of a log event if it is a failure line (one with ``ErrorType``); see :func:`parse_line`."""
    line = parse_line(message)
    return line if line is not None and "ErrorType" in line else None


def parse_line(message: str) -> dict[str, Any] | None:
    """The EMF object of a log event (one with a ``MessageId``). Text before the JSON (a runtime's prefix:
    Lambda's ``[ERROR]\\t<time>\\t<request id>\\t``) is skipped, and so is text after it."""
    decoder = json.JSONDecoder()
    start = message.find("{")
    for _ in range(5):  # a prefix may hold braces of its own; a line is short, a few tries suffice
        if start < 0:
            return None
        try:
            line, _end = decoder.raw_decode(message, start)
        except ValueError:
            start = message.find("{", start + 1)
            continue
        return line if isinstance(line, dict) and "MessageId" in line else None
    return None


@dataclass(frozen=True)
class ErrorSearch:
    """The latest failure line found per message id, the ``FilterLogEvents`` calls made, and whether every
    search ran to its end (``False``: one stopped at :data:`MAX_LOG_PAGES` pages; older errors may be missing)."""

    errors: dict[str, LastError]
    calls: int
    complete: bool


def any_term_patterns(message_ids: list[str]) -> list[tuple[list[str], str]]:
    """``message_ids`` in groups, each with its pattern: ``"id"`` for one, ``?"id1" ?"id2"`` (any) for several,
    each at most :data:`PATTERN_LIMIT` characters."""
    groups: list[list[str]] = []
    length = 0
    for message_id in message_ids:
        term = len(message_id) + 4  # ?"id" and a space
        if not groups or length + term > PATTERN_LIMIT:
            groups.append([])
            length = 0
        groups[-1].append(message_id)
        length += term
    return [(ids, f'"{ids[0]}"' if len(ids) == 1 else " ".join(f'?"{i}"' for i in ids)) for ids in groups]


def last_logged_errors(logs: Any, log_group: str, since_ms: dict[str, int]) -> ErrorSearch:
    """The latest failure line in ``log_group`` of each message id of ``since_ms`` (id -> its first send, ms
    since the epoch): oldest ids first, 25 or so per search, each search from its oldest send on."""
    ordered = sorted(since_ms, key=lambda message_id: since_ms[message_id])
    latest: dict[str, tuple[int, dict[str, Any]]] = {}
    released: dict[str, tuple[int, int]] = {}  # id -> (latest release, releases): lines without an error
    calls, complete = 0, True
    for ids, pattern in any_term_patterns(ordered):
        wanted = set(ids)
        request: dict[str, Any] = {
            "logGroupName": log_group,
            "filterPattern": pattern,
            "startTime": max(0, min(since_ms[i] for i in ids) - CLOCK_SKEW_MS),
        }
        for page in range(MAX_LOG_PAGES):
            response = logs.filter_log_events(**request)
            calls += 1
            for event in response.get("events", []):
                line = parse_line(event.get("message", ""))
                message_id = line.get("MessageId") if line is not None else None
                if line is None or message_id not in wanted:
                    continue
                stamp = line.get("_aws", {}).get("Timestamp") if isinstance(line.get("_aws"), dict) else None
                at = int(stamp or event.get("timestamp") or 0)
                if "ErrorType" in line:
                    if message_id not in latest or at >= latest[message_id][0]:
                        latest[message_id] = (at, line)
                elif line.get("Outcome") == "released":
                    first, count = released.get(message_id, (at, 0))
                    released[message_id] = (max(first, at), count + 1)
            if not response.get("nextToken"):
                break
            request["nextToken"] = response["nextToken"]
            if page == MAX_LOG_PAGES - 1:
                complete = False
    errors = {
        message_id: LastError(str(line["ErrorType"]), str(line.get("Error", "")), at or None, "log")
        for message_id, (at, line) in latest.items()
    }
    for message_id, (at, count) in released.items():
        if message_id not in errors:  # it never failed itself: say so, or it reads as lost or corrupted
            text = f"never failed: released unrun {count} time{'s' if count != 1 else ''} ({RELEASED_WHY})"
            errors[message_id] = LastError("released", text, at or None, "log")
    return ErrorSearch(errors, calls, complete)


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
            error = LastError(text.split("(", 1)[0], text, None, "attribute")
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
