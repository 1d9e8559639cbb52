"""The emulator's SQS move tasks (``StartMessageMoveTask``, ``ListMessageMoveTasks``, ``CancelMessageMoveTask``),
which moto 5.2.5 lacks: on moto's backend in process, and over HTTP on the session's moto_server.

GIVEN a dead-letter queue with messages, WHEN a task moves them, THEN they reach the source (or the named
destination) with their bodies, attributes, FIFO groups and deduplication ids, in order, and leave the DLQ;
what SQS refuses is refused with its error.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.sqs.models import SQSBackend, sqs_backends
from support.moto_queues import take_all
from support.waiting import until

from jobqueues.emulator.patches.sqs_move_tasks import MoveTaskError, start_task
from jobqueues.emulator.server import LocalServer

ACCOUNT, REGION = "123456789012", "us-east-1"


def arn(name: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"


def queue_pair(sqs: Any, fifo: bool = False) -> tuple[str, str, str]:
    """(source URL, DLQ URL, DLQ ARN): a source whose redrive policy names the DLQ."""
    suffix = ".fifo" if fifo else ""
    name = f"mt-{uuid.uuid4().hex[:8]}"
    attributes = {"FifoQueue": "true"} if fifo else {}
    dlq = sqs.create_queue(QueueName=f"{name}-dlq{suffix}", Attributes=attributes)["QueueUrl"]
    dlq_arn = arn(f"{name}-dlq{suffix}")
    redrive = {"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2})}
    source = sqs.create_queue(QueueName=f"{name}{suffix}", Attributes={**attributes, **redrive})["QueueUrl"]
    return source, dlq, dlq_arn


def latest(sqs: Any, dlq_arn: str) -> dict[str, Any]:
    return dict(sqs.list_message_move_tasks(SourceArn=dlq_arn)["Results"][0])


# On moto's backend, in process (no server).


@pytest.fixture
def backend() -> Iterator[SQSBackend]:
    """A fresh in-process SQS backend (moto's registry, reset by mock_aws)."""
    with mock_aws():
        yield sqs_backends[ACCOUNT][REGION]


def test_a_task_moves_the_messages_on_the_backend(backend: SQSBackend) -> None:
    backend.create_queue("dlq")
    backend.create_queue("src", RedrivePolicy=json.dumps({"deadLetterTargetArn": arn("dlq"), "maxReceiveCount": 2}))
    for i in range(15):
        backend.send_message("dlq", f"m{i}")
    task = start_task(backend, arn("dlq"), None, None)
    until(lambda: task.status == "COMPLETED")
    assert (task.moved, task.to_move) == (15, 15)
    assert [m.body for m in backend.get_queue("src")._messages] == [f"m{i}" for i in range(15)]
    assert backend.get_queue("dlq")._messages == []


def test_only_a_dead_letter_queue_is_a_source_on_the_backend(backend: SQSBackend) -> None:
    backend.create_queue("plain")
    with pytest.raises(MoveTaskError, match="Source queue must be configured as a Dead Letter Queue"):
        start_task(backend, arn("plain"), None, None)


# Over HTTP, on the session's moto_server.


def test_standard_messages_go_back_to_their_source(local_aws: LocalServer) -> None:
    sqs = local_aws.client("sqs")
    source, dlq, dlq_arn = queue_pair(sqs)
    for i in range(25):
        attributes = {"n": {"DataType": "Number", "StringValue": str(i)}}
        sqs.send_message(QueueUrl=dlq, MessageBody=f"job {i}", MessageAttributes=attributes)
    # 10 a second: 25 messages take over 2 s, so the task is listed running first
    handle = sqs.start_message_move_task(SourceArn=dlq_arn, MaxNumberOfMessagesPerSecond=10)["TaskHandle"]
    assert latest(sqs, dlq_arn)["TaskHandle"] == handle
    until(lambda: latest(sqs, dlq_arn)["Status"] == "COMPLETED")
    task = latest(sqs, dlq_arn)
    assert (task["ApproximateNumberOfMessagesMoved"], task["ApproximateNumberOfMessagesToMove"]) == (25, 25)
    assert "TaskHandle" not in task and task["SourceArn"] == dlq_arn
    moved = take_all(sqs, source)
    assert sorted(m["Body"] for m in moved) == sorted(f"job {i}" for i in range(25))
    assert all(m["MessageAttributes"]["n"]["StringValue"] == m["Body"].split()[1] for m in moved)
    assert take_all(sqs, dlq) == []


def test_fifo_messages_keep_their_group_dedup_id_and_order(local_aws: LocalServer) -> None:
    sqs = local_aws.client("sqs")
    source, dlq, dlq_arn = queue_pair(sqs, fifo=True)
    for i in range(12):
        group = f"customer-{i % 3}"
        body = f"{group} #{i // 3} d{i}"
        sqs.send_message(QueueUrl=dlq, MessageBody=body, MessageGroupId=group, MessageDeduplicationId=f"d{i}")
    sqs.start_message_move_task(SourceArn=dlq_arn, DestinationArn=arn(source.rsplit("/", 1)[1]))
    until(lambda: latest(sqs, dlq_arn)["Status"] == "COMPLETED")
    moved = take_all(sqs, source)
    assert len(moved) == 12
    for m in moved:
        group, _, dedup_id = m["Body"].split()
        assert (m["Attributes"]["MessageGroupId"], m["Attributes"]["MessageDeduplicationId"]) == (group, dedup_id)
    for group in ("customer-0", "customer-1", "customer-2"):
        order = [int(m["Body"].split()[1][1:]) for m in moved if m["Attributes"]["MessageGroupId"] == group]
        assert order == [0, 1, 2, 3], (group, order)


def test_a_cancelled_task_leaves_the_rest_in_the_dlq(local_aws: LocalServer) -> None:
    sqs = local_aws.client("sqs")
    source, dlq, dlq_arn = queue_pair(sqs)
    for i in range(20):
        sqs.send_message(QueueUrl=dlq, MessageBody=str(i))
    handle = sqs.start_message_move_task(SourceArn=dlq_arn, MaxNumberOfMessagesPerSecond=2)["TaskHandle"]
    # one task per source at a time
    with pytest.raises(ClientError, match="Only one active task is allowed"):
        sqs.start_message_move_task(SourceArn=dlq_arn)
    moved = sqs.cancel_message_move_task(TaskHandle=handle)["ApproximateNumberOfMessagesMoved"]
    until(lambda: latest(sqs, dlq_arn)["Status"] == "CANCELLED")
    task = latest(sqs, dlq_arn)
    assert moved <= task["ApproximateNumberOfMessagesMoved"] < 20 and task["MaxNumberOfMessagesPerSecond"] == 2
    in_source, in_dlq = len(take_all(sqs, source)), len(take_all(sqs, dlq))
    assert in_source == task["ApproximateNumberOfMessagesMoved"] and in_source + in_dlq == 20  # nothing lost
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        sqs.cancel_message_move_task(TaskHandle=handle)


@pytest.mark.parametrize(
    ("request_", "error"),
    [
        ({"MaxNumberOfMessagesPerSecond": 0}, "MaxNumberOfMessagesPerSecond must be 1..500"),
        ({"MaxNumberOfMessagesPerSecond": 501}, "MaxNumberOfMessagesPerSecond must be 1..500"),
        ({"to_fifo": True}, "Source and destination queues must be of the same type"),
    ],
)
def test_what_sqs_refuses_is_refused(local_aws: LocalServer, request_: dict[str, Any], error: str) -> None:
    sqs = local_aws.client("sqs")
    _, _, dlq_arn = queue_pair(sqs)
    if request_.pop("to_fifo", False):
        fifo_source, _, _ = queue_pair(sqs, fifo=True)
        request_["DestinationArn"] = arn(fifo_source.rsplit("/", 1)[1])
    with pytest.raises(ClientError, match=error):
        sqs.start_message_move_task(SourceArn=dlq_arn, **request_)
    assert sqs.list_message_move_tasks(SourceArn=dlq_arn)["Results"] == []
