"""What the runtime does per message, pinned as counts (the timings are in ``bench/runtime_bench.py``): an EMF line
of a success is formatted without the JSON encoder and is the text ``record`` writes; OpenTelemetry without a
provider costs no lookup per message; a batch put for the handlers wakes one handler per message, not all; the
receiver waiting for room is woken by the handler that makes it; a settle's result is a light future."""

from __future__ import annotations

import io
import json
import random
import threading
from typing import Any

import pytest
from opentelemetry import trace
from support.counting import CountingCondition
from support.fakes import FakeContext, FakeSQS
from support.lambda_events import fake_event
from support.waiting import wait_for
from support.worker_threads import running_worker

from sqslease import emf_text, lambda_adapter
from sqslease.emf import EmfLogger
from sqslease.emf_text import millis, millis_text
from sqslease.emf_writer import LineWriter
from sqslease.fifo import ReadyQueue
from sqslease.handler_pool import HandlerPool
from sqslease.invocation import QUEUE_URL_ENV
from sqslease.lease import Lease
from sqslease.lease_table import LeaseScheduler
from sqslease.message import Message
from sqslease.otel import OtelHooks
from sqslease.processor import MessageProcessor
from sqslease.receiver import ROOM_WAIT_S
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler
from sqslease.settle_future import SettleFuture

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"


def message(i: int, lease: Lease | None = None) -> Message:
    return Message(f"m{i}", f"rh-{i}", f"b{i}", URL, lease or Lease(f"rh-{i}", 0.0, 60.0))


@pytest.mark.parametrize("stack", [None, "Dev-Counted"])
def test_a_success_line_is_formatted_without_the_json_encoder_and_is_what_record_writes(
    monkeypatch: pytest.MonkeyPatch, stack: str | None
) -> None:
    # GIVEN a logger whose JSON encoder counts its calls (a consumer told its stack, or not)
    encoded: list[Any] = []
    real_encode = emf_text.ENCODER.encode
    monkeypatch.setattr(emf_text.ENCODER, "encode", lambda o: encoded.append(o) or real_encode(o))
    common: dict[str, Any] = {"job_type": "Counted", "queue": "q", "receive_count": 2, "extensions": 1, "stack": stack}
    cases: list[dict[str, Any]] = [
        {"message_id": "a", "processing_ms": 12.3456, "outcome": "success", "lease_lost": False, "queue_ms": 80.25},
        {"message_id": "b", "processing_ms": 0, "outcome": "released", "lease_lost": True},
        {"message_id": "c", "processing_ms": 7.0, "outcome": "timed_out", "lease_lost": False},
    ]
    emitted, recorded = io.StringIO(), io.StringIO()
    for case in cases:  # a template per outcome made first, as the first line of each would
        EmfLogger(io.StringIO()).record(**common, **case)
    encoded.clear()
    # WHEN the runtime writes each line: through emit, and through a consumer's LineWriter (positional)
    lines_of = LineWriter(EmfLogger(emitted), common["job_type"], common["queue"], stack)
    for case in cases:
        EmfLogger(emitted).emit(**common, **case)
        lines_of.emit(
            case["message_id"],
            case["processing_ms"],
            case["outcome"],
            2,
            1,
            case["lease_lost"],
            None,
            case.get("queue_ms"),
        )
    # THEN nothing went through the encoder, and each line is the text record() writes, timestamps aside
    assert encoded == []
    for case in cases:
        EmfLogger(recorded).record(**common, **case)
        EmfLogger(recorded).record(**common, **case)
    lines = [json.loads(x) for x in emitted.getvalue().splitlines()]
    expected = [json.loads(x) for x in recorded.getvalue().splitlines()]
    assert len(lines) == len(expected) == 6
    for line, other in zip(lines, expected, strict=True):
        line["_aws"]["Timestamp"] = other["_aws"]["Timestamp"]
    assert [json.dumps(x, separators=(",", ":")) for x in lines] == [
        json.dumps(x, separators=(",", ":")) for x in expected
    ]
    assert all(("Stack" in line) == (stack is not None) for line in lines)
    # an error line goes through record(): its ErrorType and Error
    EmfLogger(emitted).emit(**common, **cases[2], error=ValueError("bad"))
    assert json.loads(emitted.getvalue().splitlines()[-1])["ErrorType"] == "ValueError"
    lines_of.emit("c", 7.0, "timed_out", 2, 1, False, ValueError("bad"))
    assert json.loads(emitted.getvalue().splitlines()[-1])["Error"] == "bad"


def test_milliseconds_are_written_as_json_writes_their_rounded_value() -> None:
    rng = random.Random(16)
    values: list[float] = [0, 0.0, -0.0, 1.5, 2.0, 0.0005, 0.0015, 1e-9, 123456789.1234, 999_999_999_999.9]
    values += [rng.uniform(0, 1e4) for _ in range(20_000)] + [rng.expovariate(1) for _ in range(20_000)]
    assert [v for v in values if millis_text(v) != json.dumps(millis(v))] == []


def test_without_a_tracer_provider_a_message_costs_no_provider_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN no global tracer provider (whatever an earlier test set) and none named by the environment
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    monkeypatch.delenv("OTEL_PYTHON_TRACER_PROVIDER", raising=False)
    hooks = OtelHooks("Counted")
    looked_up: list[int] = []
    real = trace.get_tracer_provider
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: looked_up.append(1) or real())
    # WHEN 100 messages pass its hooks
    for i in range(100):
        hooks.before(message(i))
        hooks.after(message(i), "success", 0.001, None)
    # THEN no span was started and the provider was never looked up
    assert looked_up == [] and hooks._spans == {}
    assert not hooks.recording()


def test_an_all_success_invocation_encodes_no_json_and_looks_no_provider_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    encoded: list[Any] = []
    real_encode = emf_text.ENCODER.encode
    monkeypatch.setattr(emf_text.ENCODER, "encode", lambda o: encoded.append(o) or real_encode(o))
    settings = LeaseSettings(visibility_timeout=180, heartbeat=False, job_type="Counted")
    stream = io.StringIO()

    def run() -> dict[str, Any]:
        return lambda_adapter.process_event(
            fake_event([f"r{i}" for i in range(10)]),
            FakeContext(30),
            lambda body, message: None,
            settings,
            FakeSQS(),
            emf=EmfLogger(stream),
        )

    assert run() == {"batchItemFailures": []}  # the first: templates made
    encoded.clear()
    looked_up: list[int] = []
    real = trace.get_tracer_provider
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: looked_up.append(1) or real())
    assert run() == {"batchItemFailures": []}
    assert encoded == [] and looked_up == []
    assert len(stream.getvalue().splitlines()) == 20


def test_a_batch_for_the_handlers_wakes_one_waiting_handler_per_message_and_none_when_none_waits() -> None:
    # GIVEN a ready queue with no handler waiting
    ready = ReadyQueue()
    ready._cond = counting = CountingCondition(ready._lock)
    # WHEN a batch is put: THEN nobody is woken (the handlers are busy: they take it when they come back)
    assert ready.put([message(1), message(2)])
    assert counting.notified == []
    assert [m.message_id for m in (ready.take(0.0), ready.take(0.0)) if m is not None] == ["m1", "m2"]
    # GIVEN 4 handlers waiting
    taken: list[str] = []
    handlers = [threading.Thread(target=lambda: taken.append(ready.get().message_id)) for _ in range(4)]  # type: ignore[union-attr]
    for handler in handlers:
        handler.start()
    assert wait_for(lambda: ready._idle == 4, timeout_s=10)
    # WHEN a batch of 3 is put: THEN 3 of them are woken, not all 4
    assert ready.put([message(3), message(4), message(5)])
    assert counting.notified == [3]
    assert wait_for(lambda: len(taken) == 3, timeout_s=10)
    # AND a batch larger than the handlers waiting wakes each waiting one once
    assert ready.put([message(6), message(7)])
    assert counting.notified == [3, 1]
    for handler in handlers:
        handler.join(timeout=10)
    assert sorted(taken) == ["m3", "m4", "m5", "m6"] and len(ready) == 1


def test_the_receiver_waiting_for_room_is_woken_by_the_handler_that_makes_it() -> None:
    # GIVEN a pool of one handler running a message that waits for a gate, and a receiver waiting for an empty pool
    gate, started = threading.Event(), threading.Event()

    def gated(body: str, message: Message) -> None:
        started.set()
        gate.wait(30)

    settings = LeaseSettings(job_type="Counted")
    scheduler = LeaseScheduler()
    settler = Settler(FakeSQS(), URL, scheduler)
    processor = MessageProcessor(gated, settler, settings, FakeSQS(), EmfLogger(io.StringIO()), queue_name="jobs")
    pool = HandlerPool(processor, settler, fifo=False, stopping=threading.Event(), clock=lambda: 0.0)
    pool.start(1)
    assert pool.put([message(1, scheduler.add("rh-1", 0.0, 60))])
    assert started.wait(30)
    returned = threading.Event()
    waiter = threading.Thread(target=lambda: (pool.wait_for_room(0, timeout=60), returned.set()))
    waiter.start()
    assert not returned.wait(0.2)  # the message still runs: no room yet
    # WHEN the handler ends its message
    gate.set()
    # THEN the receiver wakes then, not at its 60 s timeout
    assert returned.wait(30)
    waiter.join()
    pool.take_unstarted()
    pool.join(until=5)
    settler.close(timeout=5)


def test_a_settle_future_resolves_once_and_waits_only_when_asked() -> None:
    future = SettleFuture()
    assert not future.done() and future._event is None
    with pytest.raises(TimeoutError):
        future.result(timeout=0.01)
    resolver = threading.Timer(0.05, future.set_result, args=(True,))
    resolver.start()
    assert future.result(timeout=30) is True and future.done()
    resolver.join()
    with pytest.raises(Exception, match="already resolved"):
        future.set_result(False)
    unwaited = SettleFuture()
    unwaited.set_result(False)
    assert unwaited.result() is False and unwaited._event is None  # nobody waited: no event was made


def test_a_full_batch_of_deletes_is_sent_without_waiting_out_the_linger() -> None:
    # GIVEN a settler that would wait a minute for a batch to fill
    sqs = FakeSQS()
    scheduler = LeaseScheduler()
    settler = Settler(sqs, URL, scheduler, linger=60)
    # WHEN 10 deletes are queued
    futures = [settler.delete(scheduler.add(f"rh-{i}", 0.0, 600)) for i in range(10)]
    # THEN one request of 10 goes at once, and every delete is confirmed
    assert all(f.result(timeout=30) for f in futures)
    assert [len(entries) for _, _, entries in sqs.of("DeleteMessageBatch")] == [10]
    assert len(scheduler) == 0
    settler.close(timeout=5)


class RecordedWaits:
    """The receiver's stop event, each of its waits recorded in ``log`` (``"wait <seconds>"``)."""

    def __init__(self, event: threading.Event, log: list[str]) -> None:
        self.event, self.log = event, log

    def is_set(self) -> bool:
        return self.event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        self.log.append(f"wait {timeout}")
        return self.event.wait(timeout)


def test_a_worker_at_its_in_flight_limit_looks_for_room_every_20_ms_not_in_a_busy_loop() -> None:
    # GIVEN a worker of 4 handlers allowed 2 leases, whose handlers wait for a gate
    sqs = FakeSQS()
    sqs.add(*(f"b{i}" for i in range(10)))
    gate = threading.Event()
    with running_worker(sqs, URL, lambda body, message: gate.wait(30), concurrency=4, max_in_flight=2) as worker:
        log: list[str] = []  # the receiver's looks at its capacity, and its waits, in order
        real_capacity = worker.receiver._capacity
        worker.receiver._capacity = lambda: log.append("look") or real_capacity()  # type: ignore[method-assign]
        worker.receiver._stopping = RecordedWaits(worker.receiver._stopping, log)  # type: ignore[assignment]
        assert wait_for(lambda: worker.handlers.outstanding() == 2, timeout_s=30)
        # WHEN it holds its 2 leases, with handlers free, for ten of its rounds
        held_from = len(log)
        assert wait_for(lambda: log[held_from:].count(f"wait {ROOM_WAIT_S}") >= 10, timeout_s=30)
        rounds = " ".join(log[held_from:]).split(f"wait {ROOM_WAIT_S}")[1:-1]  # whole rounds between two waits
        gate.set()
    # THEN each round looked (twice at most) and then waited ROOM_WAIT_S (20 ms): never a busy loop; and it
    # received no more than its limit meanwhile
    assert rounds and all(round_.split() in (["look"], ["look", "look"]) for round_ in rounds), rounds
    assert max(entry["MaxNumberOfMessages"] for entry in sqs.entries("ReceiveMessage")) <= 2
