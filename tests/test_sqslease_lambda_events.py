"""The Lambda adapter refuses an event that is not SQS's (a misrouted trigger, a test event of the wrong shape) with
one ``ValueError`` naming what it expected, before any record runs or any request is sent, as Powertools'
``BatchProcessor`` does. On in-memory fakes (``FakeSQS``, ``FakeContext``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from support.fakes import FakeContext, FakeSQS
from support.lambda_events import fake_event

from sqslease.lambda_adapter import leases_held, process_event, sqs_batch_handler
from sqslease.message import Message
from sqslease.settings import LeaseSettings

SETTINGS = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2)

#: What every refusal names: the shape the adapter expects.
EXPECTED = r"expected an SQS event: \{'Records': \[...\]\}"


def sqs_record() -> dict[str, Any]:
    record: dict[str, Any] = fake_event(["job"])["Records"][0]
    return record


def without(key: str) -> dict[str, Any]:
    record = sqs_record()
    del record[key]
    return record


def with_source(source: str) -> dict[str, Any]:
    return {**sqs_record(), "eventSource": source}


S3_RECORD = {
    "eventVersion": "2.1",
    "eventSource": "aws:s3",
    "eventName": "ObjectCreated:Put",
    "s3": {"bucket": {"name": "b"}, "object": {"key": "k"}},
}
SNS_RECORD = {"EventSource": "aws:sns", "EventSubscriptionArn": "arn:aws:sns:us-east-1:1:t:x", "Sns": {"Message": "hi"}}
EVENTBRIDGE_EVENT = {"version": "0", "id": "1", "detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}

#: (event, what the error says about it)
NOT_SQS: list[tuple[object, str]] = [
    (5, "got an int"),
    ([sqs_record()], "got a list"),
    (None, "got None"),
    ("Records", "got a str"),
    ({"Records": 5}, "its 'Records' is an int"),
    ({"Records": {"0": sqs_record()}}, "its 'Records' is a dict"),
    (EVENTBRIDGE_EVENT, "got a dict without 'Records' (keys: 'version', 'id', 'detail-type', 'source', 'detail')"),
    ({}, "got a dict without 'Records' (no keys)"),
    ({"Records": [S3_RECORD]}, "record 0 has eventSource 'aws:s3', not 'aws:sqs'"),
    ({"Records": [SNS_RECORD]}, "record 0 has no eventSource"),
    ({"Records": [sqs_record(), with_source("aws:kinesis")]}, "record 1 has eventSource 'aws:kinesis', not 'aws:sqs'"),
    ({"Records": [without("receiptHandle")]}, "record 0 has no receiptHandle"),
    ({"Records": [without("body")]}, "record 0 has no body"),
    ({"Records": [without("messageId")]}, "record 0 has no messageId"),
    ({"Records": [without("eventSourceARN")]}, "record 0 has no eventSourceARN"),
    ({"Records": [sqs_record(), "job"]}, "record 1 is a str"),
]


def never_called(body: str, message: Message) -> None:
    raise AssertionError("no record of an event that is not SQS's may run")


@pytest.mark.parametrize(("event", "says"), NOT_SQS)
def test_process_event_refuses_an_event_that_is_not_sqss_naming_what_it_expected(event: object, says: str) -> None:
    # GIVEN an event that is not an SQS batch, and a handler that must not run
    sqs = FakeSQS()
    # WHEN the adapter gets it
    with pytest.raises(ValueError, match=EXPECTED) as refused:
        process_event(event, FakeContext(60), never_called, SETTINGS, sqs)  # type: ignore[arg-type]
    # THEN one ValueError says what was expected and what came instead, and nothing was run or sent
    assert says in str(refused.value)
    assert sqs.calls == []


@pytest.mark.parametrize(("event", "says"), NOT_SQS[:3] + NOT_SQS[6:9])
def test_the_decorated_entry_point_and_leases_held_refuse_it_alike(event: object, says: str) -> None:
    sqs = FakeSQS()
    entry = sqs_batch_handler(never_called, settings=SETTINGS, sqs=sqs)
    with pytest.raises(ValueError, match=EXPECTED) as refused:
        entry(event, FakeContext(60))
    assert says in str(refused.value)
    with pytest.raises(ValueError, match=EXPECTED), leases_held(event, FakeContext(60), SETTINGS, sqs):  # type: ignore[arg-type]
        raise AssertionError("the block must not run")
    assert sqs.calls == []


def test_the_error_names_the_expected_record_keys_and_the_source() -> None:
    with pytest.raises(ValueError) as refused:
        process_event({"Records": [S3_RECORD]}, FakeContext(60), never_called, SETTINGS, FakeSQS())
    message = str(refused.value)
    for expected in ("'eventSource': 'aws:sqs'", "messageId", "receiptHandle", "body", "eventSourceARN"):
        assert expected in message
    assert "\n" not in message  # one line in the function's log


def test_an_sqs_batch_and_an_empty_one_are_still_taken() -> None:
    # GIVEN Lambda's own SQS event (with the keys Lambda adds beside the ones read) and an empty batch
    event = copy.deepcopy(fake_event(["a", "b"]))
    for record in event["Records"]:
        record.update(md5OfBody="x", awsRegion="us-east-1")
    ran: list[str] = []
    # WHEN the adapter gets them
    response = process_event(event, FakeContext(60), lambda body, message: ran.append(body), SETTINGS, FakeSQS())
    # THEN the batch runs as before, and the empty one is a no-op
    assert response == {"batchItemFailures": []} and ran == ["a", "b"]
    assert process_event({"Records": []}, FakeContext(60), never_called, SETTINGS, FakeSQS()) == {
        "batchItemFailures": []
    }
