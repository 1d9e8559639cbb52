"""``async def`` handlers: their coroutines run on one event loop thread, within the worker's concurrency and
leases, and one record at a time in the Lambda adapter. On a scripted client and against moto_server. Their
timeouts are in ``test_sqslease_timeouts.py``."""

from __future__ import annotations

import asyncio
import io
import threading

import pytest
from support.emf import outcomes, read_emf
from support.fakes import FakeClock, FakeContext, FakeSQS
from support.lambda_events import fake_event
from support.moto_queues import counts, make_queue, send
from support.waiting import wait_for
from support.worker_threads import LEASES_30S as UNIT
from support.worker_threads import emf_records, running_worker

from jobqueues.emulator.server import LocalServer
from sqslease.emf import EmfLogger
from sqslease.lambda_adapter import process_event
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings

pytestmark = pytest.mark.waits  # mostly waits in real time: started early, beside others' work (tests/conftest.py)

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"


class Tracker:
    """What the coroutines saw: their threads, and how many ran at once.

    Each coroutine waits up to ``company_s`` real seconds for another to run beside it, while one of the
    ``expected`` messages has not started: once every one started, none is left to come. Default 5 s, no count.
    """

    def __init__(self, company_s: float = 5, expected: int | None = None) -> None:
        self.company_s, self.expected = company_s, expected
        self.threads: set[str] = set()
        self.active = 0
        self.most = 0
        self.started = 0
        self.done: list[str] = []

    async def handle(self, body: str, message: Message) -> None:
        self.threads.add(threading.current_thread().name)
        self.active += 1  # one loop thread: no lock needed
        self.started += 1
        self.most = max(self.most, self.active)
        for _ in range(round(self.company_s / 0.01)):  # wait for a second coroutine to run beside this one
            if self.active >= 2 or len(self.done) >= 3 or self.started == self.expected:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        self.active -= 1
        self.done.append(body)


def test_async_handlers_run_on_one_loop_thread_within_the_concurrency() -> None:
    # GIVEN a worker of concurrency 2 and four messages for an async handler
    sqs = FakeSQS(FakeClock())
    sqs.add("a", "b", "c", "d")
    tracker = Tracker()
    with running_worker(sqs, URL, tracker.handle, concurrency=2, clock=sqs.clock, **UNIT) as worker:
        assert wait_for(lambda: len(sqs.entries("DeleteMessageBatch")) == 4, timeout_s=20)
    # THEN they all ran on the worker's loop thread, two at once and never more, and each was deleted
    assert tracker.threads == {"sqslease-asyncio"} and tracker.most == 2
    assert sorted(tracker.done) == ["a", "b", "c", "d"]
    assert sorted(r["Outcome"] for r in emf_records(worker)) == ["success"] * 4


def test_an_async_handler_that_raises_fails_its_message_by_the_failure_policy() -> None:
    sqs = FakeSQS(FakeClock())
    sqs.add("bad")

    async def handler(body: str, message: Message) -> None:
        await asyncio.sleep(0)
        raise ValueError("bad input")

    with running_worker(sqs, URL, handler, clock=sqs.clock, failure_policy=FailurePolicy.VISIBLE_NOW, **UNIT) as worker:
        assert wait_for(lambda: emf_records(worker), timeout_s=10)
    (line,) = emf_records(worker)
    assert line["Outcome"] == "failure" and line["ErrorType"] == "ValueError" and line["Error"] == "bad input"
    assert [(e["ReceiptHandle"], e["VisibilityTimeout"]) for e in sqs.entries("ChangeMessageVisibilityBatch")] == [
        (sqs.handle_of("bad")[0], 0)
    ]


def test_an_async_handler_still_running_at_the_end_of_the_grace_is_released_and_cancelled() -> None:
    sqs = FakeSQS(FakeClock())
    sqs.add("long")
    cancelled = threading.Event()

    async def handler(body: str, message: Message) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with running_worker(sqs, URL, handler, clock=sqs.clock, shutdown_grace=1, **UNIT):
        assert wait_for(lambda: sqs.handle_of("long"), timeout_s=10)
    # the grace (1 s on the clock, which stands still: its real-time bound) ended: released, then its task cancelled
    assert (sqs.handle_of("long")[0], 0) in [
        (e["ReceiptHandle"], e["VisibilityTimeout"]) for e in sqs.entries("ChangeMessageVisibilityBatch")
    ]
    assert wait_for(cancelled.is_set, timeout_s=10)


def test_async_handlers_against_moto_delete_their_messages(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, [f"m{i}" for i in range(6)])
    tracker = Tracker()
    with running_worker(local_aws, queues.url, tracker.handle, concurrency=3) as worker:
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0), timeout_s=30)
    assert sorted(tracker.done) == [f"m{i}" for i in range(6)] and 2 <= tracker.most <= 3
    assert [r["Outcome"] for r in emf_records(worker)] == ["success"] * 6


def test_the_lambda_adapter_runs_a_batch_of_coroutines_one_record_at_a_time_on_the_invocations_loop() -> None:
    sqs, emf = FakeSQS(), io.StringIO()
    # a second record's coroutine, were it started beside the first, would start within milliseconds: 2 s each
    tracker = Tracker(company_s=2, expected=3)
    before = {t.name for t in threading.enumerate()}
    response = process_event(
        fake_event(["a", "b", "c"]),
        FakeContext(60),
        tracker.handle,
        LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2),
        sqs,
        emf=EmfLogger(emf),
    )
    assert response == {"batchItemFailures": []} and tracker.done == ["a", "b", "c"]
    assert tracker.threads == {"sqslease-asyncio"} and tracker.most == 1
    assert outcomes(emf) == {"m0": "success", "m1": "success", "m2": "success"} and len(read_emf(emf)) == 3
    # the loop stopped before the invocation returned
    assert "sqslease-asyncio" not in {t.name for t in threading.enumerate()} - before
