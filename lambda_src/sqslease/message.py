"""What a handler receives besides the body: ids, attributes, receive count and its lease."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from sqslease.lease import Lease
from sqslease.payload_pointer import PayloadPointer


@dataclass(slots=True)  # no __dict__ a message: the Lambda adapter builds one a record
class Message:
    """One received SQS message.

    ``lease.lost`` turns True if SQS stops honouring the receipt handle (the message may be delivered to
    someone else); long handlers can check it and stop early.

    ``retries_in_process``: the runs of this delivery before this one. A FIFO consumer retries a failed message
    without releasing it (docs/sqslease.md, "FIFO queues"), so SQS does not count those runs:
    :attr:`receive_count` adds them.

    ``pointer``: where the payload of a message sent as a pointer (the AWS SQS Extended Client's wire format) is
    kept; :attr:`body` is then the payload, read before the handler runs (:mod:`sqslease.payload_pointer`), and
    ``pointer.size`` its size in bytes. ``None`` for an ordinary message.
    """

    message_id: str
    receipt_handle: str
    body: str
    queue_url: str
    lease: Lease
    attributes: dict[str, str] = field(default_factory=dict)
    message_attributes: dict[str, Any] = field(default_factory=dict)
    retries_in_process: int = 0
    pointer: PayloadPointer | None = None

    @property
    def receive_count(self) -> int:
        """The attempt this run is: ``ApproximateReceiveCount`` (1 on the first delivery) plus
        :attr:`retries_in_process`, i.e. what SQS's count would be had each retry been a redelivery."""
        # read here, not through sqs_receive_count: the runtime asks this of every run (a call less a record)
        return int(self.attributes.get("ApproximateReceiveCount", "1")) + self.retries_in_process

    @property
    def sqs_receive_count(self) -> int:
        """``ApproximateReceiveCount`` as SQS counts it: the deliveries, without the retries in process."""
        return self.receive_count - self.retries_in_process

    def queue_time_ms(self, now_ms: float) -> float | None:
        """Milliseconds from ``SentTimestamp`` (when SQS accepted the message, its delay and earlier attempts
        included) to ``now_ms`` (wall clock, ms since the epoch); ``None`` without a ``SentTimestamp``.

        Never negative: a consumer clock behind SQS's gives 0, since CloudWatch computes no percentile of a
        metric with a negative value.
        """
        sent = self.attributes.get("SentTimestamp")
        if not isinstance(sent, str) or not sent.isdigit():
            return None  # SQS always sends one when asked; a hand-made Message may have none
        queued = now_ms - int(sent)
        return queued if queued > 0 else 0.0  # max(0.0, queued) without its call (asked of every run)

    @property
    def sqs_body(self) -> str:
        """The body as SQS holds it: the pointer's for a payload read from S3, else :attr:`body`."""
        return self.body if self.pointer is None else self.pointer.body

    @property
    def message_group_id(self) -> str | None:
        return self.attributes.get("MessageGroupId")

    @classmethod
    def from_sqs(cls, raw: dict[str, Any], queue_url: str, lease: Lease) -> Message:
        """From one entry of a boto3 ``receive_message`` response."""
        return cls(
            message_id=raw["MessageId"],
            receipt_handle=raw["ReceiptHandle"],
            body=raw.get("Body", ""),
            queue_url=queue_url,
            lease=lease,
            attributes=dict(raw.get("Attributes", {})),
            message_attributes=dict(raw.get("MessageAttributes", {})),
        )

    @classmethod
    def from_lambda_record(cls, record: dict[str, Any], queue_url: str, lease: Lease) -> Message:
        """From one record of an SQS-triggered Lambda event (camelCase keys)."""
        raw_attributes = record.get("messageAttributes")
        return cls(
            record["messageId"],
            record["receiptHandle"],
            record.get("body", ""),
            queue_url,
            lease,
            dict(record.get("attributes", _NONE)),  # a copy: a handler changes neither the event nor what we read
            _boto3_attributes(raw_attributes) if raw_attributes else {},  # most records have none: no comprehension
        )


#: A record's attributes when it has none, copied (a ``{}`` default was a dict built a record).
_NONE: dict[str, str] = {}


def _boto3_attributes(raw: dict[str, Any]) -> dict[str, Any]:
    """A Lambda record's ``messageAttributes`` in boto3's shape (``StringValue``...), those that are dicts."""
    return {
        name: {
            k[0].upper() + k[1:]: v
            for k, v in value.items()
            if k in ("stringValue", "binaryValue", "dataType") and v is not None
        }
        for name, value in raw.items()
        if isinstance(value, dict)
    }


@functools.lru_cache(maxsize=64)  # pure, and asked every Lambda invocation with its queue's ARN
def queue_url_from_arn(arn: str) -> str:
    """``arn:aws:sqs:REGION:ACCOUNT:NAME`` -> ``https://sqs.REGION.amazonaws.com/ACCOUNT/NAME``."""
    _, partition, _, region, account, name = arn.split(":", 5)
    suffix = "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"
    return f"https://sqs.{region}.{suffix}/{account}/{name}"
