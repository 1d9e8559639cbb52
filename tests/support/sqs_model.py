"""An in-process model of one SQS queue's visibility rules, for the stateful test of the lease runtime
(``tests/test_sqslease_statemachine.py``). It answers the calls the worker makes, as a boto3 client would, on an
injected clock (:class:`support.fakes.FakeClock`): nothing happens by itself, and every deadline passes exactly
when the test moves the clock.

What it models (SQS's API reference and developer guide):

- **Receipt handles.** Each receive hands a message out with a new receipt handle and counts a receive
  (``ApproximateReceiveCount``); the lease (visibility timeout) counts from the receive, or from the latest
  ChangeMessageVisibility, whose timeout counts from the call. A message is in flight until then, visible after.
- **Stale handles** (the message was received again since). DeleteMessage "succeeds, but the message is not
  deleted" (API reference): answered, not applied. For ChangeMessageVisibility the documentation says nothing; the
  model takes one of two behaviours per run (``stale_changes``): ``"refuse"`` (ReceiptHandleIsInvalid) or
  ``"apply"`` to the message's current delivery, as moto does.
- **Expired handles** (the latest handle, its visibility timeout over, not received again). ChangeMessageVisibility:
  MessageNotInflight. DeleteMessage: on a FIFO queue InvalidParameterValue ("The receipt handle has expired"); on a
  standard queue applied (AWS's knowledge center: an old receipt handle "might still work" there).
- **The 12 h cap.** A visibility timeout is at most ``max_total_visibility`` seconds from the receive (12 h;
  a test scales it down): a change beyond it is refused ("...beyond the limit"), never shortened to fit.
- **FIFO groups.** No message of a group is handed out while one of its messages is in flight; a group's messages
  come in send order, as many of one group as fit before the next group's.
- **The redrive policy.** A receive that would hand out a message received ``max_receive_count`` times moves it to
  the DLQ instead (by SQS). The worker's own DLQ sends (SendMessage) land in :attr:`SqsModel.dlq` too; on a FIFO
  DLQ a deduplication id seen within 5 minutes is dropped.

Faults, per request, held requests and outages: :mod:`support.sqs_faults`. A test watches what happens
through :attr:`SqsModel.observer` (called under the model's lock, on the caller's thread).
"""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from support.fakes import FakeClock
from support.sqs_faults import CMV, DELETE, RECEIVE, SEND, FaultedRequests

#: Seconds (of the FIFO DLQ's clock) within which a MessageDeduplicationId drops a second copy.
DEDUPLICATION_INTERVAL_S = 300


@dataclass(eq=False)
class QueuedMessage:
    """One message of the queue, and where it is."""

    message_id: str
    body: str
    group: str | None
    sent_ms: int
    receive_count: int = 0
    handle: str | None = None  # the latest receipt handle
    received_at: float = 0.0  # when the latest receive handed it out: the 12 h cap counts from it
    visible_at: float = 0.0  # in flight while the clock is before this
    state: str = "queued"  # queued, deleted, dead (moved to the DLQ by SQS)


@dataclass(eq=False)
class Delivery:
    """One receive of a message: its receipt handle and the deadline last set under it."""

    handle: str
    message: QueuedMessage
    received_at: float
    deadline: float


class SqsModel(FaultedRequests):
    """One queue (standard, or FIFO for a ``.fifo`` ``queue_url``) and its DLQ. See the module docstring.

    :param clock: the injected clock, seconds. The model reads ``clock.now`` (not a read a thread is counted for);
        a request decided before the clock moved is applied ``late`` (:class:`support.sqs_faults.FaultedRequests`),
        and the observer is told.
    :param max_receive_count: the redrive policy's ``maxReceiveCount``.
    :param max_total_visibility: SQS's 12 h cap, in seconds (scaled down by a test). Default 43,200.
    :param stale_changes: ``"refuse"`` or ``"apply"`` (a ChangeMessageVisibility with a stale handle).
    :param poll_s: real seconds an empty receive waits for a message before it answers. Default 0.02.
    """

    def __init__(
        self,
        queue_url: str,
        dlq_url: str,
        clock: FakeClock,
        max_receive_count: int,
        max_total_visibility: float = 43_200,
        stale_changes: str = "refuse",
        poll_s: float = 0.02,
    ) -> None:
        assert stale_changes in ("refuse", "apply")
        super().__init__(clock)
        self.queue_url, self.dlq_url = queue_url, dlq_url
        self.fifo = queue_url.endswith(".fifo")
        self.max_receive_count = max_receive_count
        self.max_total_visibility = max_total_visibility
        self.stale_changes = stale_changes
        self.poll_s = poll_s
        self.messages: list[QueuedMessage] = []
        self.deliveries: dict[str, Delivery] = {}
        #: Every DLQ message: ``{"by": "sqs" | "consumer", "message_id": ..., "body": ..., "request": ...}``.
        self.dlq: list[dict[str, Any]] = []
        #: ``observer(event, **details)``, called under the lock: ``receive``, ``delete``, ``change``, ``dead``,
        #: ``send_failed`` and ``refused`` (see where each is called).
        self.observer: Callable[..., None] = lambda event, **details: None
        self.empty_polls = 0  # receives answered empty, or failed: a test's sign that the receiver caught up
        self.version = 0  # bumped by every change of state but an extension
        self._ids = itertools.count(1)
        self._arrived = threading.Condition(self._lock)

    # -- the test's side ------------------------------------------------------------------------------------------
    def send(self, body: str, group: str | None = None, sent_ms: int = 1_800_000_000_000) -> QueuedMessage:
        with self._arrived:
            message = QueuedMessage(f"m{next(self._ids)}-{body}", body, group if self.fifo else None, sent_ms)
            self.messages.append(message)
            self.version += 1
            self._arrived.notify_all()
            return message

    def in_flight(self, handle: str) -> bool:
        """Whether ``handle`` is its message's latest and the message is in flight (not deleted, not visible)."""
        with self._lock:
            delivery = self.deliveries.get(handle)
            if delivery is None:
                return False
            message = delivery.message
            return message.state == "queued" and message.handle == handle and self.clock.now < message.visible_at

    def group_before(self, message_id: str) -> list[tuple[str, str]]:
        """``(message id, state)`` of the messages sent before ``message_id`` in its FIFO group, in order."""
        with self._lock:
            (message,) = [m for m in self.messages if m.message_id == message_id]
            if message.group is None:
                return []
            index = self.messages.index(message)
            return [(m.message_id, m.state) for m in self.messages[:index] if m.group == message.group]

    def delivery(self, handle: str) -> Delivery | None:
        with self._lock:
            return self.deliveries.get(handle)

    # -- the client's methods ---------------------------------------------------------------------------------------
    def receive_message(self, **params: Any) -> dict[str, Any]:
        try:
            if self._fault(RECEIVE, [params]) != "ok":  # a timeout: a receive never sent (nothing handed out)
                from botocore.exceptions import ConnectTimeoutError

                raise ConnectTimeoutError(endpoint_url="http://sqs-model")
        except Exception:
            with self._lock:
                self.empty_polls += 1  # the receiver backs off (real time): it did what it could
            raise
        with self._arrived:
            taken = self._take(params["MaxNumberOfMessages"], params["VisibilityTimeout"])
            if not taken:
                self._arrived.wait(self.poll_s)
                taken = self._take(params["MaxNumberOfMessages"], params["VisibilityTimeout"])
            if not taken:
                self.empty_polls += 1
                return {}
            return {"Messages": [self._answer(delivery) for delivery in taken]}

    def change_message_visibility_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        return self._batch(
            CMV, Entries, lambda e, late: self._change(e["ReceiptHandle"], int(e["VisibilityTimeout"]), late)
        )

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        return self._batch(DELETE, Entries, lambda e, late: self._delete(e["ReceiptHandle"], late))

    def send_message(self, **request: Any) -> dict[str, Any]:
        def apply(late: bool) -> dict[str, Any]:
            dedup = request.get("MessageDeduplicationId")
            now = self.clock.now
            seen = [d for d in self.dlq if d["dedup"] == dedup and now - d["at"] < DEDUPLICATION_INTERVAL_S]
            if dedup is None or not seen:
                source = request.get("MessageAttributes", {}).get("sqslease.source_message_id", {})
                self._dead(None, "consumer", request, source.get("StringValue"), dedup)
            return {"MessageId": f"dlq-{len(self.dlq)}"}

        return self._request(SEND, [request], apply)

    def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> dict[str, Any]:
        with self._lock:
            now = self.clock.now
            in_flight = sum(1 for m in self.messages if m.state == "queued" and now < m.visible_at)
            return {"Attributes": {"ApproximateNumberOfMessagesNotVisible": str(in_flight)}}

    # -- semantics ------------------------------------------------------------------------------------------------
    def _take(self, limit: int, visibility_timeout: int) -> list[Delivery]:
        now = self.clock.now
        queued = [m for m in self.messages if m.state == "queued"]
        blocked = {m.group for m in queued if self.fifo and now < m.visible_at}
        by_group: dict[str | None, list[QueuedMessage]] = collections.defaultdict(list)
        for message in queued:  # FIFO: a group's messages together, groups in the order of their first message
            if now >= message.visible_at and message.group not in blocked:
                by_group[message.group if self.fifo else message.message_id].append(message)
        taken: list[Delivery] = []
        for message in itertools.chain.from_iterable(by_group.values()):
            if len(taken) == limit:
                break
            if message.receive_count >= self.max_receive_count:  # the redrive policy: to the DLQ instead
                self._dead(message, "sqs", None, message.message_id, None)
                continue
            message.receive_count += 1
            message.handle = f"rh-{message.message_id}-{next(self._ids)}"
            message.received_at, message.visible_at = now, now + visibility_timeout
            delivery = Delivery(message.handle, message, now, message.visible_at)
            self.deliveries[message.handle] = delivery
            taken.append(delivery)
            self.version += 1
            self.observer("receive", delivery=delivery)
        return taken

    def _answer(self, delivery: Delivery) -> dict[str, Any]:
        message = delivery.message
        attributes = {"ApproximateReceiveCount": str(message.receive_count), "SentTimestamp": str(message.sent_ms)}
        if message.group is not None:
            attributes["MessageGroupId"] = message.group
        return {"MessageId": message.message_id, "ReceiptHandle": delivery.handle, "Body": message.body,
                "Attributes": attributes}  # fmt: skip

    def _change(self, handle: str, seconds: int, late: bool) -> tuple[str, str] | None:
        """Apply one ChangeMessageVisibility entry; ``(code, message)`` when refused."""
        now = self.clock.now
        delivery = self.deliveries.get(handle)
        if delivery is None:
            return self._refused(handle, "ReceiptHandleIsInvalid", "The input receipt handle is invalid.", late)
        message = delivery.message
        if message.state != "queued":
            return self._refused(handle, "InvalidParameterValue", "Message does not exist or is not available.", late)
        if message.handle != handle:
            if self.stale_changes == "refuse":
                return self._refused(handle, "ReceiptHandleIsInvalid", "The receipt handle is not the latest.", late)
            delivery = self.deliveries[message.handle]  # applied to the current delivery, as moto does
        if now >= message.visible_at:
            return self._refused(handle, "AWS.SimpleQueueService.MessageNotInflight", "Message is not in flight.", late)
        if now + seconds - message.received_at > self.max_total_visibility:
            return self._refused(
                handle,
                "InvalidParameterValue",
                f"Value {seconds} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for "
                f"the message is beyond the limit [{self.max_total_visibility:g} seconds].",
                late,
            )
        before = message.visible_at
        message.visible_at = delivery.deadline = now + seconds
        if seconds == 0 or message.visible_at < before - 1:  # a release or a back-off, not an extension
            self.version += 1
        self.observer("change", delivery=delivery, handle=handle, seconds=seconds, before=before, late=late)
        return None

    def _delete(self, handle: str, late: bool) -> tuple[str, str] | None:
        delivery = self.deliveries.get(handle)
        if delivery is None:
            return self._refused(handle, "ReceiptHandleIsInvalid", "The input receipt handle is invalid.", late)
        message = delivery.message
        if message.state != "queued" or message.handle != handle:
            return None  # deleted already, or a stale handle: succeeds, not applied
        if self.fifo and self.clock.now >= message.visible_at:
            return self._refused(handle, "InvalidParameterValue", "Reason: The receipt handle has expired.", late)
        message.state = "deleted"
        self.version += 1
        self.observer("delete", delivery=delivery, late=late)
        return None

    def _dead(self, message: QueuedMessage | None, by: str, request: Any, source: str | None, dedup: Any) -> None:
        if message is not None:
            message.state = "dead"
        body = message.body if message is not None else request["MessageBody"]
        entry = {"by": by, "message_id": source, "body": body, "request": request, "dedup": dedup, "at": self.clock.now}
        self.dlq.append(entry)
        self.version += 1
        self.observer("dead", entry=entry)

    def _refused(self, handle: str, code: str, text: str, late: bool) -> tuple[str, str]:
        self.observer("refused", handle=handle, code=code, text=text, late=late)
        return code, text

    def _batch(self, operation: str, entries: list[dict[str, Any]], one: Callable[..., Any]) -> dict[str, Any]:
        def apply(late: bool) -> dict[str, Any]:
            successful, failed = [], []
            for entry in entries:
                refused = one(entry, late)
                if refused is None:
                    successful.append({"Id": entry["Id"]})
                else:
                    failed.append({"Id": entry["Id"], "SenderFault": True, "Code": refused[0], "Message": refused[1]})
            return {"Successful": successful, "Failed": failed}

        return self._request(operation, entries, apply)
