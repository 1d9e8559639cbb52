"""The Lambda adapter on events built from messages really received from moto_server.

Lambda itself cannot run here (moto needs Docker for that), so the event and the context are built the
way Lambda builds them; every SQS call goes to the real endpoint.
"""

from __future__ import annotations

import io
import json
import time

import boto3
import pytest
from sqs_helpers import Fault, FaultProxy, counts, make_queue, receive_all, send

from local_emulator.server import LocalServer
from sqslease.emf import EmfLogger
from sqslease.lambda_adapter import leases_held, process_event, sqs_batch_handler
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings

FAST = {"visibility_timeout": 2, "extension_threshold": 1, "heartbeat_interval": 0.2}


class FakeContext:
    """Lambda's context object: only the remaining-time clock matters here."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return int((self.deadline - time.monotonic()) * 1000)


def lambda_event(server: LocalServer, url: str, vt: int) -> dict:
    """Receive like Lambda's poller and shape the records like Lambda's SQS event."""
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


def test_partial_batch_failure_reports_only_failed_records(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["ok-1", "bad", "ok-2"])
    event = lambda_event(local_aws, queues.url, vt=30)
    emf = io.StringIO()

    def handler(body: str, message: Message) -> None:
        if body == "bad":
            raise ValueError("bad record")

    settings = LeaseSettings(**FAST, failure_policy=FailurePolicy.VISIBLE_NOW)
    response = process_event(
        event, FakeContext(60), handler, settings, local_aws.client("sqs"), queues.url, EmfLogger(emf)
    )
    bad_id = next(r["messageId"] for r in event["Records"] if r["body"] == "bad")
    assert response == {"batchItemFailures": [{"itemIdentifier": bad_id}]}
    # visible_now released the failed record at once; Lambda deletes the others after we return.
    (again,) = receive_all(local_aws, queues.url)
    assert again["Body"] == "bad"
    outcomes = sorted(json.loads(line)["Outcome"] for line in emf.getvalue().splitlines())
    assert outcomes == ["failure", "success", "success"]


def test_heartbeat_keeps_the_batch_invisible_during_a_long_invocation(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=2)
    send(local_aws, queues.url, ["slow", "queued"])
    event = lambda_event(local_aws, queues.url, vt=2)

    @sqs_batch_handler(settings=LeaseSettings(**FAST), sqs=local_aws.client("sqs"), queue_url=queues.url)
    def handler(body: str, message: Message) -> None:
        time.sleep(2.5)  # the whole batch outlives its 2 s visibility timeout

    assert handler(event, FakeContext(60)) == {"batchItemFailures": []}
    assert receive_all(local_aws, queues.url) == []  # neither record was redelivered meanwhile


def test_deadline_guard_releases_unstarted_records_and_reports_them(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["r1", "r2", "r3", "r4"])
    event = lambda_event(local_aws, queues.url, vt=30)
    settings = LeaseSettings(visibility_timeout=30, deadline_margin=5.5, heartbeat_interval=0.2)
    done: list[str] = []

    def handler(body: str, message: Message) -> None:
        time.sleep(1)
        done.append(body)

    response = process_event(event, FakeContext(7.2), handler, settings, local_aws.client("sqs"), queues.url)
    assert len(done) == 2  # 7.2 s, then 6.2 s left: started; 5.2 s < 5.5 s margin: stop
    unstarted = [r["messageId"] for r in event["Records"] if r["body"] not in done]
    assert response["batchItemFailures"] == [{"itemIdentifier": i} for i in unstarted]
    assert counts(local_aws, queues.url)[0] == 2  # released at once, not after the 30 s lease


def test_leases_held_wraps_other_batch_processing(local_aws: LocalServer) -> None:
    # How a Powertools BatchProcessor user adds lease extension without touching record handlers.
    queues = make_queue(local_aws, vt=2)
    send(local_aws, queues.url, ["a", "b"])
    event = lambda_event(local_aws, queues.url, vt=2)
    with leases_held(event, FakeContext(60), LeaseSettings(**FAST), local_aws.client("sqs"), queues.url):
        time.sleep(3)
    assert receive_all(local_aws, queues.url) == []


def test_empty_event_is_a_no_op() -> None:
    assert process_event({"Records": []}, FakeContext(60), lambda b, m: None) == {"batchItemFailures": []}


def test_the_sqs_client_is_created_once_per_process(local_aws: LocalServer, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import boto3

    import sqslease.lambda_adapter as adapter

    for name, value in local_aws.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(adapter, "_client", None, raising=False)
    created = []
    inside = [False]  # count only the clients the adapter creates, not this test's
    real_client = boto3.session.Session.client

    def counting_client(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if inside[0]:
            created.append(args[0] if args else kwargs.get("service_name"))
        return real_client(self, *args, **kwargs)

    monkeypatch.setattr(boto3.session.Session, "client", counting_client)
    queues = make_queue(local_aws, vt=30)
    settings = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2)
    for i in range(3):  # three invocations of one Lambda process
        send(local_aws, queues.url, [f"m{i}"])
        event = lambda_event(local_aws, queues.url, vt=30)
        inside[0] = True
        assert process_event(event, FakeContext(60), lambda b, m: None, settings) == {"batchItemFailures": []}
        inside[0] = False
    assert created.count("sqs") == 1, created


def test_a_batch_whose_every_record_failed_raises(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["a", "b"])
    event = lambda_event(local_aws, queues.url, vt=30)
    settings = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW)

    def failing(body: str, message: Message) -> None:
        raise ValueError(body)

    with pytest.raises(Exception, match="all 2 records of the batch failed"):
        process_event(event, FakeContext(60), failing, settings, local_aws.client("sqs"), queues.url)
    event = lambda_event(local_aws, queues.url, vt=30)  # released at once by visible_now
    response = process_event(
        event,
        FakeContext(60),
        failing,
        settings,
        local_aws.client("sqs"),
        queues.url,
        raise_on_entire_batch_failure=False,
    )
    assert len(response["batchItemFailures"]) == 2


def test_a_fatal_sqs_error_is_raised_from_the_invocation(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["a", "b"])
    event = lambda_event(local_aws, queues.url, vt=30)
    settings = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW)

    def deny_visibility_changes(operation: str, body: bytes) -> Fault | None:
        return Fault("access_denied") if operation == "ChangeMessageVisibilityBatch" else None

    def fail_a(body: str, message: Message) -> None:
        if body == "a":
            raise ValueError("a fails, so it is released: the role may not")

    with FaultProxy(local_aws.endpoint, deny_visibility_changes) as proxy:
        sqs = boto3.client(
            "sqs",
            endpoint_url=proxy.endpoint,
            region_name="us-east-1",
            aws_access_key_id="t",
            aws_secret_access_key="t",
        )
        with pytest.raises(Exception, match="AccessDenied"):
            process_event(event, FakeContext(60), fail_a, settings, sqs, queues.url)
