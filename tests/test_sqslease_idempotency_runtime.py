"""Idempotency wired into the worker and the Lambda adapter against moto_server (SQS and DynamoDB on one endpoint,
over HTTP, real botocore clients): duplicates deleted unrun, a live holder's message left alone, a killed
consumer's key taken over when its lease lapses, failures freeing the key, the heartbeat moving the record with
the lease, throttling past the slack, and keys computed from the body."""

from __future__ import annotations

import io
import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from support.dynamodb_faults import inject
from support.emf import read_emf
from support.fakes import FakeContext
from support.lambda_events import lambda_event
from support.moto_queues import counts, make_queue
from support.waiting import wait_for
from support.worker_threads import emf_records, running_worker

from jobqueues.emulator.server import LOCAL_AWS_ENV, LocalServer
from sqslease.emf import EmfLogger
from sqslease.idempotency import IdempotencySettings, RecordStatus, create_table_request
from sqslease.idempotency_store import IdempotencyStore, store_client
from sqslease.lambda_adapter import process_event
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings

pytestmark = pytest.mark.waits  # mostly waits in real time: started early, beside others' work (tests/conftest.py)

_job_types = itertools.count()


@pytest.fixture(scope="module")
def table(local_aws: LocalServer) -> Iterator[str]:
    name = f"idem-runtime-{int(time.time() * 1000) % 10_000_000}"
    dynamodb = local_aws.client("dynamodb")
    dynamodb.create_table(**create_table_request(name))  # pk: a string partition key
    yield name
    dynamodb.delete_table(TableName=name)


@pytest.fixture
def job_type() -> str:
    return f"Runtime{next(_job_types)}"


def store(
    local_aws: LocalServer, table: str, job_type: str, vt: int = 2, extension_threshold: float = 1
) -> IdempotencyStore:
    """A consumer's store, its client built as a worker builds it (timeouts, no botocore retries)."""
    settings = LeaseSettings(
        visibility_timeout=vt, extension_threshold=extension_threshold, heartbeat_interval=0.2, job_type=job_type
    )
    client = store_client(
        settings,
        endpoint_url=local_aws.endpoint,
        region_name=LOCAL_AWS_ENV["AWS_DEFAULT_REGION"],
        aws_access_key_id=LOCAL_AWS_ENV["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=LOCAL_AWS_ENV["AWS_SECRET_ACCESS_KEY"],
    )
    return IdempotencyStore(client, settings, IdempotencySettings(table=table, retention_period=3600))


def send(local_aws: LocalServer, url: str, *bodies: str) -> list[str]:
    sqs = local_aws.client("sqs")
    return [sqs.send_message(QueueUrl=url, MessageBody=body)["MessageId"] for body in bodies]


def record(local_aws: LocalServer, table: str, pk: str) -> dict[str, Any] | None:
    answer = local_aws.client("dynamodb").get_item(TableName=table, Key={"pk": {"S": pk}}, ConsistentRead=True)
    item: dict[str, Any] | None = answer.get("Item")
    return item


class Runs:
    def __init__(self, seconds: float = 0, failing: tuple[str, ...] = ()) -> None:
        self.bodies: list[str] = []
        self.seconds = seconds
        self.failing = set(failing)

    def __call__(self, body: str, message: Message) -> None:
        self.bodies.append(body)
        time.sleep(self.seconds)
        if body in self.failing:
            self.failing.discard(body)
            raise RuntimeError(f"{body} fails once")


def worker_outcomes(worker: Any) -> list[tuple[str, str]]:
    return [(r["MessageId"], r["Outcome"]) for r in emf_records(worker)]


# -- the worker --------------------------------------------------------------------------------------------------
def test_the_worker_deletes_a_redelivery_of_a_completed_job_unrun(
    local_aws: LocalServer, table: str, job_type: str
) -> None:
    # GIVEN a message whose first run completed (its record COMPLETED) but whose delete was lost
    queues = make_queue(local_aws, vt=2)
    (message_id,) = send(local_aws, queues.url, "a")
    first = store(local_aws, table, job_type)
    first.complete(first.begin(message_id, time.time() + 30).hold)  # type: ignore[arg-type]
    runs = Runs()
    # WHEN a worker with idempotency receives it
    with running_worker(
        local_aws, queues.url, runs, worker_args={"idempotency": store(local_aws, table, job_type)}, job_type=job_type
    ) as worker:
        assert wait_for(lambda: worker_outcomes(worker), timeout_s=20)
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0), timeout_s=20)
    # THEN it is deleted without running, as a duplicate
    assert runs.bodies == [] and worker_outcomes(worker) == [(message_id, "duplicate")]


def test_a_message_held_by_a_live_consumer_is_not_run_and_a_killed_one_is_taken_over_when_its_lease_lapses(
    local_aws: LocalServer, table: str, job_type: str
) -> None:
    # GIVEN a consumer that began the message's record with a 4 s lease and was killed mid-job
    queues = make_queue(local_aws, vt=2)
    (message_id,) = send(local_aws, queues.url, "a")
    lease_ends = time.time() + 4
    store(local_aws, table, job_type).begin(message_id, lease_ends)
    runs = Runs()
    # WHEN a worker (2 s leases) receives it while the record lives, and again after
    with running_worker(
        local_aws, queues.url, runs, worker_args={"idempotency": store(local_aws, table, job_type)}, job_type=job_type
    ) as worker:
        assert wait_for(lambda: runs.bodies, timeout_s=30)
        ran_at = time.time()
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0), timeout_s=20)
    # THEN it was not run while the record lived (left to its lease), then run once and completed
    lines = worker_outcomes(worker)
    assert lines[0] == (message_id, "in_progress_elsewhere") and lines[-1] == (message_id, "success")
    assert {outcome for _, outcome in lines[:-1]} == {"in_progress_elsewhere"}
    assert runs.bodies == ["a"] and ran_at >= lease_ends
    assert record(local_aws, table, f"{job_type}#{message_id}")["status"]["S"] == RecordStatus.COMPLETED  # type: ignore[index]


def test_a_failure_deletes_the_record_and_the_retry_runs(local_aws: LocalServer, table: str, job_type: str) -> None:
    queues = make_queue(local_aws, vt=2)
    (message_id,) = send(local_aws, queues.url, "a")
    runs = Runs(failing=("a",))
    with running_worker(
        local_aws,
        queues.url,
        runs,
        worker_args={"idempotency": store(local_aws, table, job_type)},
        job_type=job_type,
        failure_policy=FailurePolicy.VISIBLE_NOW,
    ) as worker:
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0) and len(runs.bodies) == 2, timeout_s=20)
    assert worker_outcomes(worker) == [(message_id, "failure"), (message_id, "success")]


def test_the_heartbeat_moves_the_record_with_the_lease(local_aws: LocalServer, table: str, job_type: str) -> None:
    # GIVEN a 4 s lease extended 3 s before its end (a heartbeat held up to 3 s by a loaded machine still keeps it)
    # and a handler that runs 3.5 s
    queues = make_queue(local_aws, vt=4)
    (message_id,) = send(local_aws, queues.url, "a")
    consumer = store(local_aws, table, job_type, vt=4, extension_threshold=3)
    expiries: list[float] = []
    pk = f"{job_type}#{message_id}"

    def handler(body: str, message: Message) -> None:
        for _ in range(7):
            time.sleep(0.5)
            item = record(local_aws, table, pk)
            expiries.append(float(item["expires_at"]["N"]))  # type: ignore[index]
            assert item["expires_at"]["N"] and float(item["expires_at"]["N"]) > time.time()  # type: ignore[index]

    with running_worker(
        local_aws,
        queues.url,
        handler,
        worker_args={"idempotency": consumer},
        job_type=job_type,
        visibility_timeout=4,
        extension_threshold=3,
    ) as worker:
        assert wait_for(lambda: worker_outcomes(worker), timeout_s=20)
    # THEN the record never lapsed while the handler ran, and every lease extension moved it: one
    # TransactWriteItems per extension (one lease per tick), plus the PutItem and the UpdateItem
    ((_, outcome),) = worker_outcomes(worker)
    (line,) = emf_records(worker)
    assert outcome == "success" and line["Extensions"] >= 2 and len(set(expiries)) >= 2
    assert consumer.requests == {"PutItem": 1, "TransactWriteItems": line["Extensions"], "UpdateItem": 1}


def test_a_key_from_the_body_dedups_two_message_ids_with_the_same_order(
    local_aws: LocalServer, table: str, job_type: str
) -> None:
    queues = make_queue(local_aws, vt=2)
    ids = send(local_aws, queues.url, json.dumps({"order_id": 7}), json.dumps({"order_id": 7}))
    runs = Runs()
    with running_worker(
        local_aws,
        queues.url,
        runs,
        concurrency=1,
        worker_args={
            "idempotency": store(local_aws, table, job_type),
            "key": lambda body, message: str(json.loads(body)["order_id"]),
        },
        job_type=job_type,
    ) as worker:
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0) and len(emf_records(worker)) == 2, timeout_s=20)
    assert len(runs.bodies) == 1
    assert sorted(outcome for _, outcome in worker_outcomes(worker)) == ["duplicate", "success"]
    assert {message_id for message_id, _ in worker_outcomes(worker)} == set(ids)


# -- the Lambda adapter -----------------------------------------------------------------------------------------
def test_lambda_reports_a_duplicate_done_unrun_and_a_live_holders_record_failed(
    local_aws: LocalServer, table: str, job_type: str
) -> None:
    # GIVEN three records: one completed before, one held by a live consumer, one new
    queues = make_queue(local_aws, vt=30)
    done_id, held_id, new_id = send(local_aws, queues.url, "done", "held", "new")
    other = store(local_aws, table, job_type, vt=30)
    other.complete(other.begin(done_id, time.time() + 30).hold)  # type: ignore[arg-type]
    other.begin(held_id, time.time() + 60)
    runs, emf = Runs(), io.StringIO()
    settings = LeaseSettings(visibility_timeout=30, extension_threshold=5, job_type=job_type)
    # WHEN one invocation gets them
    response = process_event(
        lambda_event(local_aws, queues.url, vt=30),
        FakeContext(60),
        runs,
        settings,
        local_aws.client("sqs"),
        queues.url,
        EmfLogger(emf),
        idempotency=store(local_aws, table, job_type, vt=30),
    )
    # THEN only the new one runs; the held one is a batch item failure left to its lease, the duplicate is done
    assert runs.bodies == ["new"]
    assert response == {"batchItemFailures": [{"itemIdentifier": held_id}]}
    assert {r["MessageId"]: r["Outcome"] for r in read_emf(emf)} == {
        done_id: "duplicate",
        held_id: "in_progress_elsewhere",
        new_id: "success",
    }


def test_lambda_does_not_run_a_record_while_dynamodb_throttles_past_the_slack_and_runs_it_later(
    local_aws: LocalServer, table: str, job_type: str
) -> None:
    # GIVEN a DynamoDB that throttles every PutItem, and a 3 s lease
    queues = make_queue(local_aws, vt=3)
    (message_id,) = send(local_aws, queues.url, "a")
    consumer = store(local_aws, table, job_type, vt=3)
    throttling = [True]
    faults = inject(consumer.client, lambda op: "throttle" if op == "PutItem" and throttling[0] else None)
    runs = Runs()
    settings = LeaseSettings(visibility_timeout=3, extension_threshold=1, heartbeat=False, job_type=job_type)

    def invoke() -> dict:
        return process_event(
            lambda_event(local_aws, queues.url, vt=3),
            FakeContext(60),
            runs,
            settings,
            local_aws.client("sqs"),
            queues.url,
            idempotency=consumer,
            raise_on_entire_batch_failure=False,
        )

    # WHEN the record arrives: THEN it is not run, retried within the lease, and reported for a retry
    assert invoke() == {"batchItemFailures": [{"itemIdentifier": message_id}]}
    assert (
        runs.bodies == []
        and faults.sent("PutItem") > 1
        and record(local_aws, table, f"{job_type}#{message_id}") is None
    )
    # AND once DynamoDB answers, the redelivery (after its lease lapsed) runs it
    throttling[0] = False
    assert wait_for(lambda: counts(local_aws, queues.url)[0] == 1, timeout_s=10)
    assert invoke() == {"batchItemFailures": []} and runs.bodies == ["a"]
