"""FIFO retries in process: a message that fails until the DLQ goes there alone, never with its group's later ones.

SQS hands out none of a FIFO group's messages while one of them is in flight, and counts a receive for each message
it hands out. Released to be retried, a failed message would take the group's later messages received with it back
to the queue, each having spent a receive: a message that fails until the DLQ would take them there too, unrun.

So a consumer that knows the queue's ``maxReceiveCount`` and DLQ (``LeaseSettings.max_receive_count`` and
``dead_letter_queue_url``) keeps the failed message's lease, and the leases of the group's later messages it holds,
waits what the failure policy would have hidden it for (:func:`sqslease.failure_policy.retry_delay`) and runs it
again. SQS counts no receive for such a retry: ``Message.retries_in_process`` counts them, and
``Message.receive_count`` is what SQS's count would have been. The run whose receive count reaches
``max_receive_count`` is the last: the consumer sends the message to the DLQ itself (group, body and attributes kept,
its ``MessageId`` as deduplication id, :func:`sqslease.failure_policy.dead_letter`), then deletes it, and goes on
with the group in order. Its later messages were never released: their receive counts never grew.

The worker parks the failed message (:class:`sqslease.fifo.ReadyQueue`) while its handlers run other groups; the
Lambda adapter waits in the invocation, while the back-off and a run as long as the failed one fit before its
deadline (:func:`sqslease.invocation_retry.retry_in_invocation`), and otherwise releases the group as without
retries. A worker that does not know the queue's ``maxReceiveCount`` reads it from the queue's ``RedrivePolicy``
(:func:`redrive_policy`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqslease.message import Message
from sqslease.settings import LeaseSettings

logger = logging.getLogger("sqslease")


def always() -> bool:
    return True


@dataclass(frozen=True)
class FifoRetry:
    """The in-process retries of one FIFO queue's consumer.

    :param max_receive_count: the queue's ``maxReceiveCount``: the run with this receive count is the last.
    :param holding: whether a failed message may be held for a retry now. Default: always (the worker says no once
        it drains: then its failures are settled by the failure policy, as without retries).
    """

    max_receive_count: int
    holding: Callable[[], bool] = always

    @classmethod
    def of(cls, settings: LeaseSettings, queue_url: str, holding: Callable[[], bool] = always) -> FifoRetry | None:
        """The retries of a consumer of ``queue_url``: ``None`` unless it is a FIFO queue and ``settings`` give its
        ``max_receive_count`` and ``dead_letter_queue_url``."""
        if not queue_url.endswith(".fifo") or settings.max_receive_count is None or not settings.dead_letter_queue_url:
            return None
        return cls(settings.max_receive_count, holding)

    def spent(self, message: Message) -> bool:
        """Whether ``message``'s run was its last: SQS would move it to the DLQ on its next receive."""
        return message.receive_count >= self.max_receive_count

    def holds(self, message: Message) -> bool:
        """Whether ``message``, failed with attempts left, is kept for a retry rather than released."""
        return message.message_group_id is not None and not self.spent(message) and self.holding()


def redrive_policy(sqs: Any, queue_url: str) -> tuple[int, str] | None:
    """The ``maxReceiveCount`` and DLQ URL of ``queue_url``'s ``RedrivePolicy`` (one GetQueueAttributes), or
    ``None`` when it has none. The DLQ's URL is the queue's with the DLQ's name: SQS requires a DLQ in the source
    queue's account and region, and so the URL works with any endpoint (an emulator's, a VPC endpoint's)."""
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["RedrivePolicy"])["Attributes"]
    raw = attributes.get("RedrivePolicy")
    if not raw:
        return None
    policy = json.loads(raw)
    _, _, _, _, account, name = str(policy["deadLetterTargetArn"]).split(":", 5)
    return int(policy["maxReceiveCount"]), f"{queue_url.rstrip('/').rsplit('/', 2)[0]}/{account}/{name}"


def worker_retries(settings: LeaseSettings, queue_url: str, holding: Callable[[], bool]) -> FifoRetry | None:
    """The worker's retries in process of ``queue_url`` (:mod:`sqslease.fifo_retry`): none without the heartbeat,
    which alone keeps the held leases. A FIFO queue not retried in process although given one of
    ``max_receive_count`` and ``dead_letter_queue_url`` is logged: a failure then releases its group's later
    messages, each spending a receive."""
    retries = FifoRetry.of(settings, queue_url, holding) if settings.heartbeat else None
    told = settings.max_receive_count is not None or settings.dead_letter_queue_url is not None
    if retries is None and queue_url.endswith(".fifo") and told:
        logger.warning(
            "FIFO queue: a failed message is released with its group's later messages, each spending a receive; "
            "to retry it in process, give both max_receive_count and dead_letter_queue_url (the queue's "
            "RedrivePolicy) with the heartbeat on"
        )
    return retries
