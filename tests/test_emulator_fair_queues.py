"""The emulator keeps a message's ``MessageGroupId`` on a standard queue (a fair queue's tenant), as SQS does:
sent alone or in a batch, received with the system attributes, in the Lambda driver's records, and in the DLQ after
``maxReceiveCount``. moto 5.2.5 does all of it unpatched; this pins it. The fairness itself (SQS holding back a
noisy tenant) is not emulated: see docs/emulator.md."""

from __future__ import annotations

from support.moto_queues import make_queue, take_all

from jobqueues.emulator.lambda_driver.event_source import lambda_record
from jobqueues.emulator.server import LocalServer


def test_a_standard_queue_keeps_each_message_s_group(local_aws: LocalServer) -> None:
    # GIVEN a standard queue, and messages of two tenants sent alone and in a batch, and one without a group
    sqs = local_aws.client("sqs")
    url = make_queue(local_aws).url
    sqs.send_message(QueueUrl=url, MessageBody="alone", MessageGroupId="tenant-a")
    sqs.send_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "1", "MessageBody": "batched-1", "MessageGroupId": "tenant-b"},
            {"Id": "2", "MessageBody": "batched-2", "MessageGroupId": "tenant-a"},
            {"Id": "3", "MessageBody": "plain"},
        ],
    )
    # WHEN they are received with every system attribute
    received = take_all(sqs, url)
    # THEN each has its group, the plain one none, and the Lambda driver's record carries it
    groups = {m["Body"]: m["Attributes"].get("MessageGroupId") for m in received}
    assert groups == {"alone": "tenant-a", "batched-1": "tenant-b", "batched-2": "tenant-a", "plain": None}
    records = {m["Body"]: lambda_record(m, "arn:aws:sqs:us-east-1:123456789012:q", "us-east-1") for m in received}
    assert records["batched-1"]["attributes"]["MessageGroupId"] == "tenant-b"
    assert "MessageGroupId" not in records["plain"]["attributes"]


def test_a_dead_lettered_message_keeps_its_group(local_aws: LocalServer) -> None:
    # GIVEN a standard queue that dead-letters after one receive, and a tenant's message received once
    sqs = local_aws.client("sqs")
    queues = make_queue(local_aws, vt=1, max_receive_count=1)
    sqs.send_message(QueueUrl=queues.url, MessageBody="poison", MessageGroupId="tenant-p")
    first = sqs.receive_message(QueueUrl=queues.url, VisibilityTimeout=0, WaitTimeSeconds=1)["Messages"]
    assert [m["Body"] for m in first] == ["poison"]
    # WHEN the next receive finds its receives spent (moto moves it to the DLQ then)
    assert sqs.receive_message(QueueUrl=queues.url, WaitTimeSeconds=0).get("Messages", []) == []
    # THEN the DLQ holds it with its group
    (dead,) = take_all(sqs, queues.dlq_url or "")
    assert (dead["Body"], dead["Attributes"]["MessageGroupId"]) == ("poison", "tenant-p")
