"""``QueueTime`` on the EMF line of each message that ran: from its ``SentTimestamp`` to the start of the run, in
the worker and the Lambda adapter alike; on scripted clients (exact sent times) and against moto_server (real
waits)."""

from __future__ import annotations

import io
import time

from support.emf import read_emf
from support.fakes import FakeClock, FakeContext, FakeSQS
from support.lambda_events import fake_event, lambda_event
from support.moto_queues import counts, make_queue, send
from support.waiting import wait_for
from support.worker_threads import LEASES_30S as UNIT
from support.worker_threads import emf_records, running_worker

from jobqueues.emulator.server import LocalServer
from sqslease.emf import QUEUE_TIME_METRIC, EmfLogger
from sqslease.lambda_adapter import process_event
from sqslease.lease import Lease
from sqslease.message import Message
from sqslease.receiver import RECEIVE_ATTRIBUTES
from sqslease.settings import FailurePolicy, LeaseSettings

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
SETTINGS = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW)


def now_ms() -> int:
    return int(time.time() * 1000)


def declared(line: dict) -> list[dict]:
    return line["_aws"]["CloudWatchMetrics"][0]["Metrics"]


def message(attributes: dict[str, str]) -> Message:
    return Message("m", "rh", "", URL, Lease("rh", 0.0, 30.0), attributes=attributes)


def test_queue_time_is_from_the_sent_timestamp_and_never_negative() -> None:
    # GIVEN messages sent at 1,000 ms, with a SentTimestamp that is no number, and with none
    sent = message({"SentTimestamp": "1000"})
    # THEN the wait runs from it; a consumer clock behind SQS's gives 0 (CloudWatch has no percentile of a
    # metric with a negative value); without a usable SentTimestamp there is none
    assert sent.queue_time_ms(3_500.25) == 2_500.25
    assert sent.queue_time_ms(900) == 0
    assert message({"SentTimestamp": "soon"}).queue_time_ms(3_500) is None
    assert message({}).queue_time_ms(3_500) is None


def test_a_line_with_a_queue_time_declares_it_as_a_metric_in_milliseconds() -> None:
    emf = EmfLogger(io.StringIO())
    common = {"job_type": "J", "queue": "q", "receive_count": 1, "extensions": 0, "lease_lost": False}
    # WHEN a line is written with a queue time, and one (a release) without
    ran = emf.record(message_id="a", processing_ms=5, outcome="success", queue_ms=1234.5678, **common)
    released = emf.record(message_id="b", processing_ms=0, outcome="released", **common)
    # THEN only the first carries QueueTime, and declares it in milliseconds
    assert ran["QueueTime"] == 1234.568 and QUEUE_TIME_METRIC in declared(ran)
    assert QUEUE_TIME_METRIC == {"Name": "QueueTime", "Unit": "Milliseconds"}
    assert "QueueTime" not in released and QUEUE_TIME_METRIC not in declared(released)


def test_the_worker_asks_for_the_sent_timestamp_and_logs_how_long_the_message_waited() -> None:
    # GIVEN a message SQS accepted 5 s ago
    sqs = FakeSQS(FakeClock())
    sqs.add("a", sent_ms=now_ms() - 5_000)
    # WHEN the worker runs it
    with running_worker(sqs, URL, lambda body, m: None, clock=sqs.clock, **UNIT) as worker:
        assert wait_for(lambda: emf_records(worker), timeout_s=10)
    # THEN it asked for SentTimestamp, and the line says the message waited at least those 5 s
    assert "SentTimestamp" in RECEIVE_ATTRIBUTES
    assert all("SentTimestamp" in p["MessageSystemAttributeNames"] for p in sqs.entries("ReceiveMessage"))
    (line,) = emf_records(worker)
    assert 5_000 <= line["QueueTime"] < 5_000 + 60_000 and QUEUE_TIME_METRIC in declared(line)


def test_the_lambda_adapter_logs_the_queue_time_of_records_that_ran_only() -> None:
    # GIVEN a batch SQS accepted 7 s ago, with time left for the first record only
    clock, emf = FakeClock(), io.StringIO()

    def handler(body: str, m: Message) -> None:
        clock.sleep(4.2)  # into the deadline margin (0.8 s left of 5), not past the hang point (0.5 s left)

    settings = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2, deadline_margin=1)
    event = fake_event(["r1", "r2"], sent_ms=now_ms() - 7_000)
    # WHEN the adapter runs it and the deadline guard releases the second record unrun
    process_event(
        event, FakeContext(5, clock), handler, settings, FakeSQS(clock), emf=EmfLogger(emf),
        raise_on_entire_batch_failure=False,
    )  # fmt: skip
    # THEN the record that ran carries QueueTime (at least the 7 s), the released one none
    ran, released = read_emf(emf)
    assert ran["Outcome"] == "success" and 7_000 <= ran["QueueTime"] < 7_000 + 60_000
    assert released["Outcome"] == "released" and "QueueTime" not in released


def test_a_worker_run_logs_at_least_the_time_the_message_waited_on_moto(local_aws: LocalServer) -> None:
    # GIVEN messages that wait on the queue before any worker runs
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["a", "b"])
    sent_by = time.time()
    time.sleep(1.5)
    # WHEN a worker starts and runs them
    waited_ms = (time.time() - sent_by) * 1000
    with running_worker(local_aws, queues.url, lambda body, m: None) as worker:
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0), timeout_s=20)
    # THEN each line's QueueTime covers at least that wait (SQS stamped them before `send` returned)
    lines = emf_records(worker)
    assert len(lines) == 2 and all(line["QueueTime"] >= waited_ms for line in lines)
    assert all(QUEUE_TIME_METRIC in declared(line) for line in lines)


def test_a_lambda_record_from_moto_carries_its_queue_time(local_aws: LocalServer) -> None:
    # GIVEN a record that waited on the queue, received as Lambda's poller receives it
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["a"])
    sent_by = time.time()
    time.sleep(1.2)
    event = lambda_event(local_aws, queues.url, vt=30)
    emf = io.StringIO()
    # WHEN the adapter runs it
    waited_ms = (time.time() - sent_by) * 1000
    process_event(event, FakeContext(30), lambda body, m: None, SETTINGS, local_aws.client("sqs"), emf=EmfLogger(emf))
    # THEN its line's QueueTime covers at least that wait
    (line,) = read_emf(emf)
    assert "SentTimestamp" in event["Records"][0]["attributes"] and line["QueueTime"] >= waited_ms
