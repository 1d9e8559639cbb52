"""A Lambda record that runs on the invocation's own thread (no ``max_processing_time``, or one longer than the
invocation has) and is still running at the hang point, half the deadline margin before the function's timeout, is
timed out by the deadline watchdog: EMF ``timed_out``, the finished records deleted and the unstarted ones released
as Lambda would, and the execution environment ended (``sqs_batch_handler``: a CRITICAL line and exit status 3).
One that ends before the hang point, even inside the margin, is left alone. On in-memory fakes (``FakeSQS``,
``FakeContext`` on a ``FakeClock``: a handler moves the clock; the watchdog reads it as thread
``sqslease-deadline``); the real process exit against moto_server is in tests/test_lambda_driver.py."""

from __future__ import annotations

import asyncio
import io
import os
import threading
from collections.abc import Iterator

import pytest
from support.emf import outcomes
from support.fakes import FakeClock, FakeContext, FakeSQS
from support.lambda_events import fake_event
from support.waiting import wait_for

from sqslease.deadline_watch import WATCHDOG_THREAD
from sqslease.emf import EmfLogger
from sqslease.hung_records import RecordsHungError
from sqslease.lambda_adapter import process_event, sqs_batch_handler
from sqslease.message import Message
from sqslease.rules import HUNG_EXIT_CODE, lambda_hang_margin
from sqslease.settings import FailurePolicy, LeaseSettings

#: A LambdaJob's settings without max_processing_time: every record runs on the invocation's thread. In a 60 s
#: invocation the deadline margin is 5 s and the hang point 2.5 s before the end.
SETTINGS = LeaseSettings(visibility_timeout=120, heartbeat=False, failure_policy=FailurePolicy.VISIBLE_NOW)
FUNCTION_TIMEOUT_S = 60


def released(sqs: FakeSQS) -> list[str]:
    return [e["ReceiptHandle"] for e in sqs.entries("ChangeMessageVisibilityBatch") if e["VisibilityTimeout"] == 0]


def deleted(sqs: FakeSQS) -> list[str]:
    return [e["ReceiptHandle"] for e in sqs.entries("DeleteMessageBatch")]


@pytest.fixture
def unblock() -> Iterator[threading.Event]:
    """Set at the end of the test at the latest: the hung handlers return (their threads are the test process's)."""
    event = threading.Event()
    yield event
    event.set()


class Invocation:
    """One 60 s invocation on a fake clock."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.sqs = FakeSQS(self.clock)
        self.context = FakeContext(FUNCTION_TIMEOUT_S, self.clock)
        self.emf = io.StringIO()

    def run(self, bodies: list[str], handler: object, **kwargs: object) -> dict:
        return process_event(
            fake_event(bodies),
            self.context,
            handler,  # type: ignore[arg-type]
            SETTINGS,
            self.sqs,
            emf=EmfLogger(self.emf),
            raise_on_entire_batch_failure=False,
            **kwargs,  # type: ignore[arg-type]
        )


def test_the_hang_point_is_half_the_deadline_margin() -> None:
    assert lambda_hang_margin(5) == 2.5 and lambda_hang_margin(1) == 0.5


def test_a_record_hung_on_the_invocations_thread_is_timed_out_and_the_rest_settled_as_lambda_would(
    unblock: threading.Event,
) -> None:
    # GIVEN a batch whose second record hangs with 2 s left (below the 2.5 s hang point), before a third
    invocation = Invocation()
    hung: list[RecordsHungError] = []

    def on_hung(error: RecordsHungError) -> None:
        hung.append(error)
        unblock.set()

    def handler(body: str, message: Message) -> None:
        if body == "hang":
            invocation.clock.sleep(FUNCTION_TIMEOUT_S - 2)
            unblock.wait(30)  # until the watchdog has settled the invocation

    # WHEN it runs
    with pytest.raises(RecordsHungError) as raised:
        invocation.run(["ok", "hang", "later"], handler, on_hung=on_hung)
    # THEN the watchdog timed the hung record out while its handler ran, settled the rest as Lambda would (the
    # finished record deleted: Lambda deletes nothing of a failed invocation; the unstarted one released), held
    # the hung record's lease, and handed over the error; the invocation raises it once the handler returns
    assert [error.message_ids for error in hung] == [["m1"]] and raised.value is hung[0]
    assert outcomes(invocation.emf) == {"m0": "success", "m1": "timed_out", "m2": "released"}
    assert deleted(invocation.sqs) == ["rh-0"] and released(invocation.sqs) == ["rh-2"]


def test_without_a_hand_over_the_invocation_raises_once_the_handler_returns(unblock: threading.Event) -> None:
    # GIVEN a record that hangs past the hang point and returns once its batch is settled
    invocation = Invocation()

    def handler(body: str, message: Message) -> None:
        invocation.clock.sleep(FUNCTION_TIMEOUT_S - 1)
        assert wait_for(lambda: released(invocation.sqs) == ["rh-1"], timeout_s=30)

    # WHEN process_event runs it (no on_hung: a handler of the user's own)
    with pytest.raises(RecordsHungError) as raised:
        invocation.run(["hang", "later"], handler)
    # THEN it raises RecordsHungError for the caller to end the process; its late result changes nothing
    assert raised.value.message_ids == ["m0"]
    assert outcomes(invocation.emf) == {"m0": "timed_out", "m1": "released"} and deleted(invocation.sqs) == []


def test_the_entry_point_ends_the_environment_while_the_handler_still_runs(
    unblock: threading.Event, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN the entry point sqs_batch_handler makes, with os._exit recorded instead of done
    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    invocation = Invocation()
    seen_by_the_handler: list[list[int]] = []

    def handler(body: str, message: Message) -> None:
        invocation.clock.sleep(FUNCTION_TIMEOUT_S - 1)
        assert wait_for(lambda: bool(exits), timeout_s=30)
        seen_by_the_handler.append(list(exits))

    entry = sqs_batch_handler(handler, settings=SETTINGS, sqs=invocation.sqs)
    # WHEN a record hangs
    with pytest.raises(RecordsHungError):  # raised only because the recorded exit returned
        entry(fake_event(["hang"]), invocation.context)
    # THEN the process was ended with the hung status while the handler was still running, a CRITICAL line saying why
    assert seen_by_the_handler == [[HUNG_EXIT_CODE]]
    critical = [r.getMessage() for r in caplog.records if r.levelname == "CRITICAL"]
    assert critical and all("m0" in line and "ending this execution environment" in line for line in critical)


def test_a_record_that_ends_inside_the_margin_before_the_hang_point_succeeds() -> None:
    # GIVEN a record that runs into the deadline margin (4 s left, under 5 s) and stays there, running, until the
    # watchdog has looked at it twice, then a second record
    invocation = Invocation()

    def handler(body: str, message: Message) -> None:
        if body == "long":
            invocation.clock.sleep(FUNCTION_TIMEOUT_S - 4)
            assert invocation.clock.await_reads(WATCHDOG_THREAD, count=2)

    # WHEN it runs
    response = invocation.run(["long", "later"], handler)
    # THEN it succeeded (the invocation still has time to answer); the deadline guard released the second record
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert outcomes(invocation.emf) == {"m0": "success", "m1": "released"}


def test_an_async_record_that_ends_on_its_cancellation_does_not_end_the_environment() -> None:
    # GIVEN an async def handler that runs past the hang point and ends when cancelled
    invocation = Invocation()
    cancelled = threading.Event()

    async def handler(body: str, message: Message) -> None:
        invocation.clock.sleep(FUNCTION_TIMEOUT_S - 1)
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    # WHEN it runs
    response = invocation.run(["a"], handler)
    # THEN it was cancelled, reported and released by its failure policy; the invocation answered
    assert response == {"batchItemFailures": [{"itemIdentifier": "m0"}]} and cancelled.is_set()
    assert outcomes(invocation.emf) == {"m0": "timed_out"} and released(invocation.sqs) == ["rh-0"]
