"""Payloads kept in S3 (the AWS SQS Extended Client's wire format), read before the handler and deleted after their
message, in the worker and the Lambda adapter: on a scripted SQS client and an in-memory S3 (no network). The same
against the official client and moto_server: ``test_payload_interop.py``."""

from __future__ import annotations

import io
import json
import sys
import threading
from typing import Any

import pytest
from support.emf import outcomes, read_emf
from support.fake_s3 import FakeS3
from support.fakes import FakeClock, FakeContext, FakeSQS
from support.lambda_events import fake_event
from support.waiting import wait_for
from support.worker_threads import LEASES_30S as UNIT
from support.worker_threads import emf_records, running_worker

from sqslease import lambda_adapter
from sqslease.config import ConsumerConfig
from sqslease.emf import EmfLogger
from sqslease.message import Message
from sqslease.payload_pointer import (
    LEGACY_POINTER_CLASS,
    LEGACY_SIZE_ATTRIBUTE,
    POINTER_CLASS,
    SIZE_ATTRIBUTE,
    PayloadPointer,
    PayloadPointerError,
    PayloadStore,
    message_size,
    offload,
    parse_pointer,
    pointer_body,
    size_attribute,
)
from sqslease.settings import LeaseSettings
from sqslease.worker import Worker

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
BUCKET = "payloads"
PAYLOAD = "é" * 300_000  # 600,000 bytes: over 256 KiB, two bytes a character


def stored(s3: FakeS3, payload: str = PAYLOAD, key: str = "k1") -> tuple[str, dict[str, dict[str, str]]]:
    """A pointer message's body and attributes, its payload put in ``s3``."""
    return offload(s3, BUCKET, payload, key)


def deleted(sqs: FakeSQS) -> list[str]:
    return [e["ReceiptHandle"] for e in sqs.entries("DeleteMessageBatch")]


# -- the wire format --------------------------------------------------------------------------------------------


def test_a_pointer_is_the_official_clients_body_and_size_attribute() -> None:
    # The body the official clients write: json.dumps of [class, {"s3BucketName", "s3Key"}], in that order.
    body = pointer_body("b", "0c3e")
    assert body == '["software.amazon.payloadoffloading.PayloadS3Pointer", {"s3BucketName": "b", "s3Key": "0c3e"}]'
    assert size_attribute(600_000) == {"ExtendedPayloadSize": {"DataType": "Number", "StringValue": "600000"}}
    assert parse_pointer(body, size_attribute(600_000)) == PayloadPointer("b", "0c3e", 600_000, body)


def test_the_legacy_attribute_and_pointer_class_are_read_too() -> None:
    body = json.dumps([LEGACY_POINTER_CLASS, {"s3BucketName": "b", "s3Key": "k"}])
    attributes = {LEGACY_SIZE_ATTRIBUTE: {"DataType": "Number", "StringValue": "12"}}
    assert parse_pointer(body, attributes) == PayloadPointer("b", "k", 12, body)


@pytest.mark.parametrize(
    ("body", "size", "names"),
    [
        ("hello", "5", "not a payload pointer"),
        (json.dumps(["x.Other", {"s3BucketName": "b", "s3Key": "k"}]), "5", "not a payload pointer"),
        (json.dumps([POINTER_CLASS, {"s3BucketName": "b"}]), "5", "not a payload pointer"),
        (json.dumps([POINTER_CLASS, {"s3BucketName": "", "s3Key": "k"}]), "5", "not a payload pointer"),
        (pointer_body("b", "k"), "five", "'five', not a size in bytes"),
    ],
)
def test_a_malformed_pointer_is_an_error_naming_what_is_wrong(body: str, size: str, names: str) -> None:
    with pytest.raises(PayloadPointerError, match=names):
        parse_pointer(body, {SIZE_ATTRIBUTE: {"DataType": "Number", "StringValue": size}})


def test_a_messages_size_counts_its_attributes_as_the_extended_clients_do() -> None:
    attributes = {"a": {"DataType": "String", "StringValue": "xy"}, "b": {"DataType": "Binary", "BinaryValue": b"12"}}
    assert message_size("é", attributes) == 2 + (1 + 6 + 2) + (1 + 6 + 2)


def test_offload_puts_the_payload_under_a_new_uuid_by_default() -> None:
    s3 = FakeS3()
    body, attributes = offload(s3, BUCKET, "x" * 10)
    pointer = parse_pointer(body, attributes)
    assert len(pointer.key) == 36 and s3.objects[BUCKET, pointer.key] == b"x" * 10 and pointer.size == 10


# -- the worker ---------------------------------------------------------------------------------------------------


def test_the_worker_hands_the_payload_to_the_handler_and_deletes_its_object_after_the_message() -> None:
    # GIVEN a pointer message whose payload is in S3
    s3, sqs = FakeS3(), FakeSQS(FakeClock())
    body, attributes = stored(s3)
    sqs.add(body, message_attributes=attributes)
    seen: list[tuple[str, int | None, str]] = []

    def handler(text: str, message: Message) -> None:
        seen.append((text, message.pointer.size if message.pointer else None, message.sqs_body))

    # WHEN the worker runs it
    store = PayloadStore(lambda: s3)
    with running_worker(sqs, URL, handler, clock=sqs.clock, worker_args={"payloads": store}, **UNIT) as worker:
        assert wait_for(lambda: not s3.objects, timeout_s=10)
    # THEN the handler saw the payload (its size in bytes, the pointer SQS holds), the message was deleted, then
    # its object: a redelivery before the delete would have found it
    assert seen == [(PAYLOAD, 600_000, body)]
    assert deleted(sqs) == sqs.handle_of(body)
    assert s3.operations() == ["PutObject", "GetObject", "DeleteObject"]
    assert [r["Outcome"] for r in emf_records(worker)] == ["success"]


def test_the_object_is_deleted_only_once_sqs_confirmed_the_messages_delete() -> None:
    # GIVEN a pointer message whose delete SQS holds (no answer yet)
    s3, sqs = FakeS3(), FakeSQS(FakeClock())
    body, attributes = stored(s3)
    sqs.add(body, message_attributes=attributes)
    answer = threading.Event()
    sqs.script("DeleteMessageBatch", answer)
    store = PayloadStore(lambda: s3)
    with running_worker(sqs, URL, lambda b, m: None, clock=sqs.clock, worker_args={"payloads": store}, **UNIT):
        assert wait_for(lambda: sqs.of("DeleteMessageBatch"), timeout_s=10)
        # WHILE the delete is in flight THEN the object is still there (its deletion is queued by the answer alone)
        assert s3.operations() == ["PutObject", "GetObject"] and (BUCKET, "k1") in s3.objects
        # WHEN SQS confirms it THEN the object goes
        answer.set()
        assert wait_for(lambda: not s3.objects, timeout_s=10)


def test_an_unconfirmed_delete_keeps_the_object_a_confirmed_one_deletes_it() -> None:
    # GIVEN two objects, each pointed at by a message whose delete is being settled
    s3 = FakeS3()
    s3.put(BUCKET, "kept", "x")
    s3.put(BUCKET, "gone", "x")
    store = PayloadStore(lambda: s3)
    # WHEN SQS did not confirm one delete (refused, lease lost, given up at shutdown) and confirmed the other
    store.deletion(PayloadPointer(BUCKET, "kept", 1, "")).set_result(False)
    store.deletion(PayloadPointer(BUCKET, "gone", 1, "")).set_result(True)
    # THEN only the confirmed one's object is deleted: the other message will be delivered again, and needs it
    assert store.flush(10)
    assert list(s3.objects) == [(BUCKET, "kept")] and s3.calls == [("DeleteObject", BUCKET, ["gone"])]


def test_with_deletion_off_the_object_is_kept() -> None:
    s3, sqs = FakeS3(), FakeSQS(FakeClock())
    body, attributes = stored(s3)
    sqs.add(body, message_attributes=attributes)
    store = PayloadStore(lambda: s3, delete=False)
    with running_worker(sqs, URL, lambda b, m: None, clock=sqs.clock, worker_args={"payloads": store}, **UNIT):
        assert wait_for(lambda: deleted(sqs), timeout_s=10)
    assert store.flush(10)
    assert deleted(sqs) == sqs.handle_of(body) and (BUCKET, "k1") in s3.objects
    assert s3.operations() == ["PutObject", "GetObject"]


@pytest.mark.parametrize(
    ("case", "error"),
    [("missing", "NoSuchKey"), ("denied", "AccessDenied"), ("short", "holds 3 bytes"), ("malformed", "not a payload")],
)
def test_a_payload_that_cannot_be_read_fails_the_message_by_the_failure_policy_unrun(case: str, error: str) -> None:
    # GIVEN a pointer message whose payload cannot be read
    s3, sqs = FakeS3(), FakeSQS(FakeClock())
    body, attributes = stored(s3)
    if case == "missing":
        s3.objects.clear()
    elif case == "denied":
        s3.refuse["GetObject"] = "AccessDenied"
    elif case == "short":
        s3.put(BUCKET, "k1", "abc")
    else:
        body = "not a pointer"
    sqs.add(body, message_attributes=attributes)
    ran: list[str] = []
    store = PayloadStore(lambda: s3)
    # WHEN the worker receives it
    with running_worker(
        sqs, URL, lambda b, m: ran.append(b), clock=sqs.clock, worker_args={"payloads": store}, **UNIT
    ) as worker:
        assert wait_for(lambda: sqs.of("ChangeMessageVisibilityBatch"), timeout_s=10)
    # THEN the handler never ran, the message is backed off (not deleted: it comes back, then goes to the DLQ), and
    # its line says why
    assert ran == [] and deleted(sqs) == []
    (line,) = emf_records(worker)
    assert line["Outcome"] == "failure" and error in line["Error"]
    assert [e["ReceiptHandle"] for e in sqs.entries("ChangeMessageVisibilityBatch")] == sqs.handle_of(body)


class Permanent(Exception):
    """Declared non-retryable below."""


def test_a_dead_lettered_pointer_message_goes_to_the_dlq_as_its_pointer_and_keeps_its_object() -> None:
    # GIVEN a pointer message whose handler raises a non-retryable error
    s3, sqs = FakeS3(), FakeSQS(FakeClock())
    body, attributes = stored(s3)
    sqs.add(body, message_attributes=attributes)

    def handler(text: str, message: Message) -> None:
        raise Permanent("no")

    store = PayloadStore(lambda: s3)
    settings = {**UNIT, "non_retryable": (f"{__name__}:Permanent",), "dead_letter_queue_url": URL + "-dlq"}
    with running_worker(sqs, URL, handler, clock=sqs.clock, worker_args={"payloads": store}, **settings):
        assert wait_for(lambda: deleted(sqs), timeout_s=10)
    # THEN its DLQ copy is the pointer with its size attribute (never the payload, which may exceed the DLQ's limit)
    (sent,) = sqs.entries("SendMessage")
    assert sent["MessageBody"] == body and sent["MessageAttributes"][SIZE_ATTRIBUTE] == attributes[SIZE_ATTRIBUTE]
    # AND its object stays for it
    assert store.flush(10) and (BUCKET, "k1") in s3.objects


def test_an_ordinary_message_makes_no_call_into_the_payload_module_and_no_s3_client() -> None:
    # GIVEN ordinary messages, with attributes of their own
    sqs = FakeSQS(FakeClock())
    sqs.add("a", "b", message_attributes={"tenant": {"DataType": "String", "StringValue": "t1"}})
    sqs.add("c")
    made: list[int] = []
    store = PayloadStore(lambda: made.append(1))
    calls: list[str] = []
    module = sys.modules[PayloadStore.__module__].__file__

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename == module:
            calls.append(frame.f_code.co_name)

    # WHEN the worker runs them, every thread profiled
    threading.setprofile(profile)
    try:
        with running_worker(sqs, URL, lambda b, m: None, clock=sqs.clock, worker_args={"payloads": store}, **UNIT):
            sys.setprofile(profile)
            assert wait_for(lambda: len(deleted(sqs)) == 3, timeout_s=10)
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]
        sys.setprofile(None)
    # THEN nothing of sqslease.payload_pointer ran for them (the flush at the drain is the worker's only call: with
    # nothing queued it takes no lock and asks no predicate) and no S3 client was made
    assert calls == ["flush"] and made == []


# -- the Lambda adapter -----------------------------------------------------------------------------------------


def pointer_event(s3: FakeS3, *payloads: str) -> dict[str, Any]:
    """Lambda's event of pointer records (camelCase attributes, as Lambda sends them), one object each."""
    bodies = []
    event_attributes = []
    for i, payload in enumerate(payloads):
        body, attributes = offload(s3, BUCKET, payload, f"k{i}")
        bodies.append(body)
        value = attributes[SIZE_ATTRIBUTE]
        event_attributes.append(
            {
                SIZE_ATTRIBUTE: {
                    "stringValue": value["StringValue"],
                    "dataType": "Number",
                    "stringListValues": [],
                    "binaryListValues": [],
                }
            }
        )
    event = fake_event(bodies)
    for record, attributes in zip(event["Records"], event_attributes, strict=True):
        record["messageAttributes"] = attributes
    return event


def test_the_lambda_adapter_hands_the_payload_over_deletes_the_record_then_its_object() -> None:
    # GIVEN a record pointing at its payload, and one that cannot be read
    s3, sqs, emf = FakeS3(), FakeSQS(), io.StringIO()
    event = pointer_event(s3, PAYLOAD, "gone")
    del s3.objects[BUCKET, "k1"]
    seen: list[str] = []
    # WHEN an invocation runs them
    response = lambda_adapter.process_event(
        event,
        FakeContext(30),
        lambda body, message: seen.append(body),
        LeaseSettings(visibility_timeout=40, heartbeat=False),
        sqs,
        emf=EmfLogger(emf),
        payloads=PayloadStore(lambda: s3),
    )
    # THEN the handler saw the first one's payload; the adapter deleted that record itself (only a confirmed delete
    # may take the object) and its object is gone by the time the invocation returns
    assert seen == [PAYLOAD]
    assert deleted(sqs) == ["rh-0"] and s3.objects == {}
    # AND the unreadable one is a batch item failure, released by the failure policy, its line naming the error
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert outcomes(emf) == {"m0": "success", "m1": "failure"}
    assert "NoSuchKey" in read_emf(emf)[1]["Error"]


def test_without_deletion_the_lambda_adapter_leaves_the_record_to_lambda_and_keeps_the_object() -> None:
    s3, sqs = FakeS3(), FakeSQS()
    response = lambda_adapter.process_event(
        pointer_event(s3, PAYLOAD),
        FakeContext(30),
        lambda body, message: None,
        LeaseSettings(visibility_timeout=40, heartbeat=False),
        sqs,
        emf=EmfLogger(io.StringIO()),
        payloads=PayloadStore(lambda: s3, delete=False),
    )
    assert response == {"batchItemFailures": []} and sqs.calls == [] and (BUCKET, "k0") in s3.objects


def test_the_objects_queued_meanwhile_are_deleted_in_one_request_per_bucket() -> None:
    # GIVEN a store whose thread is deleting one object
    s3 = FakeS3()
    for bucket, key in ((BUCKET, "a"), (BUCKET, "b"), (BUCKET, "c"), ("other", "d")):
        s3.put(bucket, key, "x")
    store = PayloadStore(lambda: s3)
    entered, hold = threading.Event(), threading.Event()
    real = s3.delete_object

    def held_delete(**request: Any) -> dict[str, Any]:
        entered.set()
        hold.wait(10)
        return real(**request)

    s3.delete_object = held_delete  # type: ignore[method-assign]
    store.delete_later(PayloadPointer(BUCKET, "a", 1, ""))
    assert entered.wait(10)
    # WHEN three more are queued meanwhile, two in one bucket
    for bucket, key in ((BUCKET, "b"), ("other", "d"), (BUCKET, "c")):
        store.delete_later(PayloadPointer(bucket, key, 1, ""))
    hold.set()
    # THEN the two of one bucket go in one DeleteObjects, the other alone
    assert store.flush(10) and s3.objects == {}
    assert [(op, bucket, keys) for op, bucket, keys in s3.calls] == [
        ("DeleteObject", BUCKET, ["a"]),
        ("DeleteObjects", BUCKET, ["b", "c"]),
        ("DeleteObject", "other", ["d"]),
    ]


# -- the setting ------------------------------------------------------------------------------------------------


def test_delete_payloads_is_a_setting_the_worker_and_the_lambda_adapter_keep_objects_by(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN SQSLEASE_DELETE_PAYLOADS=false, as a job type with delete_payloads=False tells its consumer
    settings = ConsumerConfig.from_env({"SQSLEASE_DELETE_PAYLOADS": "false"}).lease
    assert settings.delete_payloads is False and LeaseSettings().delete_payloads is True
    assert ConsumerConfig.from_args(["--delete-payloads", "false"], environ={}).lease.delete_payloads is False
    # WHEN a worker and the Lambda adapter's process store are made with it THEN neither deletes an object
    worker = Worker(FakeSQS(), URL, lambda body, message: None, settings)
    assert worker.processor.payloads.delete is False
    monkeypatch.setattr(lambda_adapter, "_payloads", None)
    assert lambda_adapter.env_payloads(settings).delete is False
    monkeypatch.setattr(lambda_adapter, "_payloads", None)
    assert lambda_adapter.env_payloads(LeaseSettings()).delete is True
