"""How a failed message is settled: by the failure policy (lapse, visible now, backoff), or, for a non-retryable
error, sent to the dead-letter queue. See :mod:`sqslease.processor`."""

from __future__ import annotations

import logging
from typing import Any

from sqslease.message import Message
from sqslease.retry import backoff_delay
from sqslease.settings import FailurePolicy, LeaseSettings
from sqslease.settle import Settler

logger = logging.getLogger("sqslease")

#: SQS's limit of message attributes: the DLQ copy adds the error and the source id while there is room.
MAX_DLQ_ATTRIBUTES = 10


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


def dead_letter(
    sqs: Any,
    settler: Settler,
    settings: LeaseSettings,
    message: Message,
    error: BaseException,
    *,
    delete_on_success: bool,
) -> tuple[str, bool]:
    """Send a message that failed with a non-retryable error to ``settings.dead_letter_queue_url`` (its attributes,
    the error and its id added while there is room), then delete it (``delete_on_success``) or leave it for Lambda
    to delete. Returns its outcome and whether it is retried: without a DLQ, or when the send fails, the failure
    policy settles it instead (``failure``, retried)."""
    dlq = settings.dead_letter_queue_url
    if not dlq:
        logger.error(
            "message %s failed with non-retryable %r but no dead_letter_queue_url is set; "
            "applying the failure policy instead",
            message.message_id,
            error,
        )
        apply_failure_policy(settler, settings, message)
        return "failure", True
    attributes = dict(message.message_attributes)
    for name, value in (("sqslease.error", repr(error)[:1000]), ("sqslease.source_message_id", message.message_id)):
        if len(attributes) < MAX_DLQ_ATTRIBUTES:
            attributes[name] = {"DataType": "String", "StringValue": value}
    request: dict[str, Any] = {"QueueUrl": dlq, "MessageBody": message.body, "MessageAttributes": attributes}
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
    logger.error("message %s failed with non-retryable %r: sent to the DLQ", message.message_id, error)
    if delete_on_success:
        settler.delete(message.lease)
    # else: reported as a success, so Lambda deletes it after the invocation; extended until then.
    return "dead_lettered", False
