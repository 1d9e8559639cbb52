"""Idempotency wired into the Lambda adapter, the worker and the heartbeat, on in-memory fakes (``FakeSQS``,
``FakeDynamoDB``) and a wall clock that moves only when told: duplicates, live holders, takeover, failures,
throttling past the slack, custom keys, stored results, fatal store errors and the heartbeat's request counts. The
same against moto_server: ``test_sqslease_idempotency_runtime.py``."""

from __future__ import annotations

import io
import json
import math
import threading
from collections.abc import Callable

import pytest
from support.emf import outcomes, read_emf
from support.fake_dynamodb import FakeDynamoDB
from support.fakes import FakeClock, FakeContext, FakeSQS
from support.lambda_events import fake_event
from support.waiting import wait_for
from support.worker_threads import emf_records, running_worker

from sqslease.emf import EmfLogger
from sqslease.heartbeat import Heartbeat
from sqslease.hung_records import RecordsHungError
from sqslease.idempotency import IdempotencySettings, RecordStatus
from sqslease.idempotency_gate import IdempotencyGate, IdempotentResult
from sqslease.idempotency_store import IdempotencyStore
from sqslease.invocation import QUEUE_URL_ENV
from sqslease.lambda_adapter import process_event
from sqslease.lease_table import LeaseScheduler
from sqslease.message import Message
from sqslease.retry import FatalSqsError
from sqslease.settings import FailurePolicy, LeaseSettings

#: Epoch seconds the fake wall clock starts at.
EPOCH = 1_800_000_000.0
SETTINGS = LeaseSettings(
    visibility_timeout=30, extension_threshold=5, heartbeat_interval=0.2, heartbeat=False, job_type="Orders"
)


@pytest.fixture(autouse=True)
def no_configured_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)


def store_on(dynamodb: FakeDynamoDB, wall: FakeClock, settings: LeaseSettings = SETTINGS) -> IdempotencyStore:
    """One consumer's store; its retries move the fake wall clock instead of sleeping."""
    return IdempotencyStore(dynamodb, settings, IdempotencySettings(table="t"), clock=wall, sleep=wall.sleep)


class Counting:
    """A handler that counts its runs by body; fails the bodies in ``failing`` once each."""

    def __init__(self, failing: tuple[str, ...] = (), returns: object = None) -> None:
        self.runs: list[str] = []
        self.failing = set(failing)
        self.returns = returns

    def __call__(self, body: str, message: Message) -> object:
        self.runs.append(body)
        if body in self.failing:
            self.failing.discard(body)
            raise RuntimeError(f"{body} fails once")
        return self.returns


def invoke(event: dict, handler: Counting, store: IdempotencyStore, **kwargs: object) -> tuple[dict, dict[str, str]]:
    """One invocation with the whole 60 s left; the response and the EMF outcomes by message id."""
    emf = io.StringIO()
    response = process_event(
        event,
        FakeContext(60),
        handler,
        kwargs.pop("settings", SETTINGS),  # type: ignore[arg-type]
        FakeSQS(),
        emf=EmfLogger(emf),
        raise_on_entire_batch_failure=False,
        idempotency=store,
        **kwargs,  # type: ignore[arg-type]
    )
    return response, outcomes(emf)


# -- the Lambda adapter ---------------------------------------------------------------------------------------
def test_a_redelivered_record_whose_first_run_completed_is_reported_done_unrun_as_a_duplicate() -> None:
    # GIVEN a record whose first invocation ran and completed
    wall = FakeClock(EPOCH)
    dynamodb = FakeDynamoDB(wall)
    handler = Counting()
    first = invoke(fake_event(["a"]), handler, store_on(dynamodb, wall))
    assert first == ({"batchItemFailures": []}, {"m0": "success"})
    assert dynamodb.count() == {"PutItem": 1, "UpdateItem": 1}
    # WHEN it is delivered again (its delete was lost)
    emf = io.StringIO()
    response = process_event(
        fake_event(["a"]),
        FakeContext(60),
        handler,
        SETTINGS,
        FakeSQS(),
        emf=EmfLogger(emf),
        idempotency=store_on(dynamodb, wall),
    )
    # THEN it is not run, reported done (Lambda deletes it), and its line says duplicate with no ProcessingTime metric
    assert response == {"batchItemFailures": []} and handler.runs == ["a"]
    (line,) = read_emf(emf)
    assert line["Outcome"] == "duplicate"
    assert "ProcessingTime" not in [m["Name"] for m in line["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
    assert dynamodb.count() == {"PutItem": 2, "UpdateItem": 1}  # the duplicate cost one PutItem


def test_a_record_held_by_a_live_consumer_is_not_run_and_reported_failed() -> None:
    # GIVEN another consumer holding the key for 100 s more
    wall = FakeClock(EPOCH)
    dynamodb = FakeDynamoDB(wall)
    assert store_on(dynamodb, wall).begin("m0", EPOCH + 100).hold is not None
    handler = Counting()
    # WHEN the record arrives here
    response, lines = invoke(fake_event(["a"]), handler, store_on(dynamodb, wall))
    # THEN it is not run and left to its lease (a batch item failure, no release)
    assert handler.runs == [] and lines == {"m0": "in_progress_elsewhere"}
    assert response == {"batchItemFailures": [{"itemIdentifier": "m0"}]}


def test_a_killed_consumers_record_is_taken_over_once_its_lease_lapses() -> None:
    # GIVEN a consumer that began the key with a 30 s lease and was killed (never extends, never settles)
    wall = FakeClock(EPOCH)
    dynamodb = FakeDynamoDB(wall)
    store_on(dynamodb, wall).begin("m0", EPOCH + 30)
    handler = Counting()
    # WHEN the message is delivered before its lease lapses, then after
    before, _ = invoke(fake_event(["a"]), handler, store_on(dynamodb, wall))
    wall.now = EPOCH + 30.001
    after, lines = invoke(fake_event(["a"]), handler, store_on(dynamodb, wall))
    # THEN the first delivery does not run it, the second does and completes it
    assert before == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    assert after == {"batchItemFailures": []} and lines == {"m0": "success"} and handler.runs == ["a"]
    assert dynamodb.items["Orders#m0"]["status"]["S"] == RecordStatus.COMPLETED


def test_a_failure_deletes_the_record_and_the_retry_runs() -> None:
    # GIVEN a handler that fails its first run
    wall = FakeClock(EPOCH)
    dynamodb = FakeDynamoDB(wall)
    handler = Counting(failing=("a",))
    # WHEN the record fails, then is delivered again
    failed, _ = invoke(fake_event(["a"]), handler, store_on(dynamodb, wall))
    assert dynamodb.of("DeleteItem") and "Orders#m0" not in dynamodb.items
    retried, lines = invoke(fake_event(["a"]), handler, store_on(dynamodb, wall))
    # THEN the failure is reported, its record deleted, and the retry runs and succeeds
    assert failed == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    assert retried == {"batchItemFailures": []} and lines == {"m0": "success"} and handler.runs == ["a", "a"]


def test_throttling_past_the_slack_means_the_record_is_not_run_and_is_retried_later() -> None:
    # GIVEN a DynamoDB that throttles every PutItem for longer than the lease's slack
    wall = FakeClock(EPOCH)
    dynamodb = FakeDynamoDB(wall).script("PutItem", *["throttle"] * 1000)
    handler = Counting()
    # WHEN the record arrives
    response, lines = invoke(fake_event(["a"]), handler, store_on(dynamodb, wall))
    # THEN it is not run (never a run without a record) and is reported for a retry
    assert handler.runs == [] and lines == {"m0": "store_unavailable"}
    assert response == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    assert 1 < len(dynamodb.of("PutItem")) < 1000  # retried, then given up within the lease
    # AND once DynamoDB answers, the redelivery runs it
    dynamodb2 = FakeDynamoDB(wall)
    again, lines = invoke(fake_event(["a"]), handler, store_on(dynamodb2, wall))
    assert again == {"batchItemFailures": []} and lines == {"m0": "success"} and handler.runs == ["a"]


def test_a_key_from_the_body_dedups_two_message_ids_with_the_same_order_id() -> None:
    # GIVEN two messages (two MessageIds) of order 7, a producer's retry, and one of order 8
    wall = FakeClock(EPOCH)
    dynamodb = FakeDynamoDB(wall)
    handler = Counting()
    bodies = [json.dumps({"order_id": 7}), json.dumps({"order_id": 7}), json.dumps({"order_id": 8})]

    def order_key(body: str, message: Message) -> str:
        return str(json.loads(body)["order_id"])

    # WHEN they arrive in one batch, keyed by order id
    response, lines = invoke(fake_event(bodies), handler, store_on(dynamodb, wall), key=order_key)
    # THEN order 7 runs once: its second message is a duplicate, deleted as done
    assert response == {"batchItemFailures": []}
    assert lines == {"m0": "success", "m1": "duplicate", "m2": "success"}
    assert handler.runs == [bodies[0], bodies[2]]
    assert sorted(dynamodb.items) == ["Orders#7", "Orders#8"]


def test_a_key_function_that_raises_fails_the_record_unrun() -> None:
    wall = FakeClock(EPOCH)
    handler = Counting()
    response, lines = invoke(
        fake_event(["not json"]),
        handler,
        store_on(FakeDynamoDB(wall), wall),
        key=lambda body, m: json.loads(body)["id"],
    )
    assert handler.runs == [] and lines == {"m0": "failure"}
    assert response == {"batchItemFailures": [{"itemIdentifier": "m0"}]}


def test_a_result_the_handler_opts_in_is_stored_for_producers_and_others_are_not() -> None:
    # GIVEN a handler returning IdempotentResult, and one returning a plain value
    wall = FakeClock(EPOCH)
    dynamodb = FakeDynamoDB(wall)
    store = store_on(dynamodb, wall)
    invoke(fake_event(["a"]), Counting(returns=IdempotentResult({"invoice": "I-1"})), store)
    invoke(fake_event(["b"]), Counting(returns={"ignored": True}), store, key=lambda body, m: body)
    # THEN a producer reads the first's result by key; the second's record is completed without one
    assert store.get("m0") == (RecordStatus.COMPLETED, {"invoice": "I-1"})
    assert store.get("b") == (RecordStatus.COMPLETED, None)
    assert store.get("never") is None


def test_a_result_over_the_limit_is_logged_and_the_record_still_completed(caplog: pytest.LogCaptureFixture) -> None:
    wall = FakeClock(EPOCH)
    dynamodb = FakeDynamoDB(wall)
    store = IdempotencyStore(dynamodb, SETTINGS, IdempotencySettings(table="t", max_result_bytes=10), clock=wall)
    response, lines = invoke(fake_event(["a"]), Counting(returns=IdempotentResult("x" * 100)), store)
    assert response == {"batchItemFailures": []} and lines == {"m0": "success"}
    assert store.get("m0") == (RecordStatus.COMPLETED, None)
    assert "exceeds max_result_bytes" in caplog.text


def test_a_fatal_store_error_stops_the_invocation_as_a_fatal_sqs_error() -> None:
    wall = FakeClock(EPOCH)
    dynamodb = FakeDynamoDB(wall).script("PutItem", "access_denied")
    handler = Counting()
    with pytest.raises(FatalSqsError, match="AccessDenied"):
        invoke(fake_event(["a", "b"]), handler, store_on(dynamodb, wall))
    assert handler.runs == []


def test_a_timed_out_record_deletes_its_record() -> None:
    # GIVEN a 0.2 s max_processing_time and a handler that outlives it
    wall = FakeClock(EPOCH)
    dynamodb = FakeDynamoDB(wall)
    settings = LeaseSettings(
        visibility_timeout=30,
        extension_threshold=5,
        heartbeat=False,
        max_processing_time=0.2,
        failure_policy=FailurePolicy.LAPSE,
        job_type="Orders",
    )

    unblock = threading.Event()

    def slow(body: str, message: Message) -> None:
        unblock.wait(30)

    # THEN it is timed out (still running at the end, it ends the environment), and its record deleted so that
    # the retry runs
    with pytest.raises(RecordsHungError):
        invoke(fake_event(["a"]), slow, store_on(dynamodb, wall, settings), settings=settings)  # type: ignore[arg-type]
    unblock.set()
    assert dynamodb.count()["DeleteItem"] == 1 and dynamodb.items == {}


# -- the worker ---------------------------------------------------------------------------------------------
def test_the_worker_deletes_a_duplicate_unrun_and_runs_a_new_message_once() -> None:
    # GIVEN message "a" already completed by an earlier run, and a new message "b"
    wall = FakeClock(EPOCH)
    dynamodb = FakeDynamoDB(wall)
    done = store_on(dynamodb, wall)
    done.complete(done.begin("m-a", EPOCH + 30).hold)  # type: ignore[arg-type]
    sqs = FakeSQS(FakeClock())
    sqs.add("a", "b")
    handler = Counting()
    # WHEN a worker receives both
    with running_worker(
        sqs,
        "https://sqs.us-east-1.amazonaws.com/1/jobs",
        handler,
        clock=sqs.clock,
        worker_args={"idempotency": store_on(dynamodb, wall)},
        job_type="Orders",
        visibility_timeout=30,
        extension_threshold=5,
    ) as worker:
        assert wait_for(lambda: len(sqs.entries("DeleteMessageBatch")) == 2, timeout_s=10)
    # THEN "a" is deleted unrun as a duplicate, "b" runs once and its record is completed before its delete
    assert handler.runs == ["b"]
    assert {r["MessageId"]: r["Outcome"] for r in emf_records(worker)} == {"m-a": "duplicate", "m-b": "success"}
    assert dynamodb.items["Orders#m-b"]["status"]["S"] == RecordStatus.COMPLETED


def test_a_drain_deletes_the_record_of_a_message_it_releases_at_the_grace_end() -> None:
    # GIVEN a worker with a 1 s shutdown grace, running a handler that does not end
    wall = FakeClock(EPOCH)
    dynamodb = FakeDynamoDB(wall)
    clock = FakeClock()
    sqs = FakeSQS(clock)
    sqs.add("forever")
    started, gate = threading.Event(), threading.Event()
    held_at_release: list[bool] = []
    sqs.script("ChangeMessageVisibilityBatch", lambda: held_at_release.append("Orders#m-forever" in dynamodb.items))

    def handler(body: str, message: Message) -> None:
        started.set()
        gate.wait(30)

    try:
        with running_worker(
            sqs,
            "https://sqs.us-east-1.amazonaws.com/1/jobs",
            handler,
            concurrency=1,
            clock=clock,
            worker_args={"idempotency": store_on(dynamodb, wall)},
            job_type="Orders",
            visibility_timeout=30,
            extension_threshold=5,
            shutdown_grace=1,
        ) as worker:
            assert started.wait(10) and "Orders#m-forever" in dynamodb.items
            # WHEN it shuts down and the grace ends
            worker.shutdown()
            assert advance_until(clock, lambda: bool(sqs.of("ChangeMessageVisibilityBatch")))
        # THEN the record was deleted before the release, so the next consumer runs the message at once
        assert [e["VisibilityTimeout"] for e in sqs.entries("ChangeMessageVisibilityBatch")] == [0]
        assert held_at_release == [False] and dynamodb.items == {} and len(dynamodb.of("DeleteItem")) == 1
    finally:
        gate.set()


def advance_until(clock: FakeClock, done: Callable[[], bool], step_s: float = 0.25) -> bool:
    """Move the fake clock ``step_s`` at a time until ``done()``."""
    return wait_for(lambda: done() or bool(clock.sleep(step_s)), timeout_s=20, interval_s=0.05)


# -- the heartbeat ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("due", "transactions"), [(1, 1), (25, 1), (101, 2)])
def test_a_tick_extends_the_due_leases_records_in_ceil_due_over_100_transactions(due: int, transactions: int) -> None:
    # GIVEN `due` leases whose records this consumer holds, all due now, and one lease with no record
    clock, wall = FakeClock(0.0), FakeClock(EPOCH)
    dynamodb = FakeDynamoDB(wall)
    store = store_on(dynamodb, wall)
    gate = IdempotencyGate(store, clock=clock)
    scheduler = LeaseScheduler(SETTINGS.extension_threshold, 0)
    leases = [scheduler.add(f"h{i}", 0.0, 4.0) for i in range(due + 1)]
    for i, lease in enumerate(leases[:due]):
        message = Message(f"m{i}", f"h{i}", "", "q", lease)
        assert gate.admit(message) is None
    heartbeat = Heartbeat(FakeSQS(clock), "q", scheduler, SETTINGS, clock=clock, sleep=clock.sleep, idempotency=gate)
    before = dict(store.requests)
    # WHEN one tick runs
    stats = heartbeat.tick().wait(timeout=10)
    heartbeat.stop()
    # THEN SQS gets ceil((due + 1) / 10) batches, DynamoDB ceil(due / 100) transactions and nothing else, and each
    # record's expiry is its lease's new end (30 s from the tick), not beyond
    assert stats.requests == math.ceil((due + 1) / 10) and stats.extended == due + 1
    assert stats.records_extended == due and stats.records_missed == 0
    assert {op: n - before.get(op, 0) for op, n in store.requests.items() if n != before.get(op, 0)} == {
        "TransactWriteItems": transactions
    }
    assert {float(item["expires_at"]["N"]) for item in dynamodb.items.values()} == {EPOCH + 30}
    assert all(lease.deadline == 30.0 for lease in leases)


# -- configuration ------------------------------------------------------------------------------------------
def test_setting_the_table_variable_turns_idempotency_on_and_leaving_it_unset_builds_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sqslease import lambda_adapter
    from sqslease.worker import Worker

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    url = "https://sqs.us-east-1.amazonaws.com/1/jobs"
    # GIVEN no SQSLEASE_IDEMPOTENCY_TABLE: THEN neither the worker nor the Lambda adapter builds a store
    monkeypatch.delenv("SQSLEASE_IDEMPOTENCY_TABLE", raising=False)
    monkeypatch.setattr(lambda_adapter, "_env_store", lambda_adapter._UNSET)
    off = Worker(FakeSQS(), url, Counting(), SETTINGS)
    assert off.processor.idempotency is None and off.heartbeat.idempotency is None
    assert lambda_adapter.env_idempotency(SETTINGS) is None
    # GIVEN the table set (and a retention): THEN both build one store on it, with the consumer's job type
    monkeypatch.setenv("SQSLEASE_IDEMPOTENCY_TABLE", "orders-idempotency")
    monkeypatch.setenv("SQSLEASE_IDEMPOTENCY_RETENTION_PERIOD", "3600")
    monkeypatch.setattr(lambda_adapter, "_env_store", lambda_adapter._UNSET)
    on = Worker(FakeSQS(), url, Counting(), SETTINGS)
    assert on.processor.idempotency is not None and on.heartbeat.idempotency is on.processor.idempotency
    assert on.processor.idempotency.store.table == "orders-idempotency"
    assert on.processor.idempotency.store.idempotency.retention_period == 3600
    lambda_store = lambda_adapter.env_idempotency(SETTINGS)
    assert lambda_store is not None and lambda_store.table == "orders-idempotency"
    assert lambda_adapter.env_idempotency(SETTINGS) is lambda_store  # once per process
