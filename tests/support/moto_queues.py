"""Queues on the local moto_server: create fresh ones, send, receive without deleting, count."""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass
from typing import Any

from jobqueues.emulator.server import LocalServer

_names = itertools.count()


@dataclass
class Queues:
    url: str
    dlq_url: str | None = None


def make_queue(server: LocalServer, vt: int = 30, max_receive_count: int | None = None, fifo: bool = False) -> Queues:
    """A fresh queue (and DLQ when ``max_receive_count`` is given) with a unique name; ``vt`` in seconds."""
    sqs = server.client("sqs")
    suffix = ".fifo" if fifo else ""
    name = f"t{next(_names)}-{int(time.time() * 1000) % 10_000_000}"
    dlq_url = None
    attributes: dict[str, str] = {"VisibilityTimeout": str(vt)}
    if fifo:
        attributes["FifoQueue"] = "true"
    if max_receive_count is not None:
        dlq_attrs = {"FifoQueue": "true"} if fifo else {}
        dlq_url = sqs.create_queue(QueueName=f"{name}-dlq{suffix}", Attributes=dlq_attrs)["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        attributes["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive_count})
    url = sqs.create_queue(QueueName=f"{name}{suffix}", Attributes=attributes)["QueueUrl"]
    return Queues(url, dlq_url)


def send(server: LocalServer, url: str, bodies: list[str]) -> None:
    sqs = server.client("sqs")
    for start in range(0, len(bodies), 10):
        entries = [{"Id": str(i), "MessageBody": b} for i, b in enumerate(bodies[start : start + 10])]
        response = sqs.send_message_batch(QueueUrl=url, Entries=entries)
        assert not response.get("Failed"), response


def receive_all(server: LocalServer, url: str, wait_s: float = 0, vt: int | None = None) -> list[dict]:
    """Everything visible now (polling up to ``wait_s`` seconds), without deleting it."""
    sqs = server.client("sqs")
    found: list[dict] = []
    deadline = time.monotonic() + wait_s
    while True:
        kwargs: dict[str, Any] = {"QueueUrl": url, "MaxNumberOfMessages": 10, "MessageSystemAttributeNames": ["All"]}
        if vt is not None:
            kwargs["VisibilityTimeout"] = vt
        batch = sqs.receive_message(**kwargs).get("Messages", [])
        found.extend(batch)
        if not batch and time.monotonic() >= deadline:
            return found
        if not batch:
            time.sleep(0.05)


def receive_when_visible(server: LocalServer, url: str, timeout_s: float) -> tuple[list[dict], float]:
    """Poll until messages are visible; return them and when (monotonic) they were received."""
    sqs = server.client("sqs")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]).get(
            "Messages", []
        )
        if found:
            return found, time.monotonic()
        time.sleep(0.05)
    return [], time.monotonic()


def counts(server: LocalServer, url: str) -> tuple[int, int]:
    """(visible, in flight) as SQS reports them."""
    a = server.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return int(a["ApproximateNumberOfMessages"]), int(a["ApproximateNumberOfMessagesNotVisible"])


def take_all(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every message of ``url`` (a boto3 SQS client's queue) in the order received, with its system and message
    attributes, deleted: the queue is left empty."""
    found: list[dict[str, Any]] = []
    while messages := sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=10,
        MessageSystemAttributeNames=["All"],
        MessageAttributeNames=["All"],
        WaitTimeSeconds=0,
    ).get("Messages", []):
        found += messages
        entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
        sqs.delete_message_batch(QueueUrl=url, Entries=entries)
    return found
