"""Idempotency request counts. Run: `.venv/bin/python bench/idempotency_bench.py [--moto]`.

Exact DynamoDB requests per message and per heartbeat round, beside the SQS requests the same run makes without
idempotency. The store (``sqslease.idempotency_store``) runs on the in-memory DynamoDB of the unit tests; with
``--moto`` also on moto_server over HTTP, counted on the wire (at botocore's ``before-send``).

1. Per message, by how it ends: a first run that succeeds or fails, a redelivery of a completed key (duplicate)
   and one of a key held elsewhere.
2. Per heartbeat round of N due leases: SQS ChangeMessageVisibilityBatch requests through the real ``Heartbeat``
   (counting client; every entry succeeds) and DynamoDB TransactWriteItems through ``IdempotencyStore.extend``,
   with every record ours and with one record of the round lost.
"""

from __future__ import annotations

import argparse
import collections
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "lambda_src"), str(ROOT / "tests")]

from support.dynamodb_faults import inject  # noqa: E402
from support.fake_dynamodb import FakeDynamoDB  # noqa: E402

from jobqueues.emulator.server import LOCAL_AWS_ENV, running_server  # noqa: E402
from sqslease.heartbeat import Heartbeat  # noqa: E402
from sqslease.idempotency import IdempotencySettings, create_table_request  # noqa: E402
from sqslease.idempotency_store import IdempotencyStore, store_client  # noqa: E402
from sqslease.lease_table import LeaseScheduler  # noqa: E402
from sqslease.settings import LeaseSettings  # noqa: E402

SETTINGS = LeaseSettings(visibility_timeout=30, extension_threshold=5, heartbeat_interval=1, pull_forward=0)
DUE = (1, 10, 25, 26, 100, 101, 250, 1000)
MOTO_DUE = (1, 25, 26, 100, 101)
LONG = 3600  # seconds: records and leases that cannot lapse during a slow run


class CountingSQS:
    """Answers ChangeMessageVisibilityBatch with every entry successful, and counts requests."""

    def __init__(self) -> None:
        self.requests = 0

    def change_message_visibility_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:
        self.requests += 1
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}


def sqs_round(due: int) -> int:
    """ChangeMessageVisibilityBatch requests of one heartbeat round of ``due`` due leases."""
    sqs = CountingSQS()
    scheduler = LeaseScheduler(SETTINGS.extension_threshold, SETTINGS.pull_forward)
    now = time.monotonic()
    for i in range(due):
        scheduler.add(f"h{i}", now, 1)  # due at once
    heartbeat = Heartbeat(sqs, "q", scheduler, SETTINGS)
    try:
        heartbeat.tick().wait(timeout=60)
    finally:
        heartbeat.stop()
    return sqs.requests


Counts = Callable[[], collections.Counter[str]]


def per_message(store: IdempotencyStore, counts: Counts, prefix: str) -> dict[str, collections.Counter[str]]:
    """DynamoDB requests of each way a message ends (begin plus complete or fail; a redelivery's begin)."""
    results = {}

    def measure(name: str, run: Callable[[], Any]) -> None:
        before = counts().copy()
        run()
        results[name] = counts() - before

    def first_run(key: str, succeed: bool) -> None:
        hold = store.begin(key, time.time() + LONG).hold
        assert hold is not None
        store.complete(hold, {"ok": True}) if succeed else store.fail(hold)

    measure("success (begin, complete)", lambda: first_run(f"{prefix}s", True))
    measure("failure (begin, fail)", lambda: first_run(f"{prefix}f", False))
    measure("duplicate (begin finds COMPLETED)", lambda: store.begin(f"{prefix}s", time.time() + LONG))
    store.begin(f"{prefix}h", time.time() + LONG)
    measure("held elsewhere (begin finds IN_PROGRESS)", lambda: store.begin(f"{prefix}h", time.time() + LONG))
    return results


def per_round(store: IdempotencyStore, counts: Counts, due: int, prefix: str, lose: Callable[[str], None]) -> tuple:
    """TransactWriteItems of extending ``due`` records: all ours, then with one of them lost."""
    holds = [store.begin(f"{prefix}{i}", time.time() + LONG).hold for i in range(due)]
    before = counts()["TransactWriteItems"]
    store.extend([(hold, time.time() + 2 * LONG) for hold in holds])
    all_ours = counts()["TransactWriteItems"] - before
    lose(holds[due // 2].pk)  # type: ignore[union-attr]
    before = counts()["TransactWriteItems"]
    store.extend([(hold, time.time() + 3 * LONG) for hold in holds])
    return all_ours, counts()["TransactWriteItems"] - before


def report(name: str, store: IdempotencyStore, counts: Counts, due_list: tuple[int, ...], lose: Any) -> None:
    print(f"\n## {name}\n")
    print("| message ends as | DynamoDB requests | without idempotency |")
    print("| --- | --- | --- |")
    for way, n in per_message(store, counts, "msg-").items():
        print(f"| {way} | {sum(n.values())} ({', '.join(f'{op} {c}' for op, c in sorted(n.items()))}) | 0 |")
    print("\n| due leases | SQS ChangeMessageVisibilityBatch | DynamoDB TransactWriteItems | same, one record lost |")
    print("| --- | --- | --- | --- |")
    for due in due_list:
        all_ours, one_lost = per_round(store, counts, due, f"r{due}-", lose)
        print(f"| {due} | {sqs_round(due)} | {all_ours} | {one_lost} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moto", action="store_true", help="also count on moto_server over HTTP")
    args = parser.parse_args()
    logging.getLogger("sqslease").setLevel(logging.ERROR)  # the lost records are on purpose
    settings = LeaseSettings(**{**SETTINGS.__dict__, "job_type": "Bench"})
    idempotency = IdempotencySettings(table="idempotency")

    fake = FakeDynamoDB()
    store = IdempotencyStore(fake, settings, idempotency)

    def lose_fake(pk: str) -> None:
        fake.items[pk]["owner"] = {"S": "successor"}

    report("in-memory DynamoDB", store, lambda: fake.count(), DUE, lose_fake)
    if not args.moto:
        return
    with running_server() as server:
        dynamodb = server.client("dynamodb")
        dynamodb.create_table(**create_table_request("idempotency"))
        moto_settings = LeaseSettings(**{**settings.__dict__, "request_timeout": 30})  # moto is slow, not faulty
        client = store_client(
            moto_settings,
            endpoint_url=server.endpoint,
            region_name=LOCAL_AWS_ENV["AWS_DEFAULT_REGION"],
            aws_access_key_id=LOCAL_AWS_ENV["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=LOCAL_AWS_ENV["AWS_SECRET_ACCESS_KEY"],
        )
        wire = inject(client, lambda operation: None)

        def lose_moto(pk: str) -> None:
            dynamodb.update_item(
                TableName="idempotency",
                Key={"pk": {"S": pk}},
                UpdateExpression="SET #o = :o",
                ExpressionAttributeNames={"#o": "owner"},
                ExpressionAttributeValues={":o": {"S": "successor"}},
            )

        def on_the_wire() -> collections.Counter[str]:
            return collections.Counter({op: n for (op, _), n in wire.counts.items()})

        report(
            "moto_server over HTTP",
            IdempotencyStore(client, moto_settings, idempotency),
            on_the_wire,
            MOTO_DUE,
            lose_moto,
        )


if __name__ == "__main__":
    main()
