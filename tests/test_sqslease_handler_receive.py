"""Several handlers on a standard queue receive on their own threads: a handler that finds nothing to run polls (once
the poll in flight, if any, is over) and runs the first message of what it received itself, so no receive wakes the
receiver's thread and no handler is woken for that message. The receiver's thread polls only when the handlers
cannot (no room, the governor, a failed receive), and hands the polling back with its first messages. Every promise
stays: the drain waits for a handler's poll in flight and starts nothing it brings. On a scripted client, and a clock
that moves only when told where the drain's timing matters."""

from __future__ import annotations

import io
import logging
import threading
from typing import Any

import pytest
from support.counting import CountingCondition
from support.emf import outcomes
from support.fakes import FakeClock, FakeSQS
from support.waiting import wait_for
from support.worker_runs import WorkerRun
from support.worker_threads import LEASES_300S as UNIT
from support.worker_threads import running_worker

from sqslease.drain import DRAIN_POLL_MARGIN_S
from sqslease.emf import EmfLogger
from sqslease.fifo import ReadyQueue
from sqslease.handler_pool import HandlerPool, handlers_receive
from sqslease.lease import Lease
from sqslease.message import Message
from sqslease.settings import LeaseSettings
from sqslease.worker import Worker

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
RECEIVER_THREAD = "sqslease-receiver"


class ThreadedSQS(FakeSQS):
    """``FakeSQS`` that records the name of the thread that sent each ``ReceiveMessage`` (in ``receive_threads``,
    in the order of its ``ReceiveMessage`` entries: one poll is in flight at a time)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.receive_threads: list[str] = []

    def receive_message(self, **params: Any) -> dict:
        self.receive_threads.append(threading.current_thread().name)
        return super().receive_message(**params)

    def answered_by(self) -> list[tuple[str, list[str]]]:
        """(thread, bodies) of each receive, in order."""
        return [
            (thread, [m["Body"] for m in entry["_answered"]])
            for thread, entry in zip(self.receive_threads, self.entries("ReceiveMessage"), strict=True)
        ]


def message(i: int) -> Message:
    return Message(f"m{i}", f"rh-{i}", f"b{i}", URL, Lease(f"rh-{i}", 0.0, 60.0))


def test_only_several_handlers_on_a_standard_queue_receive() -> None:
    assert handlers_receive(4, fifo=False)
    assert handlers_receive(2, fifo=False)
    assert not handlers_receive(4, fifo=True)  # a parked retry comes due while a handler could be in a long poll
    assert not handlers_receive(1, fifo=False)  # one handler runs on the receiver's thread (runs_inline)


def test_handlers_receive_and_the_receivers_thread_is_never_woken_by_a_handler_ending_a_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN 100 messages, and a pool that counts the receiver's waits for room (each ended by a handler's wake)
    waits_for_room: list[int] = []
    real_wait = HandlerPool.wait_for_room

    def wait_for_room(self: HandlerPool, at_most: int, timeout: float) -> None:
        waits_for_room.append(at_most)
        real_wait(self, at_most, timeout)

    monkeypatch.setattr(HandlerPool, "wait_for_room", wait_for_room)
    sqs = ThreadedSQS()
    sqs.add(*(f"b{i}" for i in range(100)))
    # WHEN a worker of 4 handlers runs them
    with running_worker(sqs, URL, lambda body, m: None, concurrency=4, **UNIT) as worker:
        assert wait_for(lambda: len(sqs.entries("DeleteMessageBatch")) == 100, timeout_s=30)
    # THEN the first receive was sent by a handler with nothing to run, and the receiver's thread never waited for
    # room (no wake by a handler ending a message: before, it sent every receive, woken once a receive); it
    # receives only the batch ahead once every handler runs
    answered = [(thread, bodies) for thread, bodies in sqs.answered_by() if bodies]
    assert sum(len(bodies) for _, bodies in answered) == 100
    assert sqs.receive_threads[0].startswith("sqslease-handler-")
    assert waits_for_room == []
    # AND the prefetch bound holds: never more than the handlers plus one ahead
    assert max(entry["MaxNumberOfMessages"] for entry in sqs.entries("ReceiveMessage")) <= 8
    assert worker.processed == 100


def test_the_handler_that_receives_runs_the_first_message_itself_and_wakes_no_other_handler() -> None:
    # GIVEN a worker of 2 handlers, "a" queued (its handler waits for a gate), the second receive held until told
    sqs = ThreadedSQS()
    poll_held = threading.Event()
    sqs.script("ReceiveMessage", "ok", poll_held)
    sqs.add("a")
    gate, ran_on = threading.Event(), {}

    def handler(body: str, message: Message) -> None:
        ran_on[body] = threading.current_thread().name
        if body == "a":
            gate.wait(30)

    worker = Worker(sqs, URL, handler, LeaseSettings(**UNIT), concurrency=2, emf=EmfLogger(io.StringIO()))
    worker.handlers._ready._cond = counting = CountingCondition(worker.handlers._ready._lock)
    run = WorkerRun(worker)
    try:
        # WHEN one handler runs "a" and the other, with nothing to run, polls; "b" comes during that poll
        assert wait_for(lambda: "a" in ran_on and len(sqs.receive_threads) == 2, timeout_s=30)
        sqs.add("b")
        poll_held.set()
        assert wait_for(lambda: "b" in ran_on, timeout_s=30)
        notified = list(counting.notified)  # the drain's close wakes them all: counted before it
    finally:
        gate.set()
        raised = run.stop()
    # THEN "b" ran on the handler thread that received it (not handed over: no handler woken for it); both receives
    # were the handlers' (the receiver's thread polls only once both run: the batch ahead)
    assert raised is None
    polled_b = [thread for thread, bodies in sqs.answered_by() if bodies == ["b"]]
    assert polled_b == [ran_on["b"]] and ran_on["b"] != ran_on["a"]
    assert all(thread.startswith("sqslease-handler-") for thread in sqs.receive_threads[:2])
    assert notified == []


def test_once_every_handler_runs_the_receivers_thread_fills_the_batch_ahead() -> None:
    # GIVEN a worker of 2 handlers whose handlers wait for a gate, "a", "b" and "c" queued
    sqs = ThreadedSQS()
    sqs.add("a", "b", "c")
    gate, runs = threading.Event(), []

    def handler(body: str, message: Message) -> None:
        runs.append(body)
        gate.wait(30)

    with running_worker(sqs, URL, handler, concurrency=2, **UNIT) as worker:
        try:
            # WHEN a handler received the 3, both run ("c" waits: no handler left to poll); then 2 more come
            assert wait_for(lambda: sorted(runs) == ["a", "b"], timeout_s=30)
            sqs.add("d", "e")
            # THEN the receiver's thread filled the batch ahead: 1 (the handlers plus one ahead: 4 at most)
            assert wait_for(lambda: worker.handlers.outstanding() == 4, timeout_s=30)
            answered = [(thread, bodies) for thread, bodies in sqs.answered_by() if bodies]
            assert answered[0][0].startswith("sqslease-handler-") and answered[0][1] == ["a", "b", "c"]
            assert answered[1:] == [(RECEIVER_THREAD, ["d"])]
        finally:
            gate.set()
        # AND once they end, the rest is received and run
        assert wait_for(lambda: len(sqs.entries("DeleteMessageBatch")) == 5, timeout_s=30)


def test_a_failed_receive_is_retried_by_the_receiver_after_its_backoff_which_hands_the_polling_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN 30 messages, and a queue whose first receive is throttled
    caplog.set_level(logging.WARNING, "sqslease")
    sqs = ThreadedSQS().script("ReceiveMessage", "throttling")
    sqs.add(*(f"b{i}" for i in range(30)))
    # WHEN a worker of 4 handlers runs them
    with running_worker(sqs, URL, lambda body, m: None, concurrency=4, **UNIT) as worker:
        assert wait_for(lambda: len(sqs.entries("DeleteMessageBatch")) == 30, timeout_s=30)
    # THEN a handler sent the throttled receive; the receiver's thread, after the backoff, sent the next one (the
    # handlers waited for it rather than each backing off), and the handlers every later one
    threads = sqs.receive_threads
    assert threads[0].startswith("sqslease-handler-") and threads[1] == RECEIVER_THREAD
    assert all(thread.startswith("sqslease-handler-") for thread in threads[2:]), threads
    assert caplog.text.count("ReceiveMessage failed") == 1, caplog.text
    assert worker.processed == 30


def test_a_batch_put_by_the_receivers_thread_for_handlers_that_receive_wakes_one_more_to_poll_next() -> None:
    # GIVEN a ready queue with 3 handlers waiting
    ready = ReadyQueue()
    ready._cond = counting = CountingCondition(ready._lock)
    taken: list[Message | None] = []
    waiting = [threading.Thread(target=lambda: taken.append(ready.get())) for _ in range(3)]
    for thread in waiting:
        thread.start()
    assert wait_for(lambda: ready._idle == 3, timeout_s=10)
    # WHEN one message is put with a relay, then one without
    assert ready.put([message(1)], relay=True)
    assert wait_for(lambda: len(taken) == 1 and ready._idle == 2, timeout_s=10)  # the relayed one waits again
    assert ready.put([message(2)])
    # THEN the first woke 2 (one for the message, one to poll next: it finds nothing, so it waits again), the
    # second 1
    assert counting.notified == [2, 1]
    assert wait_for(lambda: len(taken) == 2, timeout_s=10)
    ready.close()
    for thread in waiting:
        thread.join(timeout=10)
    assert [m.message_id for m in taken if m is not None] == ["m1", "m2"]


def test_a_drain_waits_for_a_handlers_poll_in_flight_and_starts_nothing_it_brings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a worker of 2 handlers, one running "a", the other in a poll held until told
    caplog.set_level(logging.INFO, "sqslease")
    clock = FakeClock()
    sqs, emf = ThreadedSQS(clock=clock), io.StringIO()
    poll_held = threading.Event()
    sqs.script("ReceiveMessage", "ok", poll_held)
    sqs.add("a")
    gate, runs = threading.Event(), []

    def handler(body: str, message: Message) -> None:
        runs.append(body)
        gate.wait(30)

    settings = LeaseSettings(**UNIT, shutdown_grace=600)
    worker = Worker(sqs, URL, handler, settings, concurrency=2, emf=EmfLogger(emf), clock=clock)
    run = WorkerRun(worker)
    try:
        assert wait_for(lambda: runs == ["a"] and len(sqs.receive_threads) == 2, timeout_s=30)
        # WHEN it is told to stop, and "late" comes to the poll in flight; then the clock passes the release point
        worker.shutdown()
        sqs.add("late")
        poll_held.set()
        assert wait_for(lambda: worker.handlers.waiting(), timeout_s=30)  # "late" held back for the drain
        assert wait_for(lambda: bool(sqs.releases()) or bool(clock.sleep(0.25)), timeout_s=20)
    finally:
        gate.set()
    assert run.join() is None
    # THEN the poll was a handler's; "late" was never started and was released at the release point (the drain
    # waited for the poll rather than abandon it); "a" ran to its end and was deleted
    assert sqs.answered_by()[1] == (sqs.receive_threads[1], ["late"])
    assert sqs.receive_threads[1].startswith("sqslease-handler-")
    assert runs == ["a"] and [h for _, h in sqs.releases()] == sqs.handle_of("late")
    assert sqs.releases()[0][0] >= settings.poll_wait + DRAIN_POLL_MARGIN_S
    assert outcomes(emf) == {"m-a": "success", "m-late": "released"}
    assert "abandoning a long poll" not in caplog.text
