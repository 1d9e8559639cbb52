"""GIVEN messages with a ``MessageGroupId`` (a tenant on a fair standard queue, or a FIFO group) WHEN a consumer
settles them THEN each EMF line names its group (``MessageGroupId``, a property: the metrics keep their one
``JobType`` dimension, so their cost does not grow with the tenants), in the Lambda adapter and the worker alike;
a message without a group gets no such field. On fakes, and against moto_server (a fair queue is a standard one)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from support.emf import read_emf
from support.fakes import FakeClock, FakeContext, FakeSQS
from support.lambda_events import fake_event
from support.moto_queues import make_queue
from support.waiting import wait_for
from support.worker_threads import LEASES_30S as UNIT
from support.worker_threads import emf_records, running_worker

from jobqueues.emulator.server import LocalServer
from sqslease import emf_text
from sqslease.emf import EmfLogger
from sqslease.emf_text import GROUP_FIELD
from sqslease.lambda_adapter import process_event
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/tenants"
COMMON: dict[str, Any] = {"job_type": "Reports", "queue": "q", "receive_count": 1, "extensions": 0}


def test_the_group_is_a_property_of_the_line_and_never_a_dimension(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a logger whose JSON encoder counts its calls, its templates made (as the first line of each does)
    encoded: list[Any] = []
    real_encode = emf_text.ENCODER.encode
    cases: list[dict[str, Any]] = [
        {"message_id": "a", "processing_ms": 3.5, "outcome": "success", "lease_lost": False, "queue_ms": 12.0},
        {"message_id": "b", "processing_ms": 0, "outcome": "released", "lease_lost": False},
    ]
    for case in cases:
        EmfLogger(io.StringIO()).record(**COMMON, **case)
    monkeypatch.setattr(emf_text.ENCODER, "encode", lambda o: encoded.append(o) or real_encode(o))
    emitted, recorded = io.StringIO(), io.StringIO()
    # WHEN lines of tenants (one whose name needs escaping) are emitted, and recorded
    for case, group in zip(cases, ["tenant-a", 'ten"ant\u00e9'], strict=True):
        EmfLogger(emitted).emit(**COMMON, **case, group=group)
    assert encoded == []  # the usual line still skips the encoder: a group costs no template of its own
    for case, group in zip(cases, ["tenant-a", 'ten"ant\u00e9'], strict=True):
        EmfLogger(recorded).record(**COMMON, **case, group=group)
    lines, expected = read_emf(emitted), read_emf(recorded)
    # THEN each line names its group as a property, after the others; the metrics keep their one dimension
    assert [line[GROUP_FIELD] for line in lines] == ["tenant-a", 'ten"ant\u00e9'] and GROUP_FIELD == "MessageGroupId"
    for line, other in zip(lines, expected, strict=True):
        line["_aws"]["Timestamp"] = other["_aws"]["Timestamp"]
        assert json.dumps(line) == json.dumps(other)  # emit's text is record's, field for field, in order
        assert line["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["JobType"]]
        assert GROUP_FIELD not in {m["Name"] for m in line["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
        assert list(line)[-1] == GROUP_FIELD
    # and a line without a group has no such field
    plain = EmfLogger(io.StringIO()).record(**COMMON, **cases[0])
    assert GROUP_FIELD not in plain


def test_an_error_line_names_its_group_too() -> None:
    out = io.StringIO()
    EmfLogger(out).emit(
        **COMMON, message_id="c", processing_ms=1.0, outcome="failure", lease_lost=False, group="t-9",
        error=ValueError("bad"),
    )  # fmt: skip
    (line,) = read_emf(out)
    assert line[GROUP_FIELD] == "t-9" and line["ErrorType"] == "ValueError"


def test_the_lambda_adapter_writes_each_record_s_group() -> None:
    # GIVEN a batch from a standard (fair) queue: two tenants, and a record without a group
    def handler(body: str, message: Message) -> None:
        if body == "bad":
            raise RuntimeError("declined")

    emf = io.StringIO()
    settings = LeaseSettings(visibility_timeout=30, failure_policy=FailurePolicy.VISIBLE_NOW, job_type="Reports")
    event = fake_event(["ok", "bad", "plain"], groups=["tenant-a", "tenant-b", ""])
    del event["Records"][2]["attributes"]["MessageGroupId"]
    # WHEN the invocation runs it
    process_event(event, FakeContext(60), handler, settings, FakeSQS(), emf=EmfLogger(emf))
    # THEN the success and the failure name their tenants, the ungrouped record none
    lines = read_emf(emf)
    assert [(line["Outcome"], line.get(GROUP_FIELD)) for line in lines] == [
        ("success", "tenant-a"),
        ("failure", "tenant-b"),
        ("success", None),
    ]
    assert GROUP_FIELD not in lines[2]


def test_a_record_released_unrun_names_its_group() -> None:
    # GIVEN a batch with time left for the first record only (the deadline guard releases the second)
    clock, emf = FakeClock(), io.StringIO()
    settings = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2, deadline_margin=1)
    event = fake_event(["r1", "r2"], groups=["tenant-a", "tenant-b"])
    # WHEN the adapter runs it
    process_event(
        event, FakeContext(5, clock), lambda body, m: clock.sleep(4.2), settings, FakeSQS(clock),
        emf=EmfLogger(emf), raise_on_entire_batch_failure=False,
    )  # fmt: skip
    # THEN the released record's line names its tenant too
    assert [(line["Outcome"], line[GROUP_FIELD]) for line in read_emf(emf)] == [
        ("success", "tenant-a"),
        ("released", "tenant-b"),
    ]


def test_the_worker_writes_each_message_s_group() -> None:
    # GIVEN a standard queue with a flood from one tenant and one job of a quiet tenant
    sqs = FakeSQS(FakeClock())
    sqs.add("f1", "f2", "f3", group="noisy")
    sqs.add("q1", group="quiet")
    sqs.add("none")
    # WHEN a worker runs them all
    with running_worker(sqs, URL, lambda body, m: None, clock=sqs.clock, **UNIT) as worker:
        assert wait_for(lambda: len(emf_records(worker)) == 5, timeout_s=10)
    # THEN every line names the group its message was sent to
    groups = {line["MessageId"]: line.get(GROUP_FIELD) for line in emf_records(worker)}
    assert groups == {"m-f1": "noisy", "m-f2": "noisy", "m-f3": "noisy", "m-q1": "quiet", "m-none": None}


def test_against_moto_server_a_standard_queue_keeps_the_group_and_the_worker_logs_it(local_aws: LocalServer) -> None:
    # GIVEN a standard queue (a fair queue is one: the group names the tenant) and messages of two tenants
    url = make_queue(local_aws).url
    sqs = local_aws.client("sqs")
    for body, tenant in (("a1", "tenant-a"), ("a2", "tenant-a"), ("b1", "tenant-b")):
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=tenant)
    # WHEN a worker runs them
    with running_worker(local_aws, url, lambda body, m: None, **UNIT) as worker:
        assert wait_for(lambda: len(emf_records(worker)) == 3, timeout_s=30)
    # THEN each line names its tenant
    lines = emf_records(worker)
    assert sorted(line[GROUP_FIELD] for line in lines) == ["tenant-a", "tenant-a", "tenant-b"]
    assert all(line["Outcome"] == "success" for line in lines)
