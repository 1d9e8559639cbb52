"""What the worker does with a lease that ran out before it could act on it, on a scripted SQS client and a clock that
moves only when told (no network). The stateful test (``test_sqslease_statemachine.py``) found these; each is kept
here as its smallest example."""

from __future__ import annotations

import threading

from support.fakes import FakeClock, FakeSQS
from support.waiting import wait_for
from support.worker_threads import LEASES_30S as UNIT
from support.worker_threads import running_worker

from sqslease.message import Message

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"


def test_a_message_whose_lease_ran_out_while_it_waited_for_a_handler_is_not_run() -> None:
    # GIVEN one handler busy with "a", and "b" received with it, waiting for the handler
    clock = FakeClock()
    sqs = FakeSQS(clock)
    sqs.add("a", "b")
    gate, runs = threading.Event(), []

    def handler(body: str, message: Message) -> None:
        runs.append(body)
        if body == "a":
            gate.wait(10)

    with running_worker(sqs, URL, handler, concurrency=1, clock=clock, **UNIT) as worker:
        assert wait_for(lambda: runs == ["a"] and worker.handlers.outstanding() == 2, timeout_s=10)
        # WHEN the clock passes both leases (the process froze: no extension could be sent), then "a" ends
        clock.now = 60
        gate.set()
        # THEN "b" is taken from the queue but not run: SQS may have handed it to another consumer since
        assert wait_for(lambda: worker.handlers.outstanding() == 0, timeout_s=10)
    assert runs == ["a"]
    assert sqs.handle_of("b")[0] not in [e["ReceiptHandle"] for e in sqs.entries("DeleteMessageBatch")]


def test_a_group_mate_whose_lease_ran_out_is_not_released_with_its_stale_receipt_handle() -> None:
    # GIVEN a FIFO group's two messages received together, no heartbeat (nothing extends or watches the leases),
    # one handler: "a2" waits behind "a1"
    clock = FakeClock()
    sqs = FakeSQS(clock)
    sqs.add("a1", "a2", group="a")
    runs = []

    def handler(body: str, message: Message) -> None:
        runs.append(body)
        # WHEN the process freezes past both leases while "a1" runs, and "a1" then fails
        clock.now = 60
        raise RuntimeError("a1 fails")

    url = URL + ".fifo"
    with running_worker(sqs, url, handler, concurrency=1, clock=clock, heartbeat=False, **UNIT) as worker:
        assert wait_for(lambda: runs == ["a1"] and worker.handlers.outstanding() == 0, timeout_s=10)
    # THEN no visibility change goes out with "a2"'s handle: SQS may have handed "a2" out again since, and a change
    # with an old handle could release that new delivery. It is visible again anyway.
    (a2,) = sqs.handle_of("a2")
    assert a2 not in [e["ReceiptHandle"] for e in sqs.entries("ChangeMessageVisibilityBatch")]
    assert runs == ["a1"]
