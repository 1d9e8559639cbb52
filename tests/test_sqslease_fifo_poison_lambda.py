"""The Lambda adapter's FIFO retries within the invocation: on a scripted client with the invocation's remaining
time on a clock that moves only when told, and end to end on moto_server. The worker's: ``test_sqslease_fifo_poison.py``
and ``test_sqslease_fifo_poison_unit.py``."""

from __future__ import annotations

import dataclasses
import io

import pytest
from support.emf import read_emf
from support.fakes import FakeClock, FakeContext, FakeSQS
from support.lambda_events import fake_event, lambda_event
from support.moto_queues import counts, make_queue, receive_all

from jobqueues.emulator.server import LocalServer
from sqslease.emf import EmfLogger
from sqslease.failure_policy import DLQ_REASON_ATTRIBUTE, DLQ_RECEIVE_COUNT_ATTRIBUTE
from sqslease.invocation import QUEUE_URL_ENV
from sqslease.lambda_adapter import process_event
from sqslease.message import Message
from sqslease.settings import LeaseSettings

FIFO_ARN = "arn:aws:sqs:us-east-1:123456789012:quick.fifo"
DLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/quick-dlq.fifo"
#: A LambdaJob's consumer: no lease extension, 3 attempts, the DLQ.
SETTINGS = LeaseSettings(visibility_timeout=70, heartbeat=False, max_receive_count=3, dead_letter_queue_url=DLQ)


@pytest.fixture(autouse=True)
def no_configured_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)


class Runs:
    """A handler recording (body, receive count, fake time) of each run; bodies starting with ``poison`` fail."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.runs: list[tuple[str, int, float]] = []

    def __call__(self, body: str, message: Message) -> None:
        self.runs.append((body, message.receive_count, self.clock()))
        if body.startswith("poison"):
            raise RuntimeError(f"{body} fails every time")


def invoke(
    bodies: list[str], groups: list[str], seconds: float, settings: LeaseSettings = SETTINGS
) -> tuple[dict, Runs, FakeSQS, list[dict]]:
    """One invocation of ``seconds`` on a fake clock that the adapter's back-off waits move."""
    clock = FakeClock()
    sqs, emf, handler = FakeSQS(clock), io.StringIO(), Runs(clock)
    response = process_event(
        fake_event(bodies, arn=FIFO_ARN, groups=groups),
        FakeContext(seconds, clock),
        handler,
        settings,
        sqs,
        emf=EmfLogger(emf),
        raise_on_entire_batch_failure=False,
        sleep=clock.sleep,
    )
    return response, handler, sqs, read_emf(emf)


def test_a_poison_record_is_retried_within_the_invocation_then_dead_lettered_and_its_group_runs() -> None:
    # GIVEN a batch [poison, m1, m2] of group g and [h0] of group h, 60 s to run it
    response, handler, sqs, lines = invoke(["poison", "m1", "m2", "h0"], ["g", "g", "g", "h"], 60)
    # THEN the poison ran 3 times, each after its back-off (base 2 s: 1-2 s, then 2-4 s), its receive count rising
    poison = [run for run in handler.runs if run[0] == "poison"]
    assert [run[1] for run in poison] == [1, 2, 3]
    assert 1 <= poison[1][2] - poison[0][2] <= 2 and 2 <= poison[2][2] - poison[1][2] <= 4
    # then the adapter sent it to the DLQ and reported it done (Lambda deletes it); the rest ran on their first receive
    assert [run[:2] for run in handler.runs[3:]] == [("m1", 1), ("m2", 1), ("h0", 1)]
    assert response == {"batchItemFailures": []}
    (sent,) = sqs.entries("SendMessage")
    assert sent["QueueUrl"] == DLQ and sent["MessageBody"] == "poison" and sent["MessageGroupId"] == "g"
    assert sent["MessageAttributes"][DLQ_REASON_ATTRIBUTE]["StringValue"] == "max_receive_count"
    assert sent["MessageAttributes"][DLQ_RECEIVE_COUNT_ATTRIBUTE]["StringValue"] == "3"
    assert sqs.entries("ChangeMessageVisibilityBatch") == []  # nothing released: no receive spent
    assert [(r["MessageId"], r["Outcome"], r["ReceiveCount"]) for r in lines] == [
        ("m0", "failure", 1),
        ("m0", "failure", 2),
        ("m0", "dead_lettered", 3),
        ("m1", "success", 1),
        ("m2", "success", 1),
        ("m3", "success", 1),
    ]


def test_a_retry_that_does_not_fit_before_the_deadline_releases_the_group_as_before() -> None:
    # GIVEN 8 s (a 2 s deadline margin: 6 s to use) and a back-off base of 4 s: the first retry waits 2-4 s and
    # fits; the second would wait 4-8 s, more than is left
    response, handler, sqs, lines = invoke(
        ["poison", "m1", "h0"],
        ["g", "g", "h"],
        8,
        dataclasses.replace(SETTINGS, backoff_base=4),
    )
    # THEN the poison ran twice, and is released by the failure policy (its back-off for receive 2: 4-8 s); the
    # rest of the batch stops there as before (skip_group_on_error=False): released, reported failed
    assert [run[:2] for run in handler.runs] == [("poison", 1), ("poison", 2)]
    assert response == {"batchItemFailures": [{"itemIdentifier": f"m{i}"} for i in range(3)]}
    released = dict((e["ReceiptHandle"], e["VisibilityTimeout"]) for e in sqs.entries("ChangeMessageVisibilityBatch"))
    assert 4 <= released["rh-0"] <= 8 and released["rh-1"] == released["rh-2"] == 0
    assert sqs.entries("SendMessage") == []
    assert [(r["MessageId"], r["Outcome"]) for r in lines] == [
        ("m0", "failure"),
        ("m0", "failure"),
        ("m1", "released"),
        ("m2", "released"),
    ]


def test_on_moto_a_poison_record_goes_to_the_dlq_alone_and_lambda_deletes_the_rest(local_aws: LocalServer) -> None:
    # GIVEN a FIFO queue with maxReceiveCount 3 and a batch [poison, m1, m2] received as Lambda's poller does
    queues = make_queue(local_aws, vt=60, max_receive_count=3, fifo=True)
    assert queues.dlq_url is not None
    sqs = local_aws.client("sqs")
    for body in ("poison", "m1", "m2"):
        sqs.send_message(QueueUrl=queues.url, MessageBody=body, MessageGroupId="g", MessageDeduplicationId=body)
    event = lambda_event(local_aws, queues.url, vt=60)
    ran: list[tuple[str, int]] = []

    def handler(body: str, message: Message) -> None:
        ran.append((body, message.receive_count))
        if body == "poison":
            raise RuntimeError("poison fails every time")

    settings = LeaseSettings(
        visibility_timeout=60,
        heartbeat=False,
        backoff_base=1,
        max_receive_count=3,
        dead_letter_queue_url=queues.dlq_url,
    )
    # WHEN the invocation runs it
    response = process_event(event, FakeContext(60), handler, settings, sqs, queues.url, EmfLogger(io.StringIO()))
    # THEN the poison ran 3 times and only it is in the DLQ; the rest ran once; nothing is reported failed
    assert ran == [("poison", 1), ("poison", 2), ("poison", 3), ("m1", 1), ("m2", 1)]
    assert response == {"batchItemFailures": []}
    for record in event["Records"]:  # as Lambda does after the invocation: delete what is not reported
        sqs.delete_message(QueueUrl=queues.url, ReceiptHandle=record["receiptHandle"])
    assert counts(local_aws, queues.url) == (0, 0)
    assert [m["Body"] for m in receive_all(local_aws, queues.dlq_url)] == ["poison"]
