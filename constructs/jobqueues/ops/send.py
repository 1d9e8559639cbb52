"""``jobqueues send``: jobs into a job type's queue, in ``SendMessageBatch`` batches of up to 10 messages and
256 KiB (a batch SQS takes in every region); each message at most the queue's own ``MaximumMessageSize``, read from
the queue (a job queue's ``max_message_size``), a larger one alone in its batch.

FIFO queues need a message group (``--group``); on a standard queue a group is optional and names the message's
tenant (a fair queue: docs/fair-queues.md). The deduplication id (FIFO only) is ``--dedup-id`` for one message, else,
when the queue has no content-based deduplication, the SHA-256 of the group and the body (so a body sent twice
to a group within SQS's 5-minute deduplication window is delivered once; the same body to another group is
another message).

A body larger than the queue takes (with its attributes, as the AWS SQS Extended Client counts it) goes to the job
type's payload bucket, and its pointer to the queue, in the Extended Client's wire format
(:mod:`sqslease.payload_pointer`): the job type's consumers, and the official clients, read it back. On a queue with
content-based deduplication such a message gets the SHA-256 of its payload as deduplication id (what SQS would have
computed from the body). Without a bucket it is refused (``MessageTooLong``). The result counts the messages sent
that way, and names the bucket.

A refused entry is reported with its line; on a FIFO queue sending then stops after that batch, so that no later
message of the group overtakes it (the result says from which line nothing was sent). A whole batch refused (a
throttled KMS key, say) stops the send too: its entries are reported, the lines after it are not sent.

A stop request (the command's first Ctrl-C) takes effect between batches; a ``KeyboardInterrupt`` during a batch's
request (a second Ctrl-C) ends the send at once, its lines unconfirmed: SQS may or may not have taken them. Either
way the result says what was sent and the first line to send again.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from jobqueues.ops.errors import AwsUnavailable, BadInput, aws_error
from sqslease.payload_pointer import is_pointer, message_size, offload

#: SQS's limits: messages per batch, and bytes per batch in every region (256 KiB; 1 MiB in most).
BATCH_MESSAGES = 10
BATCH_BYTES = 262_144
#: A queue's ``MaximumMessageSize`` when it reports none.
DEFAULT_MAX_MESSAGE_SIZE = 262_144


@dataclass(frozen=True)
class QueueKind:
    """What sending to a queue depends on: FIFO, content-based deduplication, and its message size limit."""

    fifo: bool
    content_based_deduplication: bool
    max_message_size: int


@dataclass(frozen=True)
class PayloadBucket:
    """Where a body larger than the queue takes goes: the job type's payload bucket, and an S3 client for it."""

    s3: Any
    name: str


@dataclass(frozen=True)
class Failed:
    """A message SQS refused: its line number (1-based; 1 for ``--body``), code and reason."""

    line: int
    code: str
    message: str


@dataclass
class SendResult:
    """What was sent: the message ids in order, and the refused entries."""

    message_ids: list[str] = field(default_factory=list)
    failed: list[Failed] = field(default_factory=list)
    #: The first line not sent (or not confirmed) when sending stopped early (``None``: every line was tried).
    stopped_at_line: int | None = None
    #: Stopped by the user (Ctrl-C) rather than by a refusal.
    interrupted: bool = False
    #: The first and last line of a batch interrupted before SQS answered: it may or may not have taken them.
    unconfirmed_lines: tuple[int, int] | None = None
    #: The first line after the unconfirmed ones (``None``: none, or nothing unconfirmed).
    next_line: int | None = None
    #: Messages sent whose body went through the payload bucket (their message a pointer to it).
    offloaded: int = 0
    #: The bucket those bodies went to (``None``: none did).
    payload_bucket: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` form."""
        return {
            "sent": len(self.message_ids),
            "offloaded": self.offloaded,
            "payload_bucket": self.payload_bucket,
            "message_ids": self.message_ids,
            "failed": [{"line": f.line, "code": f.code, "message": f.message} for f in self.failed],
            "stopped_at_line": self.stopped_at_line,
            "interrupted": self.interrupted,
            "unconfirmed_lines": list(self.unconfirmed_lines) if self.unconfirmed_lines else None,
        }


def bodies_from_lines(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """(line number, body) of each non-blank line, its newline removed: one message per line."""
    for number, line in enumerate(lines, start=1):
        body = line.rstrip("\r\n")
        if body.strip():
            yield number, body


def batches(bodies: Iterable[tuple[int, str]]) -> Iterator[list[tuple[int, str]]]:
    """Consecutive batches of at most :data:`BATCH_MESSAGES` messages and :data:`BATCH_BYTES` bytes."""
    batch: list[tuple[int, str]] = []
    size = 0
    for number, body in bodies:
        length = len(body.encode())
        if batch and (len(batch) == BATCH_MESSAGES or size + length > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append((number, body))
        size += length
    if batch:
        yield batch


def queue_kind(sqs: Any, url: str) -> QueueKind:
    """FIFO, content-based deduplication and the message size limit of the queue at ``url``."""
    names = ["FifoQueue", "ContentBasedDeduplication", "MaximumMessageSize"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names).get("Attributes", {})
    return QueueKind(
        fifo=attributes.get("FifoQueue") == "true",
        content_based_deduplication=attributes.get("ContentBasedDeduplication") == "true",
        max_message_size=int(attributes.get("MaximumMessageSize", DEFAULT_MAX_MESSAGE_SIZE)),
    )


def body_dedup_id(group: str, body: str) -> str:
    """The deduplication id of a body sent to ``group``: the SHA-256 of both. SQS deduplicates across the whole
    queue, so the same body sent to two groups (two customers' identical jobs) must not share an id."""
    return hashlib.sha256(f"{group}\n{body}".encode()).hexdigest()


def _entries(
    batch: list[tuple[int, str]],
    kind: QueueKind,
    group: str | None,
    dedup_id: str | None,
    payloads: PayloadBucket | None,
    result: SendResult,
) -> list[dict[str, Any]]:
    """The ``SendMessageBatch`` entries of ``batch`` ((line, body) pairs); a body too large for the queue goes to the
    payload bucket, or is refused in ``result`` (and has no entry)."""
    fifo, content_dedup, limit = kind.fifo, kind.content_based_deduplication, kind.max_message_size
    entries = []
    for i, (number, body) in enumerate(batch):
        entry: dict[str, Any] = {"Id": str(i), "MessageBody": body}
        if message_size(body) > limit:
            if not _offloaded(entry, number, limit, payloads, result):
                continue
            if fifo and content_dedup and dedup_id is None:  # the pointer is new each time: the payload's id
                entry["MessageDeduplicationId"] = hashlib.sha256(body.encode()).hexdigest()
        if group:  # on a standard queue, the tenant of a fair queue
            entry["MessageGroupId"] = group
        if fifo:
            if dedup_id is not None or not content_dedup:
                entry["MessageDeduplicationId"] = dedup_id or body_dedup_id(group or "", body)
        entries.append(entry)
    return entries


def send(
    sqs: Any,
    url: str,
    bodies: Iterable[tuple[int, str]],
    group: str | None = None,
    dedup_id: str | None = None,
    stop: threading.Event | None = None,
    payloads: PayloadBucket | None = None,
    name: str = "this job type",
) -> SendResult:
    """Send ``bodies`` ((line, body) pairs) to ``url``; refused entries are reported, never retried blindly.

    :param group: the message group: required on a FIFO queue; on a standard one, the tenant of a fair queue.
        Default: none.
    :param dedup_id: the FIFO deduplication id (one message only). Default: content-based, or the body's SHA-256.
    :param stop: set it to stop after the batch in hand (the result is then ``interrupted``). Default: never.
    :param payloads: the job type's payload bucket, for bodies larger than the queue takes. Default none: such a
        body is refused.
    :param name: the job type's name (``STACK/JOB_TYPE``), for the lines that refuse an option. Default: "this job
        type".
    """
    kind = queue_kind(sqs, url)
    fifo = kind.fifo
    if fifo and not group:
        raise BadInput(f"the queue of {name} is FIFO: pass --group GROUP (the message group to send to)")
    if not fifo and dedup_id:
        raise BadInput(
            f"--dedup-id is for FIFO queues; the queue of {name} is a standard one (--group names a tenant there)"
        )
    result = SendResult()
    pending = batches(bodies)
    for batch in pending:
        if stop is not None and stop.is_set():
            result.interrupted, result.stopped_at_line = True, batch[0][0]
            break
        if dedup_id is not None and len(batch) > 1:
            raise BadInput("--dedup-id names one message: send a file without it (each body is its own id)")
        refused = len(result.failed)
        entries = _entries(batch, kind, group, dedup_id, payloads, result)
        try:
            request_refused = bool(entries) and not _send_batch(sqs, url, batch, entries, result)
        except KeyboardInterrupt:  # a second Ctrl-C: SQS may or may not have taken this batch
            lines = [number for number, _ in batch]
            following = next(pending, None)
            result.interrupted, result.unconfirmed_lines = True, (lines[0], lines[-1])
            result.stopped_at_line, result.next_line = lines[0], following[0][0] if following else None
            break
        if (fifo and len(result.failed) > refused) or request_refused:
            following = next(pending, None)
            result.stopped_at_line = following[0][0] if following else None
            break
    result.payload_bucket = payloads.name if payloads is not None and result.offloaded else None
    return result


def _offloaded(
    entry: dict[str, Any], number: int, limit: int, payloads: PayloadBucket | None, result: SendResult
) -> bool:
    """Put ``entry``'s body, larger than the queue's ``limit``, in the payload bucket and make ``entry`` its pointer;
    False (the body refused, in ``result``) without a bucket or when S3 refuses it. AWS being unreachable or denying
    access ends the command."""
    from botocore.exceptions import ClientError

    size = len(entry["MessageBody"].encode())
    if payloads is None:
        fix = "give the job type a payload bucket (payload_bucket=...) to send it through S3"
        result.failed.append(Failed(number, "MessageTooLong", f"{size:,} bytes; the queue takes {limit:,}: {fix}"))
        return False
    try:
        entry["MessageBody"], entry["MessageAttributes"] = offload(payloads.s3, payloads.name, entry["MessageBody"])
    except ClientError as error:
        translated = aws_error(error)
        if isinstance(translated, AwsUnavailable):
            raise AwsUnavailable(
                f"{translated} (payload bucket {payloads.name}; {len(result.message_ids)} sent before it)"
            ) from None
        code = error.response.get("Error", {}).get("Code", "")
        text = error.response.get("Error", {}).get("Message", "")
        result.failed.append(Failed(number, code, f"payload bucket {payloads.name}: {text}"))
        return False
    return True


def _send_batch(
    sqs: Any, url: str, batch: list[tuple[int, str]], entries: list[dict[str, Any]], result: SendResult
) -> bool:
    """One ``SendMessageBatch``: the ids SQS took, and the entries it refused (all of them, when it refused the
    request: then ``False``). AWS being unreachable or denying access ends the command."""
    from botocore.exceptions import ClientError

    numbers = {str(i): number for i, (number, _) in enumerate(batch)}
    try:
        response = sqs.send_message_batch(QueueUrl=url, Entries=entries)
    except ClientError as error:
        translated = aws_error(error)
        if isinstance(translated, AwsUnavailable):
            raise AwsUnavailable(f"{translated} ({len(result.message_ids)} sent before it)") from None
        code = error.response.get("Error", {}).get("Code", "")
        text = error.response.get("Error", {}).get("Message", "")
        result.failed += [Failed(numbers[e["Id"]], code, text) for e in entries]
        return False
    sent = {s["Id"]: s["MessageId"] for s in response.get("Successful", [])}
    result.message_ids += [sent[e["Id"]] for e in entries if e["Id"] in sent]
    result.offloaded += sum(1 for e in entries if e["Id"] in sent and is_pointer(e.get("MessageAttributes", {})))
    result.failed += [
        Failed(numbers[f["Id"]], f.get("Code", ""), f.get("Message", "")) for f in response.get("Failed", [])
    ]
    return True
