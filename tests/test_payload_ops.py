"""The ``jobqueues`` command's operations on payloads kept in S3 (the SQS Extended Client's pointers), against
moto_server over HTTP: ``send`` offloads a body over the queue's maximum size to the job type's bucket, ``dlq list``
shows a pointer's size and object, and both ``dlq redrive`` methods keep the pointer (body and size attribute), so
that the redriven message still reads its payload."""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import time
import uuid
from typing import Any

import pytest
from support.moto_queues import take_all

from jobqueues.emulator.server import LocalServer
from jobqueues.ops.discovery import JobType
from jobqueues.ops.dlq import list_dead_letters
from jobqueues.ops.redrive import redrive
from jobqueues.ops.send import PayloadBucket, send
from sqslease.payload_pointer import SIZE_ATTRIBUTE, PayloadStore, offload, parse_pointer

pytestmark = pytest.mark.waits  # mostly waits in real time: started early, beside others' work (tests/conftest.py)

LIMIT = 1024  # the queues' MaximumMessageSize here, in bytes (SQS's least)
_names = itertools.count()


def queue(server: LocalServer, fifo: bool = False, content_dedup: bool = False, dlq_arn: str | None = None) -> str:
    name = f"pl{next(_names)}-{uuid.uuid4().hex[:6]}" + (".fifo" if fifo else "")
    attributes = {"MaximumMessageSize": str(LIMIT)}
    if fifo:
        attributes["FifoQueue"] = "true"
    if content_dedup:
        attributes["ContentBasedDeduplication"] = "true"
    if dlq_arn:
        attributes["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2})
    url: str = server.client("sqs").create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    return url


def bucket(server: LocalServer) -> str:
    name = f"payloads-ops-{next(_names)}-{uuid.uuid4().hex[:6]}"
    server.client("s3").create_bucket(Bucket=name)
    return name


def read_back(server: LocalServer, message: dict[str, Any]) -> str:
    """The payload a received message points at, as sqslease reads it."""
    return PayloadStore(lambda: server.client("s3")).resolve(message["Body"], message["MessageAttributes"])[1]


def test_send_offloads_a_body_over_the_queues_maximum_size_to_the_bucket(local_aws: LocalServer) -> None:
    # GIVEN a queue taking 1 KiB, its job type's bucket, and three bodies: small, one byte over, 3 MiB
    url, name = queue(local_aws), bucket(local_aws)
    small, over, large = "s" * LIMIT, "o" * (LIMIT + 1), "L" * (3 * 2**20)
    # WHEN they are sent
    result = send(
        local_aws.client("sqs"),
        url,
        [(1, small), (2, over), (3, large)],
        payloads=PayloadBucket(local_aws.client("s3"), name),
    )
    # THEN every one went; the small one as it is, the other two as pointers whose objects hold them
    assert result.failed == [] and len(result.message_ids) == 3
    received = {m["MessageId"]: m for m in _receive_all(local_aws, url)}
    sent = [received[i] for i in result.message_ids]
    assert sent[0]["Body"] == small and "MessageAttributes" not in sent[0]
    assert [m["MessageAttributes"][SIZE_ATTRIBUTE]["StringValue"] for m in sent[1:]] == [str(LIMIT + 1), str(3 * 2**20)]
    assert [read_back(local_aws, m) for m in sent[1:]] == [over, large]
    assert parse_pointer(sent[2]["Body"], sent[2]["MessageAttributes"]).bucket == name


def test_without_a_bucket_a_body_over_the_limit_is_refused_naming_the_fix(local_aws: LocalServer) -> None:
    url = queue(local_aws)
    result = send(local_aws.client("sqs"), url, [(1, "x"), (2, "o" * (LIMIT + 1))])
    assert len(result.message_ids) == 1
    (failed,) = result.failed
    assert failed.line == 2 and failed.code == "MessageTooLong"
    assert "1,025 bytes; the queue takes 1,024: give the job type a payload bucket (payload_bucket=" in failed.message


def test_a_bucket_that_refuses_the_payload_refuses_its_line_only(local_aws: LocalServer) -> None:
    url = queue(local_aws)
    result = send(
        local_aws.client("sqs"),
        url,
        [(1, "x"), (2, "o" * (LIMIT + 1))],
        payloads=PayloadBucket(local_aws.client("s3"), "no-such-bucket-" + uuid.uuid4().hex[:8]),
    )
    assert len(result.message_ids) == 1
    (failed,) = result.failed
    assert failed.line == 2 and failed.code == "NoSuchBucket" and "payload bucket no-such-bucket-" in failed.message


def test_on_a_content_deduplicated_fifo_queue_a_payload_sent_twice_is_one_message(local_aws: LocalServer) -> None:
    # GIVEN a FIFO queue deduplicating by content: each pointer is new, so the id must come from the payload
    url, name = queue(local_aws, fifo=True, content_dedup=True), bucket(local_aws)
    payloads = PayloadBucket(local_aws.client("s3"), name)
    large = "L" * (LIMIT * 4)
    # WHEN the same payload is sent twice (within SQS's 5 minutes)
    for _ in range(2):
        assert send(local_aws.client("sqs"), url, [(1, large)], group="g", payloads=payloads).failed == []
    # THEN one message arrives, its deduplication id the SHA-256 of the payload (what SQS computes of a body)
    (message,) = take_all(local_aws.client("sqs"), url)
    assert message["Attributes"]["MessageDeduplicationId"] == hashlib.sha256(large.encode()).hexdigest()


def dead_lettered_pointer(server: LocalServer, payload: str) -> tuple[str, str, str, str]:
    """(source URL, DLQ URL, bucket, pointer body): a pointer message in a DLQ whose redrive policy names it."""
    sqs = server.client("sqs")
    dlq = queue(server)
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    source, name = queue(server, dlq_arn=dlq_arn), bucket(server)
    body, attributes = offload(server.client("s3"), name, payload)
    sqs.send_message(QueueUrl=dlq, MessageBody=body, MessageAttributes=attributes)
    return source, dlq, name, body


def test_dlq_list_shows_a_pointers_payload_size_and_object(local_aws: LocalServer) -> None:
    source, dlq, name, body = dead_lettered_pointer(local_aws, "P" * 5000)
    job = JobType("Big", "S", "S/Big", source, dlq)
    (row,) = list_dead_letters(job, local_aws.client("sqs"), None).rows
    pointer = parse_pointer(body, {SIZE_ATTRIBUTE: {"StringValue": "5000"}})
    assert (row.payload_bytes, row.payload_pointer) == (5000, f"s3://{name}/{pointer.key}")
    assert row.as_dict()["payload_bytes"] == 5000 and row.as_dict()["payload_pointer"] == pointer.url


@pytest.mark.parametrize("method", ["move-task", "loop"])
def test_both_redrive_methods_keep_the_pointer_and_its_object(local_aws: LocalServer, method: str) -> None:
    # GIVEN a pointer message in a DLQ
    source, dlq, _, body = dead_lettered_pointer(local_aws, "P" * 5000)
    # WHEN it is redriven
    result = redrive(local_aws.client("sqs"), dlq, source, fifo=False, method=method, stop=threading.Event())
    assert result.method == method and result.moved == 1
    # THEN the source holds the same pointer, with its size attribute, and the object it names is still there
    (moved,) = _receive_all(local_aws, source)
    assert moved["Body"] == body
    assert moved["MessageAttributes"][SIZE_ATTRIBUTE] == {"StringValue": "5000", "DataType": "Number"}
    assert read_back(local_aws, moved) == "P" * 5000


def _receive_all(server: LocalServer, url: str) -> list[dict[str, Any]]:
    """Every message of ``url`` with its attributes, deleted (waiting up to 10 s for the first)."""
    sqs, found, deadline = server.client("sqs"), [], time.monotonic() + 10
    while True:
        messages = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], WaitTimeSeconds=1
        ).get("Messages", [])
        for m in messages:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        found += messages
        if not messages and (found or time.monotonic() > deadline):
            return found
