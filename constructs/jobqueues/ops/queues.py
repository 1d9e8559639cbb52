"""Reading a queue's attributes, where a queue deleted outside its stack is an answer, not a failure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jobqueues.ops.errors import error_code

#: A queue's message counts, as SQS approximates them: visible, in flight, delayed.
MESSAGE_COUNTS = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)
#: The error codes of a queue that does not exist (the JSON protocol's and the query protocol's).
NO_QUEUE = frozenset({"QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue"})


def queue_attributes(sqs: Any, url: str, names: Sequence[str]) -> dict[str, str] | None:
    """The attributes ``names`` of the queue at ``url``; ``None`` when it no longer exists."""
    from botocore.exceptions import ClientError

    try:
        response = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(names))
    except ClientError as error:
        if error_code(error) in NO_QUEUE:
            return None
        raise
    return dict(response.get("Attributes", {}))


def message_counts(sqs: Any, url: str) -> tuple[int, int, int]:
    """The visible, in-flight and delayed messages of the queue at ``url`` (:data:`MESSAGE_COUNTS`)."""
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(MESSAGE_COUNTS))["Attributes"]
    visible, in_flight, delayed = (int(attributes.get(name, 0)) for name in MESSAGE_COUNTS)
    return visible, in_flight, delayed
