"""Lambda's SQS event, built from messages really received from moto_server or from bodies alone."""

from __future__ import annotations

import time

from jobqueues.emulator.server import LocalServer
from support.moto_queues import receive_all

#: The queue of :func:`fake_event`'s records (their ARN names it).
FAKE_QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/quick"
FAKE_QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:quick"


def lambda_event(server: LocalServer, url: str, vt: int) -> dict:
    """Receive like Lambda's poller (visibility ``vt`` seconds) and shape the records like Lambda's SQS event."""
    arn = server.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m["Attributes"],
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": arn,
            }
            for m in receive_all(server, url, vt=vt)
        ]
    }


def fake_event(
    bodies: list[str], arn: str = FAKE_QUEUE_ARN, groups: list[str] | None = None, sent_ms: int | None = None
) -> dict:
    """Lambda's SQS event for ``bodies`` (message ids ``m0``, ``m1``, ...; receipt handles ``rh-0``, ...), without a
    queue behind it (for :class:`support.fakes.FakeSQS`). ``groups``: each record's ``MessageGroupId`` (FIFO).
    ``sent_ms``: each record's ``SentTimestamp`` (ms since the epoch), which Lambda always sets. Default: now."""
    sent = str(int(time.time() * 1000) if sent_ms is None else sent_ms)
    return {
        "Records": [
            {
                "messageId": f"m{i}",
                "receiptHandle": f"rh-{i}",
                "body": body,
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": sent,
                    **({"MessageGroupId": groups[i]} if groups else {}),
                },
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": arn,
            }
            for i, body in enumerate(bodies)
        ]
    }
