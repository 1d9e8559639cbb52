"""SQS: one receive per visible message, FIFO groups redelivered in order, ``RedriveAllowPolicy`` returned, one
kind of encryption per queue."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from moto.sqs.models import Queue, SQSBackend

#: A long poll looks for messages again at least every RECEIVE_RECHECK_MAX_S, and never within RECEIVE_RECHECK_MIN_S.
RECEIVE_RECHECK_MIN_S = 0.02
RECEIVE_RECHECK_MAX_S = 1.0
#: Held by each receive's pass over a queue and by each visibility change: both read and change a queue's set of
#: messages in flight, which moto_server's request threads would otherwise change under each other.
_IN_FLIGHT_LOCK = threading.Lock()


def make_fifo_redelivery_ordered(backend: type[SQSBackend] = SQSBackend) -> None:
    """Redeliver a FIFO message group from its first message when several of its leases run out, as SQS does.

    moto takes a message out of its pending set only when its scan reaches it visible again, and then recomputes
    the groups still pending. A consumer that crashed holding a group's #0..#2 left all three pending: the scan
    finds the group still pending at #0 and #1 (skipped), no longer at #2, and delivers #2 first. Here every
    message whose lease ran out leaves the pending set before the scan, so the group is free from its first
    message. Apply it before :func:`make_sqs_receives_atomic`, whose lock then covers it and whose passes do not
    wait (a lease that ran out during one of moto's own long polls, or within one pass, would go unseen here).

    A lease that lapsed and was then extended (a late heartbeat, which SQS accepts while no one else received the
    message) makes the message invisible again, and so in flight: SQS hands out none of its group meanwhile. moto
    had taken it out of its pending set when a receive found it visible, and left it out, so the group's next
    message went first once its own lease ran out.
    """
    original = backend.receive_message
    original_change = backend.change_message_visibility

    def receive_message(
        self: SQSBackend,
        queue_name: str,
        count: int,
        wait_seconds_timeout: int,
        visibility_timeout: int,
        message_attribute_names: list[str] | None = None,
    ) -> Any:
        pending = self.get_queue(queue_name).pending_messages
        pending.difference_update([message for message in pending if message.visible])
        return original(self, queue_name, count, wait_seconds_timeout, visibility_timeout, message_attribute_names)

    def change_message_visibility(
        self: SQSBackend, queue_name: str, receipt_handle: str, visibility_timeout: int
    ) -> None:
        with _IN_FLIGHT_LOCK:
            original_change(self, queue_name, receipt_handle, visibility_timeout)
            queue = self.get_queue(queue_name)
            for message in queue._messages:
                if message.had_receipt_handle(receipt_handle) and not message.visible:
                    queue.pending_messages.add(message)

    backend.receive_message = receive_message  # type: ignore[method-assign]
    backend.change_message_visibility = change_message_visibility  # type: ignore[method-assign]


def make_sqs_receives_atomic(backend: type[SQSBackend] = SQSBackend) -> None:
    """Hand each visible message to one ReceiveMessage only, as SQS does within a visibility timeout.

    moto checks that a message is visible, then marks it received, with no lock between, and moto_server
    serves requests on threads: two concurrent receives could both take one message (the fault fleet saw it).
    Here each pass over a queue holds one lock (shared by all queues and visibility changes: passes are short); a
    long poll waits for new messages outside it.
    """
    original = backend.receive_message
    lock = _IN_FLIGHT_LOCK

    def receive_message(
        self: SQSBackend,
        queue_name: str,
        count: int,
        wait_seconds_timeout: int,
        visibility_timeout: int,
        message_attribute_names: list[str] | None = None,
    ) -> Any:
        deadline = time.monotonic() + (wait_seconds_timeout or 0)
        while True:
            with lock:
                result = original(self, queue_name, count, 0, visibility_timeout, message_attribute_names)
            remaining = deadline - time.monotonic()
            if result or remaining <= 0:
                return result
            waited = time.monotonic()
            self.get_queue(queue_name).wait_for_messages(min(RECEIVE_RECHECK_MAX_S, remaining))  # type: ignore[arg-type]
            # Visible messages none can take (a FIFO group in flight) end the wait at once: do not spin.
            time.sleep(max(0.0, RECEIVE_RECHECK_MIN_S - (time.monotonic() - waited)))

    backend.receive_message = receive_message  # type: ignore[method-assign]


def report_redrive_allow_policy() -> None:
    """Return ``RedriveAllowPolicy`` from ``GetQueueAttributes``: moto stores it but leaves it out."""
    original = Queue.attributes

    def attributes(self: Queue) -> dict[str, Any]:
        result: dict[str, Any] = original.fget(self)  # type: ignore[attr-defined]
        policy = getattr(self, "redrive_allow_policy", None)
        if policy:
            result["RedriveAllowPolicy"] = policy if isinstance(policy, str) else json.dumps(policy)
        return result

    Queue.attributes = property(attributes)  # type: ignore[method-assign,assignment]


def keep_one_queue_encryption() -> None:
    """Give a queue one kind of server-side encryption, as SQS does: SSE-KMS or SSE-SQS.

    moto enables SSE-SQS on every queue, so a queue with a ``KmsMasterKeyId`` read back with
    ``SqsManagedSseEnabled`` "true" as well, and a template's wrong encryption could not be told. Here a KMS key
    turns SSE-SQS off, and turning SSE-SQS on drops the KMS key.
    """
    original = Queue._set_attributes

    def _set_attributes(self: Queue, attributes: dict[str, Any], now: float | None = None) -> None:
        original(self, attributes, now)
        if attributes.get("KmsMasterKeyId"):
            self.sqs_managed_sse_enabled = False  # type: ignore[attr-defined]
        elif str(attributes.get("SqsManagedSseEnabled", "")).lower() == "true":
            self.kms_master_key_id = None  # type: ignore[attr-defined]

    Queue._set_attributes = _set_attributes  # type: ignore[method-assign]


def make_retention_check_constant_time(backend: type[SQSBackend] = SQSBackend) -> None:
    """Check a received message's retention from the queue's one attribute.

    moto computes every attribute of the queue for each message a receive returns, and three of them count the
    queue's messages, so a receive of 10 from a queue of n messages costs 30 scans of n: a redrive of 1,000
    messages spent most of its time there. Same rule, same result, one attribute read.
    """

    def is_message_valid_based_on_retention_period(self: SQSBackend, queue_name: str, message: Any) -> bool:
        retention_period = int(self.get_queue(queue_name).message_retention_period)  # type: ignore[attr-defined]
        return bool(retention_period + message.sent_timestamp / 1000 > time.time())

    backend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period  # type: ignore[method-assign]
