"""The worker's handling, failure policies, receiving and governor, on a scripted SQS client and a clock that
moves only when told (no network). The drain's unit tests are in ``test_sqslease_drain.py``; the same behaviour
end to end, against moto_server, in ``test_sqslease_worker.py``."""

from __future__ import annotations

import logging
import signal
import sys
import threading

import pytest
from support.emf import read_emf
from support.fakes import FakeClock, FakeSQS
from support.waiting import wait_for
from support.worker_threads import LEASES_30S as UNIT
from support.worker_threads import emf_records, running_worker

from sqslease.message import Message
from sqslease.receiver import GOVERNOR_CHECK_INTERVAL_S
from sqslease.retry import FatalSqsError
from sqslease.settings import FailurePolicy, LeaseSettings
from sqslease.worker import DEFAULT_CONCURRENCY, Worker

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
RECEIVER_THREAD = "sqslease-receiver"
#: A 10 s first lease (extended 5 s before it ends) and 1 s polls: with the clock standing still, no lease falls
#: due, so the only ChangeMessageVisibilityBatch calls are the settles under test.


class PermanentError(Exception):
    """Declared non-retryable below."""


def visibility_changes(sqs: FakeSQS) -> list[tuple[str, int]]:
    return [(e["ReceiptHandle"], e["VisibilityTimeout"]) for e in sqs.entries("ChangeMessageVisibilityBatch")]


def deleted(sqs: FakeSQS) -> list[str]:
    return [e["ReceiptHandle"] for e in sqs.entries("DeleteMessageBatch")]


def failing(body: str, message: Message) -> None:
    raise RuntimeError(f"cannot handle {body}")


def test_the_default_concurrency_is_the_rules_one() -> None:
    from sqslease.rules import DEFAULT_WORKER_CONCURRENCY

    assert DEFAULT_CONCURRENCY == DEFAULT_WORKER_CONCURRENCY == 4


def test_success_deletes_the_message_and_logs_one_success_line() -> None:
    # GIVEN a message
    sqs = FakeSQS(FakeClock())
    sqs.add("a")
    # WHEN the handler returns
    with running_worker(sqs, URL, lambda body, m: None, clock=sqs.clock, **UNIT) as worker:
        assert wait_for(lambda: deleted(sqs), timeout_s=10)
    # THEN it is deleted with its receipt handle, never made visible, and logged once as a success
    assert deleted(sqs) == sqs.handle_of("a") and visibility_changes(sqs) == []
    (record,) = emf_records(worker)
    assert record["Outcome"] == "success" and record["ReceiveCount"] == 1 and record["Queue"] == "jobs"


def test_a_receive_asks_for_one_batch_ahead_of_the_handlers_with_the_first_lease() -> None:
    sqs = FakeSQS(FakeClock())
    with running_worker(sqs, URL, lambda body, m: None, concurrency=3, clock=sqs.clock, **UNIT) as worker:
        assert wait_for(lambda: sqs.of("ReceiveMessage"), timeout_s=10)
    first = sqs.entries("ReceiveMessage")[0]
    assert first["MaxNumberOfMessages"] == 2 * 3
    assert first["VisibilityTimeout"] == worker.settings.first_lease == 10
    assert first["WaitTimeSeconds"] == worker.settings.poll_wait == 1


@pytest.mark.parametrize(
    ("policy", "receive_count", "expected"),
    [
        (FailurePolicy.VISIBLE_NOW, 1, {0}),
        (FailurePolicy.BACKOFF, 1, {3, 4, 5, 6}),  # base 6: uniform(3, 6) s for the first retry
        (FailurePolicy.BACKOFF, 3, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24}),  # 6 x 2^2, halved to all
        (FailurePolicy.LAPSE, 1, None),  # no request: the lease runs out
    ],
)
def test_a_failure_is_settled_by_the_failure_policy_never_deleted(
    policy: FailurePolicy, receive_count: int, expected: set[int] | None
) -> None:
    # GIVEN a message received for the receive_count-th time
    sqs = FakeSQS(FakeClock())
    sqs.add("x", receive_count=receive_count)
    # WHEN its handler raises
    with running_worker(sqs, URL, failing, clock=sqs.clock, failure_policy=policy, backoff_base=6, **UNIT) as worker:
        assert wait_for(lambda: emf_records(worker), timeout_s=10)
        assert wait_for(lambda: expected is None or visibility_changes(sqs), timeout_s=10)
    # THEN its visibility is set per the policy (or left to run out), it is not deleted, and the lease is let go
    (handle,) = sqs.handle_of("x")
    changes = visibility_changes(sqs)
    if expected is None:
        assert changes == []
    else:
        assert [h for h, _ in changes] == [handle] and changes[0][1] in expected, changes
    assert deleted(sqs) == [] and len(worker.scheduler) == 0
    assert [r["Outcome"] for r in emf_records(worker)] == ["failure"]


def test_a_non_retryable_error_goes_to_the_dlq_and_the_message_is_deleted() -> None:
    # GIVEN a DLQ and an exception type declared non-retryable
    sqs = FakeSQS(FakeClock())
    sqs.add("bad-order")
    dlq = URL + "-dlq"

    def permanent(body: str, message: Message) -> None:
        raise PermanentError("malformed order")

    # WHEN the handler raises it
    with running_worker(
        sqs,
        URL,
        permanent,
        clock=sqs.clock,
        non_retryable=("test_sqslease_worker_unit:PermanentError",),
        dead_letter_queue_url=dlq,
        **UNIT,
    ) as worker:
        assert wait_for(lambda: deleted(sqs), timeout_s=10)
    # THEN the body goes to the DLQ with the error and the source id, and the message is deleted, not retried
    (sent,) = sqs.entries("SendMessage")
    assert sent["QueueUrl"] == dlq and sent["MessageBody"] == "bad-order"
    assert sent["MessageAttributes"]["sqslease.source_message_id"]["StringValue"] == "m-bad-order"
    assert "malformed order" in sent["MessageAttributes"]["sqslease.error"]["StringValue"]
    assert deleted(sqs) == sqs.handle_of("bad-order") and visibility_changes(sqs) == []
    assert [r["Outcome"] for r in emf_records(worker)] == ["dead_lettered"]


@pytest.mark.parametrize("dlq_send", ["no DLQ configured", "the DLQ send fails"])
def test_a_non_retryable_error_that_cannot_reach_a_dlq_falls_back_to_the_failure_policy(dlq_send: str) -> None:
    sqs = FakeSQS(FakeClock()).script("SendMessage", "error500")
    sqs.add("bad-order")
    dlq = {} if dlq_send == "no DLQ configured" else {"dead_letter_queue_url": URL + "-dlq"}

    def permanent(body: str, message: Message) -> None:
        raise PermanentError("malformed order")

    with running_worker(
        sqs,
        URL,
        permanent,
        clock=sqs.clock,
        non_retryable=("test_sqslease_worker_unit:PermanentError",),
        failure_policy=FailurePolicy.VISIBLE_NOW,
        **dlq,
        **UNIT,
    ) as worker:
        assert wait_for(lambda: visibility_changes(sqs), timeout_s=10)
    assert visibility_changes(sqs) == [(sqs.handle_of("bad-order")[0], 0)] and deleted(sqs) == []
    assert [r["Outcome"] for r in emf_records(worker)] == ["failure"]


ran: list[str] = []


async def async_job(body: str, message: Message) -> None:
    ran.append(body)


class NotACoroutine:
    """An awaitable that is not a coroutine: sqslease cannot run it."""

    def __await__(self):  # type: ignore[no-untyped-def]
        yield


def test_an_async_handler_runs_on_the_loop_and_its_message_is_deleted() -> None:
    sqs = FakeSQS(FakeClock())
    sqs.add("async")
    ran.clear()
    with running_worker(sqs, URL, async_job, clock=sqs.clock, **UNIT) as worker:
        assert wait_for(lambda: deleted(sqs), timeout_s=10)
    assert ran == ["async"] and deleted(sqs) == sqs.handle_of("async")
    assert [r["Outcome"] for r in emf_records(worker)] == ["success"]


def test_a_handler_returning_an_awaitable_that_is_not_a_coroutine_fails_its_message_loudly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sqs = FakeSQS(FakeClock())
    sqs.add("odd")

    def odd_job(body: str, message: Message) -> NotACoroutine:
        return NotACoroutine()

    with running_worker(sqs, URL, odd_job, clock=sqs.clock, failure_policy=FailurePolicy.LAPSE, **UNIT) as worker:
        assert wait_for(lambda: emf_records(worker), timeout_s=10)
    # kept: left to lapse (its lease let go), not deleted
    assert deleted(sqs) == [] and visibility_changes(sqs) == [] and len(worker.scheduler) == 0
    assert [r["Outcome"] for r in emf_records(worker)] == ["failure"]
    assert "odd_job returned a NotACoroutine, an awaitable that is not a coroutine" in caplog.text


def test_sys_exit_or_keyboard_interrupt_in_a_handler_fails_only_its_message_and_keeps_every_handler(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN two handler threads and two messages whose handlers raise SystemExit and KeyboardInterrupt
    sqs = FakeSQS(FakeClock())
    sqs.add("exit", "interrupt")
    together = threading.Barrier(2, timeout=10)

    def handler(body: str, message: Message) -> None:
        if body == "exit":
            sys.exit(3)  # e.g. a library call that ends in sys.exit()
        if body == "interrupt":
            raise KeyboardInterrupt
        together.wait()  # both handlers are alive, at once

    with running_worker(
        sqs, URL, handler, concurrency=2, clock=sqs.clock, failure_policy=FailurePolicy.VISIBLE_NOW, **UNIT
    ) as worker:
        # WHEN they run: each fails its message only (released by the policy)
        assert wait_for(lambda: len(visibility_changes(sqs)) == 2, timeout_s=10)
        # THEN both threads still run the next two messages, at the same time
        sqs.add("pair-a", "pair-b")
        assert wait_for(lambda: len(deleted(sqs)) == 2, timeout_s=10)
    assert not together.broken
    assert sorted(visibility_changes(sqs)) == sorted((sqs.handle_of(b)[0], 0) for b in ("exit", "interrupt"))
    assert {r["MessageId"]: r["Outcome"] for r in emf_records(worker)} == {
        "m-exit": "failure",
        "m-interrupt": "failure",
        "m-pair-a": "success",
        "m-pair-b": "success",
    }
    assert "SystemExit(3)" in caplog.text and "KeyboardInterrupt()" in caplog.text


def test_a_fifo_failure_releases_its_groups_later_messages_at_once_and_leaves_other_groups() -> None:
    # GIVEN a FIFO queue with group A (A0 fails) and group B
    sqs = FakeSQS(FakeClock())
    sqs.add("A0", "A1", "A2", group="A")
    sqs.add("B0", group="B")
    runs: list[str] = []

    def handler(body: str, message: Message) -> None:
        runs.append(body)
        if body == "A0":
            raise RuntimeError("A0 fails")

    # WHEN it runs, not draining
    with running_worker(
        sqs, URL + ".fifo", handler, concurrency=2, clock=sqs.clock, failure_policy=FailurePolicy.LAPSE, **UNIT
    ) as worker:
        assert wait_for(lambda: len(visibility_changes(sqs)) == 2 and deleted(sqs), timeout_s=10)
    # THEN A1 and A2 are released unrun at once (the clock never moved), B0 ran
    assert sorted(runs) == ["A0", "B0"]
    assert sorted(visibility_changes(sqs)) == sorted([(sqs.handle_of(b)[0], 0) for b in ("A1", "A2")])
    released = sorted(r["MessageId"] for r in emf_records(worker) if r["Outcome"] == "released")
    assert released == ["m-A1", "m-A2"]


def test_an_answer_after_its_first_lease_ran_out_is_not_run_and_one_in_time_is() -> None:
    # A lease is timed from when ReceiveMessage was sent: an answer held past the lease may carry messages that
    # another consumer holds by now. One answered at the end of the long poll still has its threshold left.
    clock = FakeClock()
    settings = LeaseSettings(**UNIT)
    sqs = FakeSQS(clock).script(
        "ReceiveMessage",
        lambda: (sqs.add("late"), clock.sleep(settings.first_lease)),  # answered as the lease runs out
        lambda: (sqs.add("in-time"), clock.sleep(settings.poll_wait)),  # answered at the end of its poll
    )
    runs: list[str] = []
    with running_worker(sqs, URL, lambda body, m: runs.append(body), clock=clock, **UNIT) as worker:
        assert wait_for(lambda: deleted(sqs), timeout_s=10)
    assert runs == ["in-time"] and deleted(sqs) == sqs.handle_of("in-time")
    assert [r["MessageId"] for r in read_emf(worker.emf_lines)] == ["m-in-time"]  # type: ignore[attr-defined]


def test_the_governor_pauses_receiving_at_the_queue_limit_and_looks_again_after_its_interval() -> None:
    # GIVEN a queue at its in-flight limit
    clock = FakeClock()
    sqs = FakeSQS(clock)
    sqs.in_flight = 5
    sqs.add("waiting")
    runs: list[str] = []
    with running_worker(sqs, URL, lambda body, m: runs.append(body), clock=clock, queue_in_flight_limit=5, **UNIT):
        # WHEN the worker starts: it looks, and goes round its receive loop paused, sending no receive
        assert wait_for(lambda: sqs.of("GetQueueAttributes"), timeout_s=10)
        assert clock.await_reads(RECEIVER_THREAD, count=2)  # (it reads the clock once a round)
        assert not sqs.of("ReceiveMessage")
        # WHEN the queue drops below the limit and the check interval has passed
        sqs.in_flight = 4
        clock.sleep(GOVERNOR_CHECK_INTERVAL_S)
        # THEN it receives again
        assert wait_for(lambda: runs == ["waiting"], timeout_s=10)
    assert len(sqs.of("GetQueueAttributes")) == 2  # one look per interval of the clock, not per poll


def test_a_throttled_receive_is_retried_and_a_fatal_one_stops_the_worker() -> None:
    sqs = FakeSQS(FakeClock()).script("ReceiveMessage", "throttle")
    sqs.add("a")
    with running_worker(sqs, URL, lambda body, m: None, clock=sqs.clock, **UNIT):
        assert wait_for(lambda: deleted(sqs), timeout_s=10)
    assert len(sqs.of("ReceiveMessage")) >= 2

    denied = FakeSQS(FakeClock()).script("ReceiveMessage", "access_denied")
    worker = Worker(denied, URL, lambda body, m: None, LeaseSettings(**UNIT), clock=denied.clock)
    raised: list[BaseException] = []

    def run() -> None:
        try:
            worker.run(install_signal_handlers=False)
        except BaseException as error:
            raised.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive() and len(raised) == 1 and isinstance(raised[0], FatalSqsError), raised
    assert "AccessDenied" in raised[0].code and len(denied.of("ReceiveMessage")) == 1


def test_the_worker_says_it_is_consuming_before_a_fatal_error_of_its_first_receive(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a queue whose first receive is refused (no credentials, access denied: found by a docs-only trial, whose
    # log said "fatal ... exiting" and then "consuming ...")
    denied = FakeSQS(FakeClock()).script("ReceiveMessage", "access_denied")
    worker = Worker(denied, URL, lambda body, m: None, LeaseSettings(**UNIT), clock=denied.clock)
    # WHEN the worker runs
    with caplog.at_level(logging.INFO, logger="sqslease"), pytest.raises(FatalSqsError):
        worker.run(install_signal_handlers=False)
    # THEN its log says what it consumes first, then the fatal error
    said = [record.getMessage() for record in caplog.records if record.name == "sqslease"]
    consuming = next(i for i, text in enumerate(said) if text.startswith("consuming"))
    fatal = next(i for i, text in enumerate(said) if "AccessDenied" in text)
    assert consuming < fatal, said


def test_a_worker_needs_one_handler_at_least() -> None:
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        Worker(FakeSQS(), URL, lambda body, m: None, LeaseSettings(**UNIT), concurrency=0)


def test_a_sigterm_that_lands_while_the_main_thread_holds_the_stop_event_s_lock_still_drains(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a worker whose run installed its SIGTERM handler (captured here, not installed in the test process)
    handlers: dict[int, object] = {}
    monkeypatch.setattr("sqslease.worker.signal.signal", lambda sig, handler: handlers.__setitem__(sig, handler))
    sqs = FakeSQS()
    worker = Worker(sqs, URL, lambda body, m: None, LeaseSettings(**UNIT), clock=sqs.clock)
    run = threading.Thread(target=worker.run, daemon=True)
    run.start()
    assert wait_for(lambda: signal.SIGTERM in handlers, 10)
    on_sigterm = handlers[signal.SIGTERM]
    assert callable(on_sigterm)

    # WHEN the signal lands while the main thread is inside Event.wait, re-taking the stop event's lock: the handler
    # then runs on that thread with the lock held (a chaos run's worker hung there, never draining)
    def main_thread_in_event_wait() -> None:
        with worker._stopping._cond:  # type: ignore[attr-defined]
            on_sigterm(signal.SIGTERM, None)

    interrupted = threading.Thread(target=main_thread_in_event_wait, daemon=True)
    interrupted.start()
    interrupted.join(10)
    # THEN the handler returns at once (it took no lock), and the worker drains and returns
    assert not interrupted.is_alive(), "the SIGTERM handler blocked on the lock its own thread holds"
    run.join(30)
    assert not run.is_alive()


def test_the_workers_debug_log_leaves_the_sdks_loggers_at_info() -> None:
    # GIVEN `--log-level DEBUG` (a trial found botocore writing each signed request and every message body then)
    from sqslease.worker.cli import SDK_LOGGERS, configure_logging

    before = {name: logging.getLogger(name).level for name in SDK_LOGGERS}
    try:
        # WHEN the worker configures its log
        configure_logging("debug")
        # THEN the SDK's loggers stay at INFO (sqslease's and a handler's own follow the root's level)
        assert all(logging.getLogger(name).getEffectiveLevel() == logging.INFO for name in SDK_LOGGERS)
        assert not logging.getLogger("botocore.endpoint").isEnabledFor(logging.DEBUG)
        # AND a level above INFO holds for them too
        configure_logging("warning")
        assert logging.getLogger("botocore").getEffectiveLevel() == logging.WARNING
    finally:
        for name, level in before.items():
            logging.getLogger(name).setLevel(level)
