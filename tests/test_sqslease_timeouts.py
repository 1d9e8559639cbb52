"""The per-message timeout (``max_processing_time``): a handler still running then has failed. In the worker (a
scripted client and a clock moved by the test, then moto_server and ``python -m sqslease.worker``) and in the
Lambda adapter (the same, with the invocation's deadline)."""

from __future__ import annotations

import asyncio
import inspect
import io
import json
import threading
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from support.emf import outcomes, read_emf
from support.fakes import FakeClock, FakeContext, FakeSQS
from support.fault_proxy import Fault, FaultProxy
from support.lambda_events import fake_event, lambda_event
from support.moto_queues import counts, make_queue, receive_all, receive_when_visible, send
from support.waiting import wait_for
from support.worker_processes import events_of, start_worker_process
from support.worker_runs import RUN_THREAD, WorkerRun
from support.worker_threads import FAST
from support.worker_threads import LEASES_300S as UNIT

from jobqueues.consumer_contract import ConsumerContract
from jobqueues.emulator.server import LocalServer
from sqslease.config import ConsumerConfig
from sqslease.emf import EmfLogger
from sqslease.hung_records import RecordsHungError
from sqslease.lambda_adapter import process_event
from sqslease.message import Message
from sqslease.rules import ASYNC_CANCEL_GRACE_S
from sqslease.settings import FailurePolicy, LeaseSettings
from sqslease.worker import HandlerHungError, Worker
from sqslease.worker.cli import HUNG_EXIT_CODE, USAGE_EXIT_CODE

pytestmark = pytest.mark.waits  # mostly waits in real time: started early, beside others' work (tests/conftest.py)

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
WATCHDOG = "sqslease-watchdog"  # the thread that times handlers out: it reads the clock once a look


def changes(sqs: FakeSQS) -> list[tuple[str, int]]:
    """The releases (visibility 0): a clock moved by minutes also makes the heartbeat extend leases."""
    return [
        (e["ReceiptHandle"], e["VisibilityTimeout"])
        for e in sqs.entries("ChangeMessageVisibilityBatch")
        if e["VisibilityTimeout"] == 0
    ]


def deleted(sqs: FakeSQS) -> list[str]:
    return [e["ReceiptHandle"] for e in sqs.entries("DeleteMessageBatch")]


def unit_worker(sqs: FakeSQS, handler, emf: io.StringIO, concurrency: int = 2, **settings) -> Worker:  # type: ignore[no-untyped-def]
    return Worker(
        sqs,
        URL,
        handler,
        LeaseSettings(**{**UNIT, "failure_policy": FailurePolicy.VISIBLE_NOW, **settings}),
        concurrency=concurrency,
        emf=EmfLogger(emf),
        clock=sqs.clock,
    )


# -- the worker, on a scripted client ----------------------------------------------------------------------------
def test_a_hung_handler_is_released_at_its_timeout_and_the_worker_drains_then_exits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a worker whose handler of "hang" never returns in time, and a healthy message
    clock = FakeClock()
    sqs, emf = FakeSQS(clock), io.StringIO()
    sqs.add("hang", "ok")
    unblock, started = threading.Event(), threading.Event()

    def handler(body: str, message: Message) -> None:
        if body == "hang":
            started.set()
            unblock.wait(30)

    run = WorkerRun(unit_worker(sqs, handler, emf, max_processing_time=60))
    assert wait_for(lambda: started.is_set() and sqs.handle_of("ok") and deleted(sqs), timeout_s=10)
    assert changes(sqs) == []  # not yet: the clock stands still
    # WHEN it has run for max_processing_time
    clock.sleep(61)
    # THEN its message is released by the failure policy, logged as timed_out, and the worker exits (hung)
    raised = run.join()
    assert isinstance(raised, HandlerHungError) and "m-hang" in str(raised)
    assert (sqs.handle_of("hang")[0], 0) in changes(sqs)
    assert deleted(sqs) == sqs.handle_of("ok")
    assert outcomes(emf) == {"m-ok": "success", "m-hang": "timed_out"}
    (line,) = [r for r in read_emf(emf) if r["Outcome"] == "timed_out"]
    assert line["ErrorType"] == "sqslease.attempt.HandlerTimeoutError" and line["ProcessingTime"] >= 60_000
    assert line["QueueTime"] >= 0  # it ran: its wait counts in jobstats and the max_queue_time alarm
    # AND its late return settles nothing: no delete, no second line, a log line says it was ignored
    unblock.set()
    assert wait_for(lambda: "its result (success) is ignored" in caplog.text, timeout_s=10)
    assert deleted(sqs) == sqs.handle_of("ok") and len(read_emf(emf)) == 2


def test_a_handler_that_ends_before_its_timeout_is_settled_as_usual() -> None:
    clock = FakeClock()
    sqs, emf = FakeSQS(clock), io.StringIO()
    sqs.add("quick")

    def handler(body: str, message: Message) -> None:
        clock.sleep(59)  # ran 59 s of its 60

    run = WorkerRun(unit_worker(sqs, handler, emf, max_processing_time=60))
    assert wait_for(lambda: deleted(sqs), timeout_s=10)
    clock.sleep(10)
    assert clock.await_reads(WATCHDOG)  # a whole look at the handlers 69 s after the start: nothing to time out
    assert run.stop() is None
    assert outcomes(emf) == {"m-quick": "success"} and changes(sqs) == []


def test_a_timed_out_async_handler_is_cancelled_and_the_worker_goes_on() -> None:
    # GIVEN an async handler that awaits forever on "slow"
    clock = FakeClock()
    sqs, emf = FakeSQS(clock), io.StringIO()
    sqs.add("slow")
    cancelled, started = threading.Event(), threading.Event()

    async def handler(body: str, message: Message) -> None:
        if body == "slow":
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.set()
                raise

    run = WorkerRun(unit_worker(sqs, handler, emf, max_processing_time=60))
    assert wait_for(started.is_set, timeout_s=10)
    # WHEN it times out
    clock.sleep(61)
    # THEN its task is cancelled, its message released, and the worker keeps consuming (no exit)
    assert wait_for(cancelled.is_set, timeout_s=10)
    assert wait_for(lambda: outcomes(emf) == {"m-slow": "timed_out"}, timeout_s=10)
    sqs.add("next")
    assert wait_for(lambda: deleted(sqs) != [] and deleted(sqs) == sqs.handle_of("next"), timeout_s=10)
    assert run.stop() is None and run.worker.hung == []
    assert changes(sqs) == [(sqs.handle_of("slow")[0], 0)]


def test_an_async_handler_that_ignores_its_cancellation_is_hung_after_the_grace() -> None:
    clock = FakeClock()
    sqs, emf = FakeSQS(clock), io.StringIO()
    sqs.add("stubborn")
    release, started = threading.Event(), threading.Event()

    async def handler(body: str, message: Message) -> None:
        started.set()
        while not release.is_set():
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                pass  # swallowed: the task goes on

    run = WorkerRun(unit_worker(sqs, handler, emf, max_processing_time=60))
    assert wait_for(started.is_set, timeout_s=10)  # its clock starts with the handler: only then move the time
    clock.sleep(61)
    assert wait_for(lambda: outcomes(emf) == {"m-stubborn": "timed_out"}, timeout_s=10)
    assert clock.await_reads(WATCHDOG)  # a whole look since, still within the grace: not hung, still consuming
    assert run.worker.hung == [] and run.thread.is_alive()
    clock.sleep(ASYNC_CANCEL_GRACE_S)
    assert isinstance(run.join(), HandlerHungError)
    release.set()


def test_a_hung_handlers_lease_is_held_while_the_worker_drains_and_released_as_it_exits() -> None:
    # GIVEN a worker of 2 handlers: "hang" never returns, "busy" started 50 s later and runs on
    clock = FakeClock()
    sqs, emf = FakeSQS(clock), io.StringIO()
    busy_gate, unblock, runs = threading.Event(), threading.Event(), []

    def handler(body: str, message: Message) -> None:
        runs.append(body)
        (unblock if body == "hang" else busy_gate).wait(30)

    sqs.add("hang")
    run = WorkerRun(unit_worker(sqs, handler, emf, max_processing_time=100, shutdown_grace=600))
    try:
        assert wait_for(lambda: runs == ["hang"], timeout_s=10)
        clock.sleep(50)
        sqs.add("busy")
        assert wait_for(lambda: runs == ["hang", "busy"], timeout_s=10)
        # WHEN "hang" passes its max_processing_time: it has failed, and the worker drains (its thread still runs)
        clock.sleep(51)
        assert wait_for(lambda: outcomes(emf) == {"m-hang": "timed_out"} and run.worker.hung, timeout_s=10)
        # the drain waits for "busy" (it reads the clock each round): what it releases first is released by now
        assert clock.await_reads(RUN_THREAD, count=3)
        # THEN its message stays leased while its thread may run: not released, held by the heartbeat
        (hang,) = [m for m in run.worker.hung]
        assert not hang.message.lease.settling and not hang.message.lease.lost
        assert changes(sqs) == [] and run.thread.is_alive()
    finally:
        busy_gate.set()
    # AND it is released (failure policy) only as the worker exits, after the drain settled "busy"
    assert isinstance(run.join(), HandlerHungError)
    assert changes(sqs) == [(sqs.handle_of("hang")[0], 0)]
    operations = [(op, [e.get("VisibilityTimeout") for e in entries]) for _, op, entries in sqs.calls]
    deleted_at = operations.index(("DeleteMessageBatch", [None]))
    assert operations.index(("ChangeMessageVisibilityBatch", [0])) > deleted_at
    unblock.set()


def test_a_message_whose_lease_cap_cannot_cover_its_run_after_waiting_unstarted_is_released_unstarted() -> None:
    # GIVEN one handler, leases capped at max_processing_time + visibility timeout (360 s) from their receive, and
    # "b" received with "a" but waiting 30 s for the handler
    clock = FakeClock()
    sqs, emf, runs = FakeSQS(clock), io.StringIO(), []

    def handler(body: str, message: Message) -> None:
        runs.append(body)
        clock.sleep(30)

    sqs.add("a", "b")
    run = WorkerRun(unit_worker(sqs, handler, emf, concurrency=1, max_processing_time=60, max_total_lease=360))
    # WHEN the handler comes free for "b": 330 s of its cap are left, less than 60 s to run + 300 s to settle
    assert wait_for(lambda: outcomes(emf) == {"m-a": "success", "m-b": "released"}, timeout_s=10)
    # THEN "b" is released unstarted, rather than started with a lease that would lapse while it may still run
    assert run.stop() is None
    assert runs == ["a"] and changes(sqs) == [(sqs.handle_of("b")[0], 0)]


# -- the worker, against moto_server -----------------------------------------------------------------------------
def test_a_hung_handler_against_moto_is_visible_again_at_its_timeout(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["hang", "ok"])
    unblock = threading.Event()

    def handler(body: str, message: Message) -> None:
        if body == "hang":
            unblock.wait(30)

    emf = io.StringIO()
    worker = Worker(
        local_aws.client("sqs"),
        queues.url,
        handler,
        LeaseSettings(**{**FAST, "failure_policy": FailurePolicy.VISIBLE_NOW, "max_processing_time": 1}),
        concurrency=2,
        emf=EmfLogger(emf),
    )
    started = time.monotonic()
    raised = WorkerRun(worker).join()
    unblock.set()
    assert isinstance(raised, HandlerHungError)
    (again,) = receive_all(local_aws, queues.url)  # "ok" deleted; "hang" visible again: released, as its 30 s VT
    assert again["Body"] == "hang" and time.monotonic() - started < 30  # cannot have run out yet
    assert sorted(outcomes(emf).values()) == ["success", "timed_out"]


def test_the_worker_process_exits_with_status_3_after_a_hung_handler(local_aws: LocalServer, tmp_path: Path) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["stuck"])
    process = start_worker_process(
        local_aws, queues.url, tmp_path / "events", handler="sqs_handlers:hang_job", args=["--max-processing-time", "1"]
    )
    try:
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == HUNG_EXIT_CODE
    assert b"still runs past max_processing_time" in stderr
    assert wait_for(lambda: counts(local_aws, queues.url) == (1, 0), timeout_s=10)  # released, not lost


def test_under_a_backlog_the_contracts_worker_runs_each_job_once(local_aws: LocalServer, tmp_path: Path) -> None:
    # GIVEN the worker command a construct writes for 10 s leases and a max_processing_time of 8 s, one handler,
    # and three 5 s jobs at once: the second and third wait 5 and 10 s unstarted
    queues = make_queue(local_aws, vt=10)
    contract = ConsumerContract.of(
        job_type="Backlog",
        queue_url=queues.url,
        dead_letter_queue_url=None,
        visibility_timeout_s=10,
        lease_extension=True,
        max_processing_time_s=8,
    )
    command = contract.worker_command("sqs_handlers:slow_job", concurrency=1)
    send(local_aws, queues.url, ["j1", "j2", "j3"])
    events = tmp_path / "events"
    process = start_worker_process(local_aws, queues.url, events, args=command[7:], SLOW_JOB_SECONDS="5")
    try:
        # WHEN it works through them
        assert wait_for(lambda: len([e for e in events_of(events) if e[0] == "end"]) == 3, timeout_s=90)
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0), timeout_s=10)
    finally:
        process.terminate()
        process.communicate(timeout=60)
    # THEN each started once: no lease lapsed while its job waited or ran
    assert sorted(e[1] for e in events_of(events) if e[0] == "start") == ["j1", "j2", "j3"]


def test_a_worker_given_a_lease_cap_below_max_processing_time_and_the_lease_refuses_to_start(
    local_aws: LocalServer, tmp_path: Path
) -> None:
    # GIVEN the report's options: --visibility-timeout 10 --max-processing-time 8 --max-total-lease 8
    queues = make_queue(local_aws, vt=10)
    args = ["--visibility-timeout", "10", "--max-processing-time", "8", "--max-total-lease", "8"]
    # WHEN the worker starts THEN it exits with status 2, naming both values and the fix
    process = start_worker_process(local_aws, queues.url, tmp_path / "events", args=args)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == USAGE_EXIT_CODE
    assert b"max_total_lease (8 s) must cover max_processing_time (8 s) plus visibility_timeout (10 s)" in stderr


def test_a_hung_message_starts_nowhere_else_while_its_worker_lives(local_aws: LocalServer, tmp_path: Path) -> None:
    # GIVEN two workers of 2 handlers each, and a message whose handler hangs past its 1 s max_processing_time;
    # the first one's requests go through a proxy that notes when each was sent and answered
    queues = make_queue(local_aws, vt=10)
    send(local_aws, queues.url, ["stuck"])
    events = tmp_path / "events"
    seen: list[tuple[float, str, str]] = []  # (monotonic, "sent" or "answered", operation or "settle")

    def what(operation: str, body: bytes) -> str:  # a visibility change other than an extension (10 s) ends a lease
        entries = json.loads(body or b"{}").get("Entries", [])
        ends = operation == "ChangeMessageVisibilityBatch" and any(e["VisibilityTimeout"] != 10 for e in entries)
        return "settle" if ends else operation

    def sent(operation: str, body: bytes) -> Fault | None:
        seen.append((time.monotonic(), "sent", what(operation, body)))
        return None

    def answered(operation: str, body: bytes, status: int, payload: bytes) -> None:
        seen.append((time.monotonic(), "answered", what(operation, body)))

    # 5 s long polls (the most a 10 s lease allows): one is still in flight when the drain begins
    args = ["--max-processing-time", "1", "--visibility-timeout", "10", "--wait-time", "5"]
    options = {"args": args, "concurrency": 2, "handler": "sqs_handlers:hang_job", "HANG_JOB_SECONDS": "30"}
    second = None
    with FaultProxy(local_aws.endpoint, sent, observers=[answered]) as proxy:
        first = start_worker_process(local_aws, queues.url, events, endpoint=proxy.endpoint, **options)  # type: ignore[arg-type]
        try:
            assert wait_for(lambda: [e[0] for e in events_of(events)] == ["start"], timeout_s=30)
            second = start_worker_process(local_aws, queues.url, events, **options)  # type: ignore[arg-type]
            # WHEN the first worker times the handler out, drains and exits
            assert first.wait(timeout=60) == HUNG_EXIT_CODE
            # THEN it settled the message (failure policy: backoff) once, as it exits: once its drain had its last
            # poll back, not at the timeout (its hung thread runs until the process ends)
            (released_at,) = [at for at, kind, name in seen if (kind, name) == ("sent", "settle")]
            assert max(at for at, kind, name in seen if (kind, name) == ("answered", "ReceiveMessage")) < released_at
            # AND no handler started the message again before that, in this worker or the other; the other one
            # receives it then (its second receive)
            assert wait_for(lambda: len(events_of(events)) == 2, timeout_s=30)
            starts = [(float(e[3]), int(e[2])) for e in events_of(events) if e[0] == "start"]
            assert starts[0][1] == 1 and starts[0][0] < released_at <= starts[1][0] and starts[1][1] == 2
        finally:
            for process in (first, second):
                if process is not None:
                    process.kill()
                    process.communicate(timeout=30)


# -- the Lambda adapter ------------------------------------------------------------------------------------------
def test_without_max_processing_time_a_record_runs_on_the_invocations_thread_and_the_guard_releases_the_rest() -> None:
    # GIVEN an invocation with 60 s left whose first record runs until 4 s are left (below the 5 s margin), and no
    # max_processing_time: the function's own timeout bounds the handler
    clock = FakeClock()
    sqs, emf, context = FakeSQS(clock), io.StringIO(), FakeContext(60, clock)
    threads: list[str] = []

    def handler(body: str, message: Message) -> None:
        threads.append(threading.current_thread().name)
        clock.sleep(56)

    settings = LeaseSettings(visibility_timeout=120, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW)
    # WHEN it runs
    response = process_event(
        fake_event(["long", "next"]),
        context,
        handler,
        settings,
        sqs,
        emf=EmfLogger(emf),
        raise_on_entire_batch_failure=False,
    )
    # THEN the record ran on the invocation's thread (no handoff) to its end, and the deadline guard released the
    # one it left no time for
    assert threads == [threading.current_thread().name]
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert outcomes(emf) == {"m0": "success", "m1": "released"}
    assert changes(sqs) == [("rh-1", 0)]


def test_a_max_processing_time_at_least_the_time_left_leaves_the_record_on_the_invocations_thread() -> None:
    # GIVEN 60 s left (55 s before the margin) and a max_processing_time of 55 s: the deadline binds first
    clock = FakeClock()
    sqs, emf, context = FakeSQS(clock), io.StringIO(), FakeContext(60, clock)
    threads: list[str] = []
    settings = LeaseSettings(visibility_timeout=120, heartbeat_interval=0.2, max_processing_time=55)
    # WHEN a record runs
    process_event(
        fake_event(["a"]),
        context,
        lambda body, message: threads.append(threading.current_thread().name),
        settings,
        sqs,
        emf=EmfLogger(emf),
    )
    # THEN no spare thread ran it
    assert threads == [threading.current_thread().name] and outcomes(emf) == {"m0": "success"}


def test_a_record_still_running_at_max_processing_time_is_timed_out_and_the_next_one_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sqs, emf = FakeSQS(), io.StringIO()
    unblock = threading.Event()

    def handler(body: str, message: Message) -> None:
        if body == "hang":
            unblock.wait(30)

    settings = LeaseSettings(
        visibility_timeout=30, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW, max_processing_time=0.3
    )
    with pytest.raises(RecordsHungError):  # still running at the invocation's end: the environment ends
        process_event(fake_event(["hang", "ok"]), FakeContext(60), handler, settings, sqs, emf=EmfLogger(emf))
    # the hung record's lease is held (not released); the next one ran and the adapter deleted it (Lambda won't)
    assert outcomes(emf) == {"m0": "timed_out", "m1": "success"} and changes(sqs) == [] and deleted(sqs) == ["rh-1"]
    assert all(line["QueueTime"] >= 0 for line in read_emf(emf))  # the timed_out line too
    unblock.set()
    assert wait_for(lambda: "its result (success) is ignored" in caplog.text, timeout_s=10)
    assert len(read_emf(emf)) == 2


def test_a_timed_out_async_record_is_cancelled() -> None:
    sqs, emf = FakeSQS(), io.StringIO()
    started, cancelled = threading.Event(), threading.Event()
    coroutines: list[Coroutine[Any, Any, None]] = []

    async def forever() -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def handler(body: str, message: Message) -> Coroutine[Any, Any, None]:
        coroutines.append(forever())
        return coroutines[-1]

    settings = LeaseSettings(
        visibility_timeout=30, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW, max_processing_time=0.3
    )
    response = process_event(
        fake_event(["a"]),
        FakeContext(60),
        handler,
        settings,
        sqs,
        emf=EmfLogger(emf),
        raise_on_entire_batch_failure=False,
    )
    assert response == {"batchItemFailures": [{"itemIdentifier": "m0"}]} and outcomes(emf) == {"m0": "timed_out"}
    # its task is cancelled: in its await, or before its first step when the 0.3 s ran out first (a loaded machine)
    (coroutine,) = coroutines
    assert wait_for(lambda: inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED, timeout_s=30)
    assert cancelled.is_set() or not started.is_set()


def test_a_hung_record_against_moto_is_visible_again_after_the_invocation(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["hang"])
    event = lambda_event(local_aws, queues.url, vt=30)
    unblock = threading.Event()
    # 3 s leases: held while its handler runs (the environment ends), then it lapses
    settings = LeaseSettings(
        visibility_timeout=3,
        extension_threshold=1,
        heartbeat_interval=0.2,
        failure_policy=FailurePolicy.VISIBLE_NOW,
        max_processing_time=1,
    )
    emf = io.StringIO()
    with pytest.raises(RecordsHungError):
        process_event(
            event,
            FakeContext(60),
            lambda body, message: unblock.wait(30),
            settings,
            local_aws.client("sqs"),
            queues.url,
            EmfLogger(emf),
            raise_on_entire_batch_failure=False,
        )
    unblock.set()
    assert list(outcomes(emf).values()) == ["timed_out"]
    (again,), _ = receive_when_visible(local_aws, queues.url, timeout_s=30)
    assert again["Body"] == "hang" and again["Attributes"]["ApproximateReceiveCount"] == "2"


def test_max_processing_time_is_checked() -> None:
    with pytest.raises(ValueError, match=r"max_processing_time must be in \(0, 43200\] s, got 0"):
        LeaseSettings(max_processing_time=0)
    assert ConsumerConfig.from_env({"SQSLEASE_MAX_PROCESSING_TIME": "90"}).lease.max_processing_time == 90
