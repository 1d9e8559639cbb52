"""What the runtime itself costs, pinned structurally (the timings are in ``bench/runtime_bench.py``): an
all-success Lambda invocation whose leases outlive it starts no thread and sends ceil(records / 10) SQS requests at
most; the settings are parsed once per process; a lease that does need extending is still heartbeated and a failed
record still released; an EMF line is exactly its object's JSON."""

from __future__ import annotations

import concurrent.futures
import io
import json
import threading
from collections.abc import Iterator

import pytest
from support.emf import outcomes, read_emf
from support.fakes import FakeContext, FakeSQS
from support.lambda_events import fake_event
from support.waiting import wait_for

from sqslease import lambda_adapter
from sqslease.config import ConsumerConfig
from sqslease.emf import EmfLogger
from sqslease.invocation import QUEUE_URL_ENV
from sqslease.lease_table import LeaseScheduler
from sqslease.message import Message
from sqslease.renewal import heartbeat_needed
from sqslease.rules import visibility_timeout_for_lambda
from sqslease.settings import FailurePolicy, LeaseSettings

FUNCTION_TIMEOUT_S = 30


@pytest.fixture(autouse=True)
def no_configured_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)


@pytest.fixture
def thread_starts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the threads started meanwhile (pool threads included)."""
    started: list[str] = []
    real_start = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        started.append(thread.name)
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    yield started


def lambda_job_settings(lease_extension: bool) -> LeaseSettings:
    """What a ``LambdaJob`` of a 30 s function hands its function (its VT derived from the timeout)."""
    vt = visibility_timeout_for_lambda(FUNCTION_TIMEOUT_S, 0, lease_extension=lease_extension)
    return LeaseSettings(visibility_timeout=vt, heartbeat=lease_extension)


def noop(body: str, message: Message) -> None:
    return None


@pytest.mark.parametrize("lease_extension", [False, True])
def test_an_all_success_invocation_of_a_lambda_job_starts_no_thread(
    lease_extension: bool, thread_starts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a LambdaJob's settings (its VT longer than the function's timeout) and 10 records that all succeed
    sqs, emf = FakeSQS(), io.StringIO()
    futures: list[object] = []  # each builds a condition: the renewal's round, run inline, needs none
    real_future = concurrent.futures.Future.__init__
    monkeypatch.setattr(concurrent.futures.Future, "__init__", lambda f: futures.append(f) or real_future(f))
    # WHEN an invocation with the whole timeout left runs them
    response = lambda_adapter.process_event(
        fake_event([f"r{i}" for i in range(10)]),
        FakeContext(FUNCTION_TIMEOUT_S),
        noop,
        lambda_job_settings(lease_extension),
        sqs,
        emf=EmfLogger(emf),
    )
    # THEN no thread started; the only SQS request is the renewal at the start (with lease extension): one for 10
    assert response == {"batchItemFailures": []}
    assert thread_starts == [] and futures == []
    assert [op for _, op, _ in sqs.calls] == (["ChangeMessageVisibilityBatch"] if lease_extension else [])
    assert set(outcomes(emf).values()) == {"success"}


def test_a_renewal_of_more_than_10_records_sends_ceil_n_over_10_requests_and_starts_no_heartbeat(
    thread_starts: list[str],
) -> None:
    sqs = FakeSQS()
    response = lambda_adapter.process_event(
        fake_event([f"r{i}" for i in range(25)]), FakeContext(FUNCTION_TIMEOUT_S), noop, lambda_job_settings(True), sqs
    )
    assert response == {"batchItemFailures": []}
    assert sorted(len(entries) for _, _, entries in sqs.of("ChangeMessageVisibilityBatch")) == [5, 10, 10]
    assert [op for _, op, _ in sqs.calls if op != "ChangeMessageVisibilityBatch"] == []
    # the first request of 10 on the invocation's thread, the other two on the pool: no heartbeat thread
    assert thread_starts and "sqslease-heartbeat" not in thread_starts
    assert all(name.startswith("sqslease-extend") for name in thread_starts)


def test_a_failed_record_starts_only_the_release_sender_and_is_released(thread_starts: list[str]) -> None:
    # GIVEN a LambdaJob without lease extension, whose failure policy releases at once
    settings = LeaseSettings(visibility_timeout=180, heartbeat=False, failure_policy=FailurePolicy.VISIBLE_NOW)
    sqs = FakeSQS()

    def fail_b(body: str, message: Message) -> None:
        if body == "b":
            raise ValueError("b fails")

    # WHEN one of three records fails
    response = lambda_adapter.process_event(fake_event(["a", "b", "c"]), FakeContext(30), fail_b, settings, sqs)
    # THEN it is reported and released by the one sender thread started, and nothing else is sent
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert thread_starts == ["sqslease-release"]
    assert [(e["ReceiptHandle"], e["VisibilityTimeout"]) for e in sqs.entries("ChangeMessageVisibilityBatch")] == [
        ("rh-1", 0)
    ]
    assert sqs.of("DeleteMessageBatch") == []


def test_a_record_that_outlives_its_lease_is_still_heartbeated(thread_starts: list[str]) -> None:
    # GIVEN a 2 s lease (threshold 1 s) in a 60 s invocation: the renewed lease comes due while the invocation runs
    settings = LeaseSettings(visibility_timeout=2, extension_threshold=1, heartbeat_interval=0.1)
    sqs, emf = FakeSQS(), io.StringIO()
    extended: list[bool] = []

    def outlives(body: str, message: Message) -> None:  # runs until the heartbeat extended its lease once more
        extended.append(wait_for(lambda: len(sqs.of("ChangeMessageVisibilityBatch")) >= 2, timeout_s=30))

    # WHEN the record runs past its lease
    response = lambda_adapter.process_event(
        fake_event(["long"]), FakeContext(60), outlives, settings, sqs, emf=EmfLogger(emf)
    )
    # THEN the heartbeat thread ran and extended it beyond the renewal; the record succeeded
    assert response == {"batchItemFailures": []}
    assert extended == [True]
    assert "sqslease-heartbeat" in thread_starts
    (line,) = read_emf(emf)
    assert line["Outcome"] == "success" and line["Extensions"] >= 2


def test_the_heartbeat_is_needed_only_for_a_live_lease_due_before_the_invocation_ends() -> None:
    scheduler = LeaseScheduler()
    short, long = scheduler.add("short", 0.0, 20), scheduler.add("long", 0.0, 40)
    # due at 15 s and 35 s (threshold 5 s): an invocation ending at 30 s needs the heartbeat for "short" only
    assert heartbeat_needed([short, long], 5, ends_at=30)
    assert not heartbeat_needed([long], 5, ends_at=30)
    scheduler.lost(short)
    assert not heartbeat_needed([short, long], 5, ends_at=30)
    assert heartbeat_needed([long], 5, ends_at=None)  # no deadline known: always


def test_the_settings_are_parsed_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a fresh process (no settings parsed yet) whose environment sets the lease settings
    monkeypatch.setattr(lambda_adapter, "_env_settings", None)
    monkeypatch.setattr(lambda_adapter, "_env_store", None)  # idempotency off, decided: only the lease is read
    monkeypatch.setenv("SQSLEASE_VISIBILITY_TIMEOUT", "180")
    monkeypatch.setenv("SQSLEASE_HEARTBEAT", "false")
    parsed: list[LeaseSettings] = []
    real_from_env = ConsumerConfig.from_env.__func__  # type: ignore[attr-defined]

    def counting_from_env(cls: type[ConsumerConfig], *args: object, **kwargs: object) -> ConsumerConfig:
        config: ConsumerConfig = real_from_env(cls, *args, **kwargs)
        parsed.append(config.lease)
        return config

    monkeypatch.setattr(ConsumerConfig, "from_env", classmethod(counting_from_env))
    sqs = FakeSQS()
    handler = lambda_adapter.sqs_batch_handler(noop, sqs=sqs)
    # WHEN three invocations run, the environment changed before the third
    for i in range(3):
        if i == 2:
            monkeypatch.setenv("SQSLEASE_HEARTBEAT", "true")
        assert handler(fake_event(["a"]), FakeContext(30)) == {"batchItemFailures": []}
    # THEN the settings were parsed once, on the first, and kept (Lambda fixes a process's environment)
    assert len(parsed) == 1 and parsed[0].visibility_timeout == 180 and not parsed[0].heartbeat
    assert sqs.calls == []  # heartbeat still off: no renewal on the third either


def test_an_emf_line_is_exactly_the_json_of_its_object() -> None:
    stream = io.StringIO()
    emf = EmfLogger(stream)
    lines = [
        emf.record(
            job_type="Thumbnails",
            queue="thumbs",
            message_id="059f36b4-87a3-44ab-83d2-661975830a7d",
            processing_ms=12.3456,
            outcome="success",
            receive_count=1,
            extensions=0,
            lease_lost=False,
        ),
        emf.record(
            job_type='Quoted "é"',
            queue="q\n",
            message_id="m\u00e9",
            processing_ms=0,
            outcome="released",
            receive_count=4,
            extensions=3,
            lease_lost=True,
            timestamp_ms=1_700_000_000_000,
        ),
        emf.record(
            job_type="Thumbnails",
            queue="thumbs",
            message_id="m2",
            processing_ms=float("nan"),
            outcome="failure",
            receive_count=2,
            extensions=1,
            lease_lost=False,
            error=ValueError("bad\ninput"),
        ),
    ]
    assert stream.getvalue().splitlines() == [json.dumps(line, separators=(",", ":")) for line in lines]
    # a field the template does not know follows the others, encoded alike
    line = dict(lines[0], QueueTime=250.5)
    assert json.loads(emf._encode(line)) == line


def test_a_line_with_a_queue_time_and_one_without_each_get_their_own_metric_directive() -> None:
    # GIVEN one success line without a queue time (no SentTimestamp), then one with
    stream = io.StringIO()
    emf = EmfLogger(stream)
    common = {"job_type": "J", "queue": "q", "outcome": "success", "receive_count": 1, "extensions": 0}
    lines = [
        emf.record(message_id="a", processing_ms=1.5, lease_lost=False, **common),  # type: ignore[arg-type]
        emf.record(message_id="b", processing_ms=2.5, lease_lost=False, queue_ms=80.25, **common),  # type: ignore[arg-type]
    ]
    # THEN each is exactly the JSON of its object: the second's directive declares QueueTime, the first's does not
    assert stream.getvalue().splitlines() == [json.dumps(line, separators=(",", ":")) for line in lines]
    names = [
        [m["Name"] for m in json.loads(x)["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
        for x in stream.getvalue().splitlines()
    ]
    assert "QueueTime" not in names[0] and "QueueTime" in names[1]
