"""The idempotency store on an in-memory DynamoDB and a clock that moves only when told: the record's states, the
owner token, the lease tie, fault handling within the slack and exact request counts. The same behaviour against
moto_server over HTTP is in test_sqslease_idempotency.py."""

from __future__ import annotations

import json
import logging

import pytest
from support.fake_dynamodb import FakeDynamoDB
from support.fakes import FakeClock

from sqslease.config import ConsumerConfig
from sqslease.idempotency import (
    BeginStatus,
    ExtendOutcome,
    IdempotencyKeyError,
    IdempotencySettings,
    ResultTooLargeError,
    SettleOutcome,
    compute_key,
    leading_keys_pattern,
    lease_expiry_epoch,
    message_id_key,
    record_key,
)
from sqslease.idempotency_store import FatalStoreError, IdempotencyStore
from sqslease.lease import Lease
from sqslease.message import Message
from sqslease.settings import LeaseSettings

T0 = 1_800_000_000.0  # epoch seconds
SETTINGS = LeaseSettings(visibility_timeout=30, extension_threshold=5, heartbeat_interval=1, job_type="Orders")
IDEMPOTENCY = IdempotencySettings(table="idempotency", retention_period=3600, ttl_margin=600, max_result_bytes=64)


def store_on(clock: FakeClock, db: FakeDynamoDB | None = None) -> tuple[IdempotencyStore, FakeDynamoDB]:
    db = db or FakeDynamoDB(clock)
    return IdempotencyStore(db, SETTINGS, IDEMPOTENCY, clock=clock, sleep=clock.sleep), db


# -- keys, results, settings --------------------------------------------------------------------------------------
def message(message_id: str, body: str) -> Message:
    return Message(message_id, "rh", body, "q", Lease("rh", 0, 30))


def test_keys_are_prefixed_with_the_job_type_for_a_leading_keys_condition() -> None:
    by_order = compute_key(lambda body, m: json.loads(body)["order_id"], '{"order_id": "A-1"}', message("m1", ""))
    assert compute_key(message_id_key, "{}", message("m1", "{}")) == "m1"  # the default: redeliveries
    assert record_key("Orders", by_order) == "Orders#A-1"
    assert leading_keys_pattern("Orders") == "Orders#*"
    with pytest.raises(ValueError, match="without '#'"):
        record_key("Orders#EU", "A-1")  # "Orders#*" would match it: one job type could read another's records
    with pytest.raises(IdempotencyKeyError, match="2048 bytes; hash a long key"):
        record_key("Orders", "x" * 2048)


def test_a_key_function_that_fails_or_returns_no_string_is_named_in_the_error() -> None:
    def order_key(body: str, m: Message) -> str:
        return json.loads(body)["order_id"]  # type: ignore[no-any-return]

    with pytest.raises(IdempotencyKeyError, match="order_key raised KeyError"):
        compute_key(order_key, "{}", message("m1", "{}"))
    with pytest.raises(IdempotencyKeyError, match="returned 42: return a non-empty str"):
        compute_key(order_key, '{"order_id": 42}', message("m1", ""))


def test_settings_come_from_the_environment_and_bad_values_name_the_variable() -> None:
    settings = ConsumerConfig.from_env(
        {"SQSLEASE_IDEMPOTENCY_TABLE": "t", "SQSLEASE_IDEMPOTENCY_MAX_RESULT_BYTES": "1024"}
    ).idempotency
    assert (settings.table, settings.max_result_bytes, settings.retention_period) == ("t", 1024, 345_600)
    with pytest.raises(ValueError, match="SQSLEASE_IDEMPOTENCY_TTL_MARGIN='soon' is not a valid float"):
        ConsumerConfig.from_env({"SQSLEASE_IDEMPOTENCY_TTL_MARGIN": "soon"})
    with pytest.raises(ValueError, match="max_result_bytes must be 0-262144"):
        IdempotencySettings(max_result_bytes=1_000_000)


def test_a_lease_deadline_on_the_monotonic_clock_becomes_an_epoch_expiry() -> None:
    assert lease_expiry_epoch(lease_deadline=130.0, monotonic_now=100.0, epoch_now=T0) == T0 + 30


# -- states -------------------------------------------------------------------------------------------------------
def test_begin_writes_an_in_progress_record_expiring_with_the_lease() -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    begin = store.begin("m1", T0 + 30)
    assert begin.status is BeginStatus.RUN and begin.hold is not None
    item = db.items["Orders#m1"]
    assert item["status"] == {"S": "IN_PROGRESS"} and item["owner"] == {"S": begin.hold.token}
    assert float(item["expires_at"]["N"]) == T0 + 30 and int(item["ttl"]["N"]) == T0 + 30 + 3600
    assert store.requests == {"PutItem": 1}


def test_a_second_begin_on_a_live_record_is_told_when_it_lapses_and_does_not_run() -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    store.begin("m1", T0 + 30)
    clock.now = T0 + 29.9
    other = store.begin("m1", T0 + 60)
    assert other.status is BeginStatus.IN_PROGRESS_ELSEWHERE and other.expires_at == T0 + 30
    assert float(db.items["Orders#m1"]["expires_at"]["N"]) == T0 + 30  # untouched


def test_a_lapsed_holders_record_is_taken_over_at_its_expiry_and_its_late_calls_do_nothing() -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    dead = store.begin("m1", T0 + 30).hold
    assert dead is not None
    clock.now = T0 + 30  # the lease ran out: the message is visible again, and so is the key
    successor = store.begin("m1", T0 + 60)
    assert successor.status is BeginStatus.RUN and successor.hold is not None
    # The old holder wakes up: it can neither extend, complete nor delete the successor's record.
    assert store.extend([(dead, T0 + 90)]) == [ExtendOutcome.LOST]
    assert store.complete(dead, {"done": True}) is SettleOutcome.LOST
    assert store.fail(dead) is SettleOutcome.LOST
    assert db.items["Orders#m1"]["owner"] == {"S": successor.hold.token}
    assert db.items["Orders#m1"]["status"] == {"S": "IN_PROGRESS"}


def test_completed_returns_the_stored_result_to_a_redelivery_until_retention_plus_margin() -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    hold = store.begin("m1", T0 + 30).hold
    assert hold is not None
    clock.now = T0 + 10
    assert store.complete(hold, {"invoice": "I-7"}) is SettleOutcome.DONE
    assert float(db.items["Orders#m1"]["expires_at"]["N"]) == T0 + 10 + 3600 + 600
    clock.now = T0 + 10 + 4199
    again = store.begin("m1", clock.now + 30)
    assert again.status is BeginStatus.COMPLETED and again.result == {"invoice": "I-7"}
    clock.now = T0 + 10 + 4200  # void now, whether or not DynamoDB's TTL has deleted it yet
    assert store.begin("m1", clock.now + 30).status is BeginStatus.RUN


def test_a_failure_deletes_the_record_so_the_retry_runs() -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    hold = store.begin("m1", T0 + 30).hold
    assert hold is not None
    assert store.fail(hold) is SettleOutcome.DONE
    assert "Orders#m1" not in db.items
    assert store.begin("m1", T0 + 60).status is BeginStatus.RUN


def test_a_result_over_the_limit_is_refused_before_any_request_naming_the_limit() -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    hold = store.begin("m1", T0 + 30).hold
    assert hold is not None
    with pytest.raises(ResultTooLargeError, match=r"exceeds max_result_bytes \(64 bytes\)"):
        store.complete(hold, {"blob": "x" * 100})
    assert db.items["Orders#m1"]["status"] == {"S": "IN_PROGRESS"} and store.requests == {"PutItem": 1}


# -- faults ---------------------------------------------------------------------------------------------------
def test_a_begin_whose_answer_was_lost_finds_its_own_record_and_runs() -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    db.script("PutItem", "landed_timeout")
    begin = store.begin("m1", T0 + 30)
    assert begin.status is BeginStatus.RUN  # not IN_PROGRESS_ELSEWHERE: the record in the way is its own
    assert store.requests["PutItem"] == 2


def test_throttled_begin_retries_within_the_slack_then_gives_up_and_writes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    db.script("PutItem", *["throttle"] * 1000)
    with caplog.at_level(logging.ERROR, "sqslease"):
        begin = store.begin("m1", T0 + 10)
    assert begin.status is BeginStatus.UNAVAILABLE and "ProvisionedThroughputExceededException" in (begin.error or "")
    times = [at for at, _, _ in db.calls]
    assert len(times) > 2 and times[-1] < T0 + 10 - SETTINGS.lease_request_timeout  # every try had time to land
    assert times[1] - times[0] >= SETTINGS.heartbeat_interval  # throttling backs off a heartbeat interval at least
    assert db.items == {} and "gave up" in caplog.text


def test_a_timeout_then_success_runs_and_a_fatal_error_raises() -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    db.script("PutItem", "timeout", "error500")
    assert store.begin("m1", T0 + 30).status is BeginStatus.RUN and store.requests["PutItem"] == 3
    db.script("PutItem", "access_denied")
    with pytest.raises(FatalStoreError, match="AccessDeniedException"):
        store.begin("m2", T0 + 30)


def test_a_complete_whose_answer_was_lost_is_done_not_lost() -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    hold = store.begin("m1", T0 + 30).hold
    assert hold is not None
    db.script("UpdateItem", "landed_timeout")
    assert store.complete(hold) is SettleOutcome.DONE and store.requests["UpdateItem"] == 2
    db.script("DeleteItem", "landed_timeout")
    other = store.begin("m2", T0 + 30).hold
    assert other is not None and store.fail(other) is SettleOutcome.DONE


def test_a_delete_that_cannot_land_leaves_the_record_to_lapse_with_the_lease() -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    hold = store.begin("m1", T0 + 30).hold
    assert hold is not None
    db.script("DeleteItem", *["error500"] * 1000)
    assert store.fail(hold) is SettleOutcome.UNAVAILABLE
    assert clock.now < T0 + 30 and store.begin("m1", T0 + 60).status is BeginStatus.IN_PROGRESS_ELSEWHERE
    clock.now = T0 + 30
    assert store.begin("m1", T0 + 60).status is BeginStatus.RUN


# -- extension ------------------------------------------------------------------------------------------------------
def held(store: IdempotencyStore, n: int, expires_at: float) -> list:
    holds = [store.begin(f"m{i}", expires_at).hold for i in range(n)]
    store.requests.clear()
    return holds


@pytest.mark.parametrize(("due", "requests"), [(1, 1), (25, 1), (26, 1), (100, 1), (101, 2), (250, 3)])
def test_extensions_take_one_transaction_per_100_due_records(due: int, requests: int) -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    holds = held(store, due, T0 + 30)
    clock.now = T0 + 25
    outcomes = store.extend([(hold, T0 + 55) for hold in holds])
    assert outcomes == [ExtendOutcome.EXTENDED] * due and store.requests == {"TransactWriteItems": requests}
    assert all(float(item["expires_at"]["N"]) == T0 + 55 for item in db.items.values())
    assert all(hold.expires_at == T0 + 55 for hold in holds)


def test_a_lost_record_costs_its_batch_one_more_request_however_many_were_lost() -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    holds = held(store, 100, T0 + 30)
    for i in (3, 50, 99):  # taken over: another consumer's token
        db.items[f"Orders#m{i}"]["owner"] = {"S": "successor"}
    outcomes = store.extend([(hold, T0 + 55) for hold in holds])
    assert store.requests == {"TransactWriteItems": 2}
    assert [i for i, o in enumerate(outcomes) if o is ExtendOutcome.LOST] == [3, 50, 99]
    assert outcomes.count(ExtendOutcome.EXTENDED) == 97 and holds[3].lost
    assert store.extend([(holds[3], T0 + 80)]) == [ExtendOutcome.LOST] and store.requests["TransactWriteItems"] == 2


def test_throttled_records_in_a_transaction_are_retried_alone_after_a_pause() -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    holds = held(store, 3, T0 + 30)
    clock.now = T0 + 25
    db.script("TransactWriteItems", ["None", "ThrottlingError", "None"])
    assert store.extend([(hold, T0 + 55) for hold in holds]) == [ExtendOutcome.EXTENDED] * 3
    first, second = db.of("TransactWriteItems")
    assert len(first["TransactItems"]) == 3 and len(second["TransactItems"]) == 3
    assert db.calls[-1][0] - db.calls[-2][0] >= SETTINGS.heartbeat_interval


def test_an_extension_failing_until_the_slack_is_gone_is_unavailable_and_the_record_lapses() -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    (hold,) = held(store, 1, T0 + 30)
    clock.now = T0 + 25
    db.script("TransactWriteItems", *["throttle"] * 1000)
    assert store.extend([(hold, T0 + 55)]) == [ExtendOutcome.UNAVAILABLE]
    assert clock.now < T0 + 30 and hold.expires_at == T0 + 30
    clock.now = T0 + 30
    assert store.begin("m0", T0 + 60).status is BeginStatus.RUN  # the next consumer takes over at once


def test_a_record_void_within_a_request_timeout_is_not_extended() -> None:
    clock = FakeClock(T0)
    store, _ = store_on(clock)
    (hold,) = held(store, 1, T0 + 30)
    hold.expires_at = T0 + 40  # the caller thinks it has longer than the record says
    clock.now = T0 + 30 - SETTINGS.lease_request_timeout / 2
    assert store.extend([(hold, T0 + 60)]) == [ExtendOutcome.LOST]


def test_a_fatal_error_in_an_extension_raises_instead_of_losing_records_quietly() -> None:
    clock = FakeClock(T0)
    store, db = store_on(clock)
    holds = held(store, 2, T0 + 30)
    db.script("TransactWriteItems", "no_table")
    with pytest.raises(FatalStoreError, match="TransactWriteItems failed with ResourceNotFoundException"):
        store.extend([(hold, T0 + 55) for hold in holds])
    assert not any(hold.lost for hold in holds) and store.requests == {"TransactWriteItems": 1}
