"""Payloads over SQS's limit, between the official AWS SQS Extended Client (the Python package
``amazon-sqs-extended-client``, run as a process of its own: ``support/extended_client.py``) and sqslease, against
moto_server over HTTP: the client sends 5 MiB, a worker process and the Lambda adapter each consume one, and the
object is gone afterwards; a payload ``jobqueues send`` offloaded is read back by the client."""

from __future__ import annotations

import hashlib
import io
import itertools
import time
from pathlib import Path

import pytest
from support.extended_client import payload, run_extended_client
from support.fakes import FakeContext
from support.moto_queues import counts, make_queue
from support.waiting import wait_for
from support.worker_processes import events_of, start_worker_process

from jobqueues.emulator.lambda_driver.event_source import lambda_record
from jobqueues.emulator.server import LocalServer
from sqslease import lambda_adapter
from sqslease.emf import EmfLogger
from sqslease.payload_pointer import SIZE_ATTRIBUTE, PayloadStore, offload
from sqslease.settings import LeaseSettings

FIVE_MIB = 5 * 2**20
_buckets = itertools.count()


def make_bucket(server: LocalServer) -> str:
    name = f"payloads-{next(_buckets)}-{int(time.time() * 1000) % 10_000_000}"
    server.client("s3").create_bucket(Bucket=name)
    return name


def objects(server: LocalServer, bucket: str) -> list[str]:
    return [o["Key"] for o in server.client("s3").list_objects_v2(Bucket=bucket).get("Contents", [])]


def test_a_worker_process_consumes_what_the_official_client_sent_and_deletes_its_object(
    local_aws: LocalServer, tmp_path: Path
) -> None:
    # GIVEN 5 MiB sent by the official client: a pointer in the queue, the payload in the bucket
    url, bucket = make_queue(local_aws, vt=30).url, make_bucket(local_aws)
    sent = run_extended_client(local_aws.env(), "send", url, bucket, str(FIVE_MIB))
    assert sent["bytes"] == FIVE_MIB and len(objects(local_aws, bucket)) == 1
    # WHEN a worker process consumes the queue
    events = tmp_path / "events"
    worker = start_worker_process(local_aws, url, events, quiet=True, handler="sqs_handlers:payload_digest")
    try:
        assert wait_for(lambda: events_of(events) and counts(local_aws, url) == (0, 0), timeout_s=60)
        # THEN its handler got the payload, byte for byte, with its size; the message is deleted, then its object
        assert events_of(events) == [["payload", sent["message_id"], sent["sha256"], str(FIVE_MIB), str(FIVE_MIB)]]
        assert wait_for(lambda: objects(local_aws, bucket) == [], timeout_s=30)
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def test_the_lambda_adapter_consumes_what_the_official_client_sent_and_deletes_its_object(
    local_aws: LocalServer,
) -> None:
    # GIVEN 5 MiB sent by the official client, received as Lambda's poller does (the record Lambda builds)
    sqs = local_aws.client("sqs")
    url, bucket = make_queue(local_aws, vt=60).url, make_bucket(local_aws)
    sent = run_extended_client(local_aws.env(), "send", url, bucket, str(FIVE_MIB))
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    messages = sqs.receive_message(
        QueueUrl=url, MessageAttributeNames=["All"], MessageSystemAttributeNames=["All"], WaitTimeSeconds=5
    )["Messages"]
    event = {"Records": [lambda_record(m, arn, "us-east-1") for m in messages]}
    assert SIZE_ATTRIBUTE in event["Records"][0]["messageAttributes"]
    handed: list[tuple[str, int | None]] = []
    # WHEN the Lambda adapter runs the invocation
    response = lambda_adapter.process_event(
        event,
        FakeContext(60),
        lambda body, message: handed.append((body, message.pointer.size if message.pointer else None)),
        LeaseSettings(visibility_timeout=60, heartbeat=False),
        sqs,
        queue_url=url,
        emf=EmfLogger(io.StringIO()),
        payloads=PayloadStore(lambda: local_aws.client("s3")),
    )
    # THEN the handler got the payload; the record is deleted (by the adapter: only a confirmed delete may take the
    # object), and the object is gone when the invocation returns
    assert response == {"batchItemFailures": []}
    assert handed == [(payload(FIVE_MIB), FIVE_MIB)]
    assert objects(local_aws, bucket) == []
    assert counts(local_aws, url) == (0, 0)
    assert sent["bytes"] == FIVE_MIB


@pytest.mark.parametrize("size", [300_000])
def test_the_official_client_reads_a_payload_sqslease_offloaded(local_aws: LocalServer, size: int) -> None:
    # GIVEN a payload offloaded the way sqslease writes it (the body and attribute jobqueues send uses)
    url, bucket = make_queue(local_aws, vt=30).url, make_bucket(local_aws)
    text = payload(size)
    body, attributes = offload(local_aws.client("s3"), bucket, text)
    local_aws.client("sqs").send_message(QueueUrl=url, MessageBody=body, MessageAttributes=attributes)
    # WHEN the official client receives it
    received = run_extended_client(local_aws.env(), "receive", url)
    # THEN it hands over the payload, byte for byte, and (deleting it) removes the object
    assert received["bytes"] == size and received["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert objects(local_aws, bucket) == []
