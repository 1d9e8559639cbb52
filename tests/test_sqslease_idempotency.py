"""The idempotency store against moto_server's DynamoDB over HTTP (real conditional writes and transactions, real
botocore clients with sqslease's timeouts): racing consumers, takeover at the lease's expiry, duplicates, failures,
late owners, faults within the slack, and the extension's request counts on the wire."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

import pytest
from support.dynamodb_faults import inject
from support.fakes import FakeClock

from jobqueues.emulator.server import LOCAL_AWS_ENV, LocalServer
from sqslease.idempotency import (
    BeginStatus,
    ExtendOutcome,
    IdempotencySettings,
    SettleOutcome,
    create_table_request,
)
from sqslease.idempotency_store import IdempotencyStore, store_client
from sqslease.settings import LeaseSettings

_job_types = itertools.count()


@pytest.fixture(scope="module")
def table(local_aws: LocalServer) -> Iterator[str]:
    name = f"idempotency-{int(time.time() * 1000) % 10_000_000}"
    dynamodb = local_aws.client("dynamodb")
    dynamodb.create_table(**create_table_request(name))
    dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"})
    yield name
    dynamodb.delete_table(TableName=name)


@pytest.fixture
def job_type() -> str:
    """A job type of its own per test: its records never meet another test's."""
    return f"Job{next(_job_types)}"


def consumer(
    local_aws: LocalServer, table: str, job_type: str, wall: FakeClock | None = None, **settings: float
) -> IdempotencyStore:
    """One consumer's store: its own client (timeouts, no botocore retries), as a worker builds it; on ``wall``
    (epoch seconds, its retries' pauses too) when given, else the real clock."""
    lease = LeaseSettings(
        **{"visibility_timeout": 30, "extension_threshold": 5, "heartbeat_interval": 0.2, **settings},
        job_type=job_type,
    )
    client = store_client(
        lease,
        endpoint_url=local_aws.endpoint,
        region_name=LOCAL_AWS_ENV["AWS_DEFAULT_REGION"],
        aws_access_key_id=LOCAL_AWS_ENV["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=LOCAL_AWS_ENV["AWS_SECRET_ACCESS_KEY"],
    )
    clock = {"clock": wall, "sleep": wall.sleep} if wall else {}
    return IdempotencyStore(client, lease, IdempotencySettings(table=table, retention_period=3600), **clock)


def stored(local_aws: LocalServer, table: str, pk: str) -> dict | None:
    item = local_aws.client("dynamodb").get_item(TableName=table, Key={"pk": {"S": pk}}, ConsistentRead=True)
    return item.get("Item")


def test_two_consumers_racing_on_the_same_keys_run_each_key_once(
    local_aws: LocalServer, table: str, job_type: str
) -> None:
    stores = [consumer(local_aws, table, job_type) for _ in range(2)]
    keys = [f"order-{i}" for i in range(20)]
    start = threading.Barrier(2)
    answers: dict[int, list[BeginStatus]] = {}

    def run(index: int) -> None:
        start.wait()
        answers[index] = [stores[index].begin(key, time.time() + 30).status for key in keys]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for first, second in zip(answers[0], answers[1], strict=True):
        assert sorted([first, second]) == [BeginStatus.IN_PROGRESS_ELSEWHERE, BeginStatus.RUN]


def test_a_dead_consumers_record_is_taken_over_at_its_expiry_not_before(
    local_aws: LocalServer, table: str, job_type: str
) -> None:
    wall = FakeClock(time.time())  # both consumers' clock: the record's expiry passes when the test says
    dead, successor = consumer(local_aws, table, job_type, wall), consumer(local_aws, table, job_type, wall)
    lease_ends = wall() + 3
    assert dead.begin("m1", lease_ends).status is BeginStatus.RUN  # then it dies: nothing extends the record
    early = successor.begin("m1", wall() + 30)
    assert early.status is BeginStatus.IN_PROGRESS_ELSEWHERE and early.expires_at == pytest.approx(lease_ends, abs=1e-3)
    wall.now = lease_ends - 0.01
    assert successor.begin("m1", wall() + 30).status is BeginStatus.IN_PROGRESS_ELSEWHERE  # not before
    wall.now = lease_ends
    assert successor.begin("m1", wall() + 30).status is BeginStatus.RUN  # at its expiry


def test_a_completed_key_is_a_duplicate_with_its_result_and_a_failed_one_runs_again(
    local_aws: LocalServer, table: str, job_type: str
) -> None:
    store = consumer(local_aws, table, job_type)
    done, failed = store.begin("done", time.time() + 30).hold, store.begin("failed", time.time() + 30).hold
    assert done is not None and failed is not None
    assert store.complete(done, {"invoice": "I-7", "lines": [1, 2]}) is SettleOutcome.DONE
    assert store.fail(failed) is SettleOutcome.DONE
    redelivered = consumer(local_aws, table, job_type)
    duplicate = redelivered.begin("done", time.time() + 30)
    assert duplicate.status is BeginStatus.COMPLETED and duplicate.result == {"invoice": "I-7", "lines": [1, 2]}
    assert redelivered.begin("failed", time.time() + 30).status is BeginStatus.RUN
    item = stored(local_aws, table, f"{job_type}#done")
    assert item is not None and int(item["ttl"]["N"]) >= time.time() + 3600 + 86_400 - 60


def test_a_late_owner_cannot_extend_complete_or_delete_its_successors_record(
    local_aws: LocalServer, table: str, job_type: str
) -> None:
    wall = FakeClock(time.time())  # both consumers' clock
    late = consumer(local_aws, table, job_type, wall, extension_threshold=1)  # request timeout 0.4 s
    successor = consumer(local_aws, table, job_type, wall)
    old = late.begin("m1", wall() + 1.5).hold
    assert old is not None
    wall.sleep(1.6)  # the late owner's lease runs out
    new = successor.begin("m1", wall() + 30).hold
    assert new is not None
    assert late.extend([(old, wall() + 30)]) == [ExtendOutcome.LOST]
    assert late.complete(old, "late") is SettleOutcome.LOST
    assert late.fail(old) is SettleOutcome.LOST
    item = stored(local_aws, table, f"{job_type}#m1")
    assert item is not None and item["owner"]["S"] == new.token and item["status"]["S"] == "IN_PROGRESS"


def test_throttling_is_retried_within_the_slack_then_the_message_is_not_run(
    local_aws: LocalServer, table: str, job_type: str
) -> None:
    wall = FakeClock(time.time())  # its retries' pauses move this clock: no real waiting
    store = consumer(local_aws, table, job_type, wall, visibility_timeout=10, extension_threshold=2)
    faults = inject(store.client, lambda operation: "throttle")
    started = wall()
    begin = store.begin("m1", started + 3)
    assert begin.status is BeginStatus.UNAVAILABLE and "ProvisionedThroughputExceeded" in (begin.error or "")
    assert faults.sent("PutItem") >= 2 and wall() < started + 3  # retried, and gave up before the lease ended
    assert stored(local_aws, table, f"{job_type}#m1") is None  # no record, so no run


def test_timeouts_are_retried_and_a_landed_begin_runs(local_aws: LocalServer, table: str, job_type: str) -> None:
    store = consumer(local_aws, table, job_type, request_timeout=0.5)
    script = iter(["timeout", "hold"])
    faults = inject(store.client, lambda operation: next(script, None))
    begin = store.begin("m1", time.time() + 30)
    assert begin.status is BeginStatus.RUN and begin.hold is not None
    assert faults.counts == {("PutItem", "timeout"): 1, ("PutItem", "hold"): 1, ("PutItem", "ok"): 1}
    item = stored(local_aws, table, f"{job_type}#m1")
    assert item is not None and item["owner"]["S"] == begin.hold.token


@pytest.mark.parametrize(("due", "requests"), [(1, 1), (25, 1), (26, 1), (100, 1), (101, 2)])
def test_extending_due_records_takes_one_transaction_per_100(
    local_aws: LocalServer, table: str, job_type: str, due: int, requests: int
) -> None:
    store = consumer(local_aws, table, job_type, request_timeout=20)  # a 100-item transaction is slow on moto
    holds = [store.begin(f"m{i}", time.time() + 600).hold for i in range(due)]  # moto may take a while
    faults = inject(store.client, lambda operation: None)
    new_expiry = time.time() + 1200
    assert store.extend([(hold, new_expiry) for hold in holds]) == [ExtendOutcome.EXTENDED] * due
    assert faults.counts == {("TransactWriteItems", "ok"): requests}
    item = stored(local_aws, table, f"{job_type}#m{due - 1}")
    assert item is not None and float(item["expires_at"]["N"]) == pytest.approx(new_expiry, abs=1e-3)


def test_records_lost_from_a_batch_cost_one_more_transaction(local_aws: LocalServer, table: str, job_type: str) -> None:
    store = consumer(local_aws, table, job_type, request_timeout=20)
    holds = [store.begin(f"m{i}", time.time() + 600).hold for i in range(100)]
    dynamodb = local_aws.client("dynamodb")
    for i in (3, 50, 99):  # completed elsewhere: another consumer took them over and finished
        dynamodb.update_item(
            TableName=table,
            Key={"pk": {"S": f"{job_type}#m{i}"}},
            UpdateExpression="SET #o = :o",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":o": {"S": "successor"}},
        )
    faults = inject(store.client, lambda operation: None)
    outcomes = store.extend([(hold, time.time() + 1200) for hold in holds])
    assert [i for i, outcome in enumerate(outcomes) if outcome is ExtendOutcome.LOST] == [3, 50, 99]
    assert faults.counts == {("TransactWriteItems", "ok"): 2}
