"""A Lambda record whose handler is still running after its timeout ends its execution environment, so that it
never runs beside its redelivery: its lease is held (not released) while the handler runs, the records Lambda would
have deleted are deleted by the adapter, and ``RecordsHungError`` makes the entry point exit the process. A handler
that ends before the invocation does settles its message by the failure policy, as any late handler. On in-memory
fakes (``FakeSQS``, ``FakeContext`` on a ``FakeClock``: the deadline passes when a handler moves the clock); the
real process exit against moto_server is in tests/test_lambda_driver.py."""

from __future__ import annotations

import asyncio
import io
import os
import threading
from collections.abc import Iterator

import pytest
from support.emf import outcomes
from support.fake_dynamodb import FakeDynamoDB
from support.fakes import FakeClock, FakeContext, FakeSQS
from support.lambda_events import fake_event
from support.waiting import wait_for

from sqslease.attempt import Attempt
from sqslease.emf import EmfLogger
from sqslease.hooks import Hooks
from sqslease.hung_records import RecordsHungError, TimedOutRecords, cancel_wait_s
from sqslease.idempotency import IdempotencySettings, RecordStatus
from sqslease.idempotency_store import IdempotencyStore
from sqslease.lambda_adapter import process_event, sqs_batch_handler
from sqslease.lease import Lease
from sqslease.message import Message
from sqslease.rules import ASYNC_CANCEL_GRACE_S, HUNG_EXIT_CODE
from sqslease.settings import FailurePolicy, LeaseSettings

#: 60 s invocations (deadline margin 5 s): a max_processing_time of 50 s puts each record on a spare thread, and a
#: handler that moves the clock by 56 s is timed out by the deadline, never by the real clock.
SETTINGS = LeaseSettings(
    visibility_timeout=120, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW, max_processing_time=50
)


def released(sqs: FakeSQS) -> list[str]:
    return [e["ReceiptHandle"] for e in sqs.entries("ChangeMessageVisibilityBatch") if e["VisibilityTimeout"] == 0]


def deleted(sqs: FakeSQS) -> list[str]:
    return [e["ReceiptHandle"] for e in sqs.entries("DeleteMessageBatch")]


@pytest.fixture
def unblock() -> Iterator[threading.Event]:
    """Set at the end of the test: the hung handlers return (their threads are the test process's)."""
    event = threading.Event()
    yield event
    event.set()


class Invocation:
    """One invocation at 60 s on a fake clock, with a handler that hangs on ``hang`` until ``unblock``."""

    def __init__(self, unblock: threading.Event) -> None:
        self.clock = FakeClock()
        self.sqs = FakeSQS(self.clock)
        self.context = FakeContext(60, self.clock)
        self.emf = io.StringIO()
        self.unblock = unblock
        self.ran: list[str] = []

    def handler(self, body: str, message: Message) -> None:
        self.ran.append(body)
        if body == "hang":
            self.clock.sleep(56)  # 4 s left, below the 5 s deadline margin: timed out now
            self.unblock.wait(30)

    def run(self, bodies: list[str], **kwargs: object) -> dict:
        return process_event(
            fake_event(bodies),
            self.context,
            kwargs.pop("handler", self.handler),  # type: ignore[arg-type]
            kwargs.pop("settings", SETTINGS),  # type: ignore[arg-type]
            self.sqs,
            emf=EmfLogger(self.emf),
            raise_on_entire_batch_failure=False,
            **kwargs,  # type: ignore[arg-type]
        )


def test_a_record_still_running_at_the_invocations_end_holds_its_lease_and_ends_the_environment(
    unblock: threading.Event,
) -> None:
    # GIVEN a batch whose second record hangs past the deadline, before a third that gets no time
    invocation = Invocation(unblock)
    # WHEN it runs
    with pytest.raises(RecordsHungError) as hung:
        invocation.run(["ok", "hang", "later"])
    # THEN the invocation ends in RecordsHungError naming the hung record, after settling the rest as Lambda would:
    # the finished record deleted (Lambda deletes nothing of a failed invocation), the unstarted one released
    assert hung.value.message_ids == ["m1"] and "m1" in str(hung.value)
    assert outcomes(invocation.emf) == {"m0": "success", "m1": "timed_out", "m2": "released"}
    assert deleted(invocation.sqs) == ["rh-0"]
    # ... and the hung record's lease is held: not released, so it cannot run elsewhere before the process exits
    assert released(invocation.sqs) == ["rh-2"]
    assert invocation.ran == ["ok", "hang"]


def test_a_timed_out_handler_that_returns_before_the_invocation_ends_is_settled_by_its_failure_policy(
    unblock: threading.Event,
) -> None:
    # GIVEN a hook that lets the hung handler return as soon as its timeout is logged, and waits for its message's
    # settle (its late return settles it, on the handler's thread)
    invocation = Invocation(unblock)

    class ReturnsLate(Hooks):
        def after(self, message: Message, outcome: str, duration_s: float, error: BaseException | None) -> None:
            if outcome == "timed_out":
                unblock.set()
                assert wait_for(lambda: released(invocation.sqs) == ["rh-0"], timeout_s=10)

    # WHEN it runs
    response = invocation.run(["hang"], hooks=[ReturnsLate()])
    # THEN the invocation answers: the record is a failure, released once by its failure policy (visible_now),
    # after its handler returned, never deleted
    assert response == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    assert released(invocation.sqs) == ["rh-0"] and deleted(invocation.sqs) == []


def test_a_timed_out_async_record_that_ends_on_its_cancellation_does_not_end_the_environment(
    unblock: threading.Event,
) -> None:
    invocation = Invocation(unblock)
    cancelled = threading.Event()

    async def handler(body: str, message: Message) -> None:
        invocation.clock.sleep(56)
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    response = invocation.run(["a"], handler=handler)
    assert response == {"batchItemFailures": [{"itemIdentifier": "m0"}]} and cancelled.is_set()
    assert outcomes(invocation.emf) == {"m0": "timed_out"} and released(invocation.sqs) == ["rh-0"]


def test_an_async_record_that_ignores_its_cancellation_ends_the_environment(unblock: threading.Event) -> None:
    # GIVEN a coroutine that swallows its cancellation, timed out with 1 s left: it gets half of that to end
    invocation = Invocation(unblock)

    async def handler(body: str, message: Message) -> None:
        invocation.clock.sleep(59)
        while not unblock.is_set():
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                pass

    with pytest.raises(RecordsHungError):
        invocation.run(["a"], handler=handler)
    assert outcomes(invocation.emf) == {"m0": "timed_out"} and released(invocation.sqs) == []


def test_a_hung_records_idempotency_record_is_deleted_before_the_environment_ends(unblock: threading.Event) -> None:
    # GIVEN idempotency on, and a batch whose second record hangs
    wall = FakeClock(1_800_000_000.0)
    dynamodb = FakeDynamoDB(wall)
    store = IdempotencyStore(dynamodb, SETTINGS, IdempotencySettings(table="t"), clock=wall, sleep=wall.sleep)
    invocation = Invocation(unblock)
    # WHEN it runs
    with pytest.raises(RecordsHungError):
        invocation.run(["ok", "hang"], idempotency=store)
    # THEN the finished record is COMPLETED and the hung one's deleted at its timeout: its redelivery, once the
    # environment is gone and the lease lapsed, runs at once instead of waiting for a record nobody holds
    assert dynamodb.items["default#m0"]["status"]["S"] == RecordStatus.COMPLETED
    assert "default#m1" not in dynamodb.items
    redelivery = Invocation(unblock)
    assert redelivery.run(["ok", "hang"], handler=lambda body, message: None, idempotency=store) == {
        "batchItemFailures": []
    }
    assert outcomes(redelivery.emf) == {"m0": "duplicate", "m1": "success"}


def test_the_decorated_entry_point_exits_the_process_with_status_3(
    unblock: threading.Event, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN the entry point sqs_batch_handler makes, with os._exit recorded instead of done
    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    invocation = Invocation(unblock)
    entry = sqs_batch_handler(invocation.handler, settings=SETTINGS, sqs=invocation.sqs)
    # WHEN a record hangs
    with pytest.raises(RecordsHungError):  # raised only because the recorded exit returned
        entry(fake_event(["hang"]), invocation.context)
    # THEN it ends the process with the hung status, saying why on a CRITICAL line
    assert exits == [HUNG_EXIT_CODE]
    (line,) = [r for r in caplog.records if r.levelname == "CRITICAL"]
    assert "m0" in line.getMessage() and "ending this execution environment" in line.getMessage()


def test_which_timed_out_records_are_still_running() -> None:
    def attempt(message_id: str) -> Attempt:
        timed_out = Attempt(Message(message_id, "rh", "", "url", Lease("rh", 0, 30)), 0)
        assert timed_out.time_out(10, hold=True)
        return timed_out

    records = TimedOutRecords()
    running, returned, cancelled = attempt("running"), attempt("returned"), attempt("cancelled")
    returned.ended = True
    assert returned.take_held()  # its late return settled it
    cancelled.on_cancel(lambda: None)  # an async handler's task, which ends on its cancellation a moment later
    ended = threading.Event()

    def cancellation_ends() -> None:
        cancelled.ended = True
        assert cancelled.take_held()  # its late return settles it
        ended.set()

    returned_thread_done = threading.Event()
    returned_thread_done.set()
    records.add(running, threading.Event())
    records.add(returned, returned_thread_done)
    records.add(cancelled, ended)
    threading.Timer(0.05, cancellation_ends).start()
    # a running handler is hung, and its hold is taken from it: a return after this settles nothing; a cancelled
    # coroutine is waited for (a thread is not)
    assert [a.message.message_id for a in records.still_running(wait_s=10)] == ["running"]
    assert not running.take_held() and ended.is_set()
    assert not TimedOutRecords() and records


@pytest.mark.parametrize(
    ("remaining_s", "wait_s"), [(None, ASYNC_CANCEL_GRACE_S), (60, ASYNC_CANCEL_GRACE_S), (4, 2), (1, 0.5), (-1, 0)]
)
def test_a_cancelled_coroutine_gets_half_the_time_left_at_most_the_async_grace(
    remaining_s: float | None, wait_s: float
) -> None:
    assert cancel_wait_s(remaining_s) == wait_s
