"""The Lambda adapter on events built from messages really received from moto_server.

Lambda itself cannot run here (moto needs Docker for that), so the event and the context are built the
way Lambda builds them; every SQS call goes to the real endpoint.
"""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_cdk import Duration
from support.fakes import FakeContext, FakeSQS
from support.fault_proxy import Fault, FaultProxy
from support.lambda_events import FAKE_QUEUE_URL, fake_event, lambda_event
from support.moto_queues import counts, make_queue, receive_all, send
from support.worker_threads import ROOMY

from jobqueues.emulator.server import LocalServer
from sqslease.config import ConsumerConfig
from sqslease.emf import EmfLogger
from sqslease.lambda_adapter import leases_held, process_event, sqs_batch_handler
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings

pytestmark = pytest.mark.waits  # mostly waits in real time: started early, beside others' work (tests/conftest.py)

FAST = {"visibility_timeout": 2, "extension_threshold": 1, "heartbeat_interval": 0.2}


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
    queues = make_queue(local_aws, vt=4)
    send(local_aws, queues.url, ["slow", "queued"])
    event = lambda_event(local_aws, queues.url, vt=4)

    seen_meanwhile: list[list[dict]] = []

    @sqs_batch_handler(settings=LeaseSettings(**ROOMY), sqs=local_aws.client("sqs"), queue_url=queues.url)
    def handler(body: str, message: Message) -> None:
        time.sleep(4.5)  # the job: the whole batch outlives its 4 s visibility timeout
        # neither record visible, checked while the invocation holds the leases (after it, only Lambda's delete would)
        seen_meanwhile.append(receive_all(local_aws, queues.url))

    assert handler(event, FakeContext(60)) == {"batchItemFailures": []}
    assert seen_meanwhile == [[], []]


def test_deadline_guard_releases_unstarted_records_and_reports_them(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["r1", "r2", "r3", "r4"])
    event = lambda_event(local_aws, queues.url, vt=30)
    settings = LeaseSettings(visibility_timeout=30, deadline_margin=5.5, heartbeat_interval=0.2)
    done: list[str] = []
    durations = iter([7.0, 0.3, 0.3, 0.3])  # by position

    def handler(body: str, message: Message) -> None:
        time.sleep(next(durations))
        done.append(body)

    emf = io.StringIO()
    response = process_event(
        event, FakeContext(10.0), handler, settings, local_aws.client("sqs"), queues.url, EmfLogger(emf)
    )
    # The margin is min(5.5 s, a quarter of the 10 s the invocation started with) = 2.5 s: a record starts only
    # with more than 2.5 s left, and one still running with half of it left (1.25 s) is hung. The first always
    # starts and ends with at most 3 s left; the next ones take 0.3 s, so at most the second and third start
    # (both on an idle machine; the exact count on a clock of its own: test_sqslease_lambda_unit.py), never the fourth.
    # However late a loaded machine runs them, each record started ends at least 0.95 s before the hang point (the
    # first 1.75 s), so every record either succeeds or is released unstarted and reported.
    order = [r["body"] for r in event["Records"]]
    assert 1 <= len(done) <= 3 and done == order[: len(done)]
    unstarted = [r["messageId"] for r in event["Records"] if r["body"] not in done]
    assert response["batchItemFailures"] == [{"itemIdentifier": i} for i in unstarted]
    lines = [json.loads(line) for line in emf.getvalue().splitlines()]
    assert [(r["MessageId"], r["Outcome"]) for r in lines if r["Outcome"] != "success"] == [
        (i, "released") for i in unstarted
    ]
    assert counts(local_aws, queues.url)[0] == len(unstarted)  # released at once, not after the 30 s lease


def test_leases_held_wraps_other_batch_processing(local_aws: LocalServer) -> None:
    # How a Powertools BatchProcessor user adds lease extension without touching record handlers.
    queues = make_queue(local_aws, vt=4)
    send(local_aws, queues.url, ["a", "b"])
    event = lambda_event(local_aws, queues.url, vt=4)
    with leases_held(event, FakeContext(60), LeaseSettings(**ROOMY), local_aws.client("sqs"), queues.url):
        time.sleep(5)  # the batch's processing, past its 4 s visibility timeout
        assert receive_all(local_aws, queues.url) == []  # checked while the leases are held


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


# -- short functions and lease extension: the consumer a LambdaJob declares -----------------------------------
def lambda_job_settings(**props: Any) -> LeaseSettings:
    """The settings the function of ``LambdaJob(**props)`` runs with, read from its synthesized environment."""
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk.assertions import Template
    from cdk_helpers import ENV

    from jobqueues import LambdaJob

    stack = cdk.Stack(cdk.App(), "Jobs", env=ENV)
    code = lambda_.Code.from_asset(str(Path(__file__).parent.parent / "lambda_src" / "handlers"))
    LambdaJob(stack, "Job", code=code, handler="thumbs.handle", **props)
    (function,) = Template.from_stack(stack).find_resources("AWS::Lambda::Function").values()
    env = function["Properties"]["Environment"]["Variables"]
    return ConsumerConfig.from_env({k: v for k, v in env.items() if isinstance(v, str)}).lease


def test_a_3_s_invocation_processes_its_records() -> None:
    # Lambda's default timeout: the deadline margin (5 s by default) shrinks to a quarter of the 3 s.
    done: list[str] = []
    settings = LeaseSettings(visibility_timeout=18, heartbeat=False)
    response = process_event(
        fake_event(["a", "b", "c"]), FakeContext(3), lambda b, m: done.append(b), settings, FakeSQS(), FAKE_QUEUE_URL
    )
    assert response == {"batchItemFailures": []} and done == ["a", "b", "c"]


def test_a_3_s_lambda_job_synthesizes_and_its_function_processes_records() -> None:
    settings = lambda_job_settings(timeout=Duration.seconds(3))
    done: list[str] = []
    sqs = FakeSQS()
    response = process_event(
        fake_event(["a", "b"]), FakeContext(3), lambda b, m: done.append(b), settings, sqs, FAKE_QUEUE_URL
    )
    assert response == {"batchItemFailures": []} and done == ["a", "b"]
    assert not sqs.calls  # no lease extension declared: nothing to renew, nothing released


def test_lease_extension_renews_every_record_as_the_invocation_starts() -> None:
    # A 10 s function, 12 records a batch: its lease (timeout + window + 10 s = 21 s) is renewed at the start
    # with ceil(12 / 10) = 2 requests; the records run well within it, so the heartbeat sends nothing more.
    settings = lambda_job_settings(
        timeout=Duration.seconds(10), lease_extension=True, batch_size=12, max_batching_window=Duration.seconds(1)
    )
    assert settings.heartbeat and settings.visibility_timeout == 21
    sqs = FakeSQS()
    emf = io.StringIO()
    event = fake_event([f"r{i}" for i in range(12)])
    response = process_event(event, FakeContext(10), lambda b, m: None, settings, sqs, FAKE_QUEUE_URL, EmfLogger(emf))
    assert response == {"batchItemFailures": []}
    renewals = sqs.of("ChangeMessageVisibilityBatch")
    assert [len(entries) for _, _, entries in renewals] == [10, 2]
    assert {entry["VisibilityTimeout"] for _, _, entries in renewals for entry in entries} == {21}
    extensions = [json.loads(line)["Extensions"] for line in emf.getvalue().splitlines()]
    assert extensions == [1] * 12


class StaleFirstHandleSQS(FakeSQS):
    """SQS that no longer honours the first receipt handle of each request (its message was received again)."""

    def change_message_visibility_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:
        super().change_message_visibility_batch(QueueUrl, Entries)
        stale = {"Id": Entries[0]["Id"], "Code": "ReceiptHandleIsInvalid", "Message": "stale", "SenderFault": True}
        return {"Successful": [{"Id": e["Id"]} for e in Entries[1:]], "Failed": [stale]}


def test_a_record_whose_lease_cannot_be_renewed_is_not_started() -> None:
    settings = LeaseSettings(visibility_timeout=21, heartbeat=True)
    done: list[str] = []
    response = process_event(
        fake_event(["stale", "fresh"]),
        FakeContext(10),
        lambda b, m: done.append(b),
        settings,
        StaleFirstHandleSQS(),
        FAKE_QUEUE_URL,
    )
    assert done == ["fresh"] and response == {"batchItemFailures": [{"itemIdentifier": "m0"}]}


def test_with_only_aws_region_set_the_default_client_has_a_region(local_aws: LocalServer, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Lambda sets AWS_REGION, not AWS_DEFAULT_REGION; botocore reads only the latter.
    import sqslease.lambda_adapter as adapter

    for name, value in local_aws.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")  # no profile's region either
    monkeypatch.setattr(adapter, "_client", None, raising=False)
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["a"])
    event = lambda_event(local_aws, queues.url, vt=30)
    settings = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2)
    assert process_event(event, FakeContext(60), lambda b, m: None, settings) == {"batchItemFailures": []}
