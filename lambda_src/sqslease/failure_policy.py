"""How a failed message is settled: by the failure policy (lapse, visible now, backoff), or sent to the dead-letter
queue (a non-retryable error; a FIFO message whose attempts are spent, :mod:`sqslease.fifo_retry`). See
:mod:`sqslease.processor`."""

from __future__ import annotations

import logging
from typing import Any

from sqslease.fifo_retry import FifoRetry
from sqslease.message import Message
from sqslease.retry import backoff_delay
from sqslease.settings import FailurePolicy, LeaseSettings
from sqslease.settle import Settler

logger = logging.getLogger("sqslease")

#: SQS's limit of message attributes: the DLQ copy adds sqslease's (below, in this order) while there is room.
MAX_DLQ_ATTRIBUTES = 10
#: The attributes of a DLQ copy sqslease sends itself (``jobqueues dlq list`` reads them): the last error's repr,
#: the original's ``MessageId`` (what the consumer's EMF lines name), the attempts it failed (the receive count
#: of its last run, what SQS's count would be) and why it was dead-lettered (:data:`DEAD_LETTER_REASONS`).
DLQ_ERROR_ATTRIBUTE = "sqslease.error"
DLQ_SOURCE_ID_ATTRIBUTE = "sqslease.source_message_id"
DLQ_RECEIVE_COUNT_ATTRIBUTE = "sqslease.receive_count"
DLQ_REASON_ATTRIBUTE = "sqslease.reason"
#: ``non_retryable``: an error of ``settings.non_retryable``, on its first failure. ``max_receive_count``: a FIFO
#: message that failed ``settings.max_receive_count`` times, retried in process (:mod:`sqslease.fifo_retry`).
NON_RETRYABLE, ATTEMPTS_SPENT = "non_retryable", "max_receive_count"
DEAD_LETTER_REASONS = (NON_RETRYABLE, ATTEMPTS_SPENT)
#: The prefix of sqslease's own attributes: a redriven copy's are dropped before it is dead-lettered again.
ATTRIBUTE_PREFIX = "sqslease."


def apply_failure_policy(settler: Settler, settings: LeaseSettings, message: Message) -> None:
    """Settle a failed message by ``settings.failure_policy``: lapse, visible now, or back off by its receive count."""
    policy = settings.failure_policy
    if policy is FailurePolicy.LAPSE:
        settler.stop_tracking(message.lease)
    elif policy is FailurePolicy.VISIBLE_NOW:
        settler.change_visibility(message.lease, 0)
    else:
        settler.change_visibility(
            message.lease, backoff_delay(message.receive_count, settings.backoff_base, settings.backoff_max)
        )


def settle_failure(
    sqs: Any,
    settler: Settler,
    settings: LeaseSettings,
    message: Message,
    error: BaseException,
    fifo_retry: FifoRetry | None,
    delete_on_success: bool,
) -> tuple[str, bool, bool]:
    """Settle a retryable failure: ``(outcome, retry, held)``. By the failure policy, unless ``fifo_retry`` retries
    this FIFO message in process: held (its lease left to the heartbeat) while attempts are left and the consumer
    holds, else sent to the DLQ once they are spent (:mod:`sqslease.fifo_retry`)."""
    if fifo_retry is not None and message.message_group_id is not None:
        if fifo_retry.spent(message):
            outcome, retry = dead_letter(
                sqs, settler, settings, message, error, delete_on_success=delete_on_success, reason=ATTEMPTS_SPENT
            )
            return outcome, retry, False
        if fifo_retry.holds(message):
            return "failure", True, True
    apply_failure_policy(settler, settings, message)
    return "failure", True, False


def retry_delay(settings: LeaseSettings, receive_count: int) -> float:
    """Seconds a consumer waits before it retries in process a message whose run ``receive_count`` failed: what
    the failure policy would have hidden it for (``backoff``: its back-off; ``visible_now``: 0; ``lapse``: a
    visibility timeout, the longest its lease could have had left)."""
    policy = settings.failure_policy
    if policy is FailurePolicy.VISIBLE_NOW:
        return 0.0
    if policy is FailurePolicy.LAPSE:
        return settings.visibility_timeout
    return float(backoff_delay(receive_count, settings.backoff_base, settings.backoff_max))


def dlq_attributes(message: Message, error: BaseException, reason: str) -> dict[str, Any]:
    """The message attributes of ``message``'s DLQ copy: its own (those of an earlier dead-lettering dropped), then
    sqslease's (:data:`DLQ_ERROR_ATTRIBUTE` ...) while SQS's limit of :data:`MAX_DLQ_ATTRIBUTES` leaves room."""
    attributes = {k: v for k, v in message.message_attributes.items() if not k.startswith(ATTRIBUTE_PREFIX)}
    added = (
        (DLQ_ERROR_ATTRIBUTE, "String", repr(error)[:1000]),
        (DLQ_SOURCE_ID_ATTRIBUTE, "String", message.message_id),
        (DLQ_RECEIVE_COUNT_ATTRIBUTE, "Number", str(message.receive_count)),
        (DLQ_REASON_ATTRIBUTE, "String", reason),
    )
    for name, kind, value in added:
        if len(attributes) < MAX_DLQ_ATTRIBUTES:
            attributes[name] = {"DataType": kind, "StringValue": value}
    return attributes


def dead_letter(
    sqs: Any,
    settler: Settler,
    settings: LeaseSettings,
    message: Message,
    error: BaseException,
    *,
    delete_on_success: bool,
    reason: str = NON_RETRYABLE,
) -> tuple[str, bool]:
    """Send a failed message to ``settings.dead_letter_queue_url`` (:func:`dlq_attributes`; on a FIFO DLQ its group,
    and its ``MessageId`` as deduplication id, so a second copy sent within SQS's 5 minutes is dropped), then delete
    it (``delete_on_success``) or leave it for Lambda to delete: sent first, so a crash in between leaves a copy in
    each queue, never none. Returns its outcome and whether it is retried: without a DLQ, or when the send fails,
    the failure policy settles it instead (``failure``, retried).

    :param reason: why (:data:`DEAD_LETTER_REASONS`). Default :data:`NON_RETRYABLE`.
    """
    dlq = settings.dead_letter_queue_url
    if not dlq:
        logger.error(
            "message %s failed (%s: %r) but no dead_letter_queue_url is set; applying the failure policy instead",
            message.message_id,
            reason,
            error,
        )
        apply_failure_policy(settler, settings, message)
        return "failure", True
    attributes = dlq_attributes(message, error, reason)
    # A payload read from S3 goes as its pointer: the DLQ copy points at the same object, kept for it.
    request: dict[str, Any] = {"QueueUrl": dlq, "MessageBody": message.sqs_body, "MessageAttributes": attributes}
    if dlq.endswith(".fifo"):
        request["MessageGroupId"] = message.message_group_id or message.message_id
        request["MessageDeduplicationId"] = message.message_id
    try:
        sqs.send_message(**request)
    except Exception:
        logger.exception(
            "could not send message %s to the DLQ; applying the failure policy so it is retried",
            message.message_id,
        )
        apply_failure_policy(settler, settings, message)
        return "failure", True
    logger.error(
        "message %s failed (%r, receive %d): sent to the DLQ (%s)",
        message.message_id,
        error,
        message.receive_count,
        reason,
    )
    if delete_on_success:
        settler.delete(message.lease)
    # else: reported as a success, so Lambda deletes it after the invocation; extended until then.
    return "dead_lettered", False
