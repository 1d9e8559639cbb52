"""A worker of one handler on a standard queue runs its messages on its receiver's thread (no handler thread, no
hand-off per message), and keeps every promise of the threaded pool: the hung-handler path, the drain's bounds, the
poll in flight waited for. On a scripted client and a clock that moves only when told."""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Callable

import pytest
from support.emf import outcomes
from support.fakes import FakeClock, FakeSQS
from support.waiting import wait_for
from support.worker_runs import WorkerRun
from support.worker_threads import LEASES_300S as UNIT
from support.worker_threads import running_worker

from sqslease.drain import DRAIN_POLL_MARGIN_S
from sqslease.emf import EmfLogger
from sqslease.fifo import ReadyQueue
from sqslease.handler_pool import runs_inline
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings
from sqslease.worker import HandlerHungError, Worker

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
RECEIVER_THREAD = "sqslease-receiver"


def advance_until(clock: FakeClock, done: Callable[[], bool], step_s: float = 0.25) -> bool:
    """Move the fake clock ``step_s`` at a time until ``done()``."""
    return wait_for(lambda: done() or bool(clock.sleep(step_s)), timeout_s=20, interval_s=0.05)


def handler_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("sqslease-handler-")]


def test_only_one_handler_on_a_standard_queue_runs_inline() -> None:
    assert runs_inline(1, fifo=False)
    assert not runs_inline(1, fifo=True)  # a parked retry is due while the receiver may be in a long poll
    assert not runs_inline(2, fifo=False)


def test_one_handler_runs_each_batch_on_the_receivers_thread_one_put_a_batch_and_no_wait_for_a_handler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN 20 messages and a worker of one handler whose ready queue counts its puts and gets
    calls: dict[str, int] = {"put": 0, "get": 0}
    real_put, real_get = ReadyQueue.put, ReadyQueue.get

    def put(self: ReadyQueue, messages: list[Message], relay: bool = False) -> bool:
        calls["put"] += 1
        return real_put(self, messages, relay)

    def get(self: ReadyQueue) -> Message | None:
        calls["get"] += 1
        return real_get(self)

    monkeypatch.setattr(ReadyQueue, "put", put)
    monkeypatch.setattr(ReadyQueue, "get", get)
    sqs = FakeSQS(FakeClock())
    sqs.add(*(f"b{i}" for i in range(20)))
    ran_on: list[str] = []
    # WHEN it runs them
    with running_worker(
        sqs, URL, lambda body, m: ran_on.append(threading.current_thread().name), 1, clock=sqs.clock, **UNIT
    ) as worker:
        assert wait_for(lambda: len(sqs.entries("DeleteMessageBatch")) == 20, timeout_s=10)
        threads = handler_threads()
    # THEN every handler call ran on the receiver's thread, no handler thread was started, the messages went to the
    # ready queue once a receive (2 a receive: one handler, one ahead) and nothing ever waited there for one
    assert ran_on == [RECEIVER_THREAD] * 20 and threads == []
    answered = [r for r in sqs.entries("ReceiveMessage") if r["_answered"]]
    assert [len(r["_answered"]) for r in answered] == [2] * 10
    assert calls == {"put": 10, "get": 0}
    assert worker.processed == 20


def test_one_handler_on_a_fifo_queue_keeps_its_handler_thread() -> None:
    sqs = FakeSQS(FakeClock())
    sqs.add("a", group="g")
    ran_on: list[str] = []
    with running_worker(
        sqs, URL + ".fifo", lambda body, m: ran_on.append(threading.current_thread().name), 1, clock=sqs.clock, **UNIT
    ):
        assert wait_for(lambda: sqs.entries("DeleteMessageBatch"), timeout_s=10)
    assert ran_on == ["sqslease-handler-0"]


def test_a_hung_handler_on_the_receivers_thread_is_timed_out_and_the_drain_ends_within_its_bounds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a worker of one handler whose handler of "hang" never returns in time, and "waiting" received with it
    caplog.set_level(logging.INFO, "sqslease")
    clock = FakeClock()
    sqs, emf = FakeSQS(clock), io.StringIO()
    sqs.add("hang", "waiting")
    unblock, started = threading.Event(), threading.Event()

    def handler(body: str, message: Message) -> None:
        if body == "hang":
            started.set()
            unblock.wait(30)

    settings = LeaseSettings(**UNIT, failure_policy=FailurePolicy.VISIBLE_NOW, max_processing_time=60)
    worker = Worker(sqs, URL, handler, settings, concurrency=1, emf=EmfLogger(emf), clock=clock)
    run = WorkerRun(worker)
    try:
        assert wait_for(lambda: started.is_set() and worker.handlers.outstanding() == 2, timeout_s=10)
        # WHEN it has run for max_processing_time, and the clock moves on
        clock.sleep(61)
        assert advance_until(clock, lambda: len(sqs.releases()) == 2)
        raised = run.join()
    finally:
        unblock.set()
    # THEN it was timed out (its thread, the receiver's, cannot be stopped: the worker drained and exits, hung);
    # "waiting" was never started and was released at the drain's release point; the hung one by its failure
    # policy as the worker exited
    assert isinstance(raised, HandlerHungError) and "m-hang" in str(raised)
    assert outcomes(emf) == {"m-hang": "timed_out", "m-waiting": "released"}
    released = dict((handle, at) for at, handle in sqs.releases())
    assert released.keys() == {sqs.handle_of("hang")[0], sqs.handle_of("waiting")[0]}
    assert released[sqs.handle_of("waiting")[0]] >= 61 + settings.poll_wait + DRAIN_POLL_MARGIN_S
    assert sqs.entries("DeleteMessageBatch") == []
    # AND the drain did not take the thread running the hung handler for a poll it would abandon
    assert "abandoning a long poll" not in caplog.text


def test_a_drain_of_one_inline_handler_waits_for_no_poll_while_its_message_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a worker of one handler running "a", with "b" received behind it and no poll in flight
    caplog.set_level(logging.INFO, "sqslease")
    clock = FakeClock()
    sqs = FakeSQS(clock)
    sqs.add("a", "b")
    gate, runs = threading.Event(), []

    def blocking(body: str, message: Message) -> None:
        runs.append(body)
        gate.wait(30)

    with running_worker(sqs, URL, blocking, concurrency=1, clock=clock, shutdown_grace=600, **UNIT) as worker:
        try:
            assert wait_for(lambda: runs == ["a"] and worker.handlers.outstanding() == 2, timeout_s=10)
            # WHEN it is told to stop, and the clock passes the release point with "a" still running
            worker.shutdown()
            assert advance_until(clock, lambda: bool(sqs.releases()))
        finally:
            gate.set()
    # THEN "b" was released unrun at the release point, "a" ran to its end and was deleted, and the drain found
    # no poll in flight: it did not wait for the thread running "a" as for a poll, nor call it abandoned
    assert runs == ["a"] and [h for _, h in sqs.releases()] == sqs.handle_of("b")
    assert [e["ReceiptHandle"] for e in sqs.entries("DeleteMessageBatch")] == sqs.handle_of("a")
    assert "abandoning a long poll" not in caplog.text
