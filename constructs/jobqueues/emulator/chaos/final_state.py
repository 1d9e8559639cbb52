"""Reading the message ids left in a job type's queues at the end of a chaos run (for the report's "lost").

SQS has no way to list a queue without receiving from it, so this receives: run it after the consumers stopped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from jobqueues.emulator.chaos.report import QueueState
from jobqueues.ops.queues import message_counts
from sqslease.failure_policy import DLQ_SOURCE_ID_ATTRIBUTE  # on the copy sqslease dead-letters itself


def queue_ids(
    sqs: Any,
    queue_url: str,
    timeout_s: float = 0.0,
    consume: bool = False,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> frozenset[str]:
    """The ids of the messages in ``queue_url`` (a boto3 SQS client's), a copy sqslease dead-lettered by the id
    of the message it came from.

    Receives until every message the queue counts (visible, in flight, delayed) was seen, or ``timeout_s`` passed
    (default 0: one pass over what is visible now). Messages in flight become visible when their visibility
    timeout ends: give ``timeout_s`` the queue's visibility timeout to list those a killed worker held. What it
    lists stays hidden for ``timeout_s`` + 1 s (each is seen once), or is deleted if ``consume`` (a FIFO queue
    hands out nothing behind a hidden message of the same group: consume to list deep groups). A receive counts
    towards ``maxReceiveCount``: the source queue's messages may move to the DLQ while listed, so read the source
    before its DLQ.
    """
    seen: set[str] = set()
    hide = math.ceil(timeout_s) + 1
    deadline = clock() + timeout_s
    while True:
        messages = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=hide,
            WaitTimeSeconds=0,
            MessageAttributeNames=[DLQ_SOURCE_ID_ATTRIBUTE],
        ).get("Messages", [])
        for message in messages:
            source = message.get("MessageAttributes", {}).get(DLQ_SOURCE_ID_ATTRIBUTE, {}).get("StringValue")
            seen.add(source or message["MessageId"])
            if consume:
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        if messages:
            continue
        left = sum(message_counts(sqs, queue_url)) - (0 if consume else len(seen))
        if left <= 0 or clock() >= deadline:
            return frozenset(seen)
        sleep(0.2)


def read_queue_state(
    sqs: Any, name: str, queue_url: str, dead_letter_queue_url: str | None, timeout_s: float = 0.0
) -> QueueState:
    """The :class:`QueueState` of deployment ``name`` (``STACK/JOB_TYPE``, the report's row): :func:`queue_ids` of
    its source queue (``timeout_s``, see there), then of its DLQ (one pass)."""
    queued = queue_ids(sqs, queue_url, timeout_s)
    dead = queue_ids(sqs, dead_letter_queue_url) if dead_letter_queue_url else frozenset()
    return QueueState(name, queue_url, queued, dead)
