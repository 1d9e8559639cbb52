"""The emulator's DynamoDB against moto's own: a cancelled TransactWriteItems must not undo other writes.

moto restores a whole-table copy taken when a transaction began to cancel it; under concurrent requests that
reverted acknowledged writes (the fault fleet saw a COMPLETED idempotency record reverted). The emulator serves
DynamoDB requests one at a time (``jobqueues.emulator.patches.dynamodb.make_dynamodb_requests_atomic``).

moto's backend runs in process (``mock_aws``), its requests through moto's own ``DynamoHandler``, with the window
between the transaction's copy and its restore held open until a PutItem sent meanwhile is answered: without the
patch the put lands in the window and is reverted, every time; with it the put waits for the transaction. Over HTTP,
the emulator's moto_server keeps 200 of 200 writes beside a loop of cancelled transactions.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.responses import DynamoHandler

from jobqueues.emulator.patches.dynamodb import make_dynamodb_requests_atomic
from jobqueues.emulator.server import Emulator, LocalServer

PUTS = 200
#: Seconds a transaction holds its window open for a put that never comes (with the patch, the put waits for the
#: transaction): the put is answered in milliseconds without the patch, so this only bounds the patched case.
WINDOW_S = 1.0


def create_table(dynamodb: Any) -> str:
    table = f"race-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return table


def cancelled_transaction(table: str) -> dict[str, Any]:
    """A TransactWriteItems item whose condition always fails: the transaction is cancelled."""
    return {
        "Update": {
            "TableName": table,
            "Key": {"pk": {"S": "x"}},
            "UpdateExpression": "SET v = :v",
            "ConditionExpression": "attribute_exists(never)",
            "ExpressionAttributeValues": {":v": {"N": "1"}},
        }
    }


@pytest.fixture
def in_process_dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A DynamoDB client on moto's backend in this process; ``DynamoHandler.call_action`` restored afterwards."""
    monkeypatch.setattr(DynamoHandler, "call_action", DynamoHandler.call_action)
    with mock_aws():
        yield boto3.client(
            "dynamodb", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
        )


def put_beside_a_cancelled_transaction(dynamodb: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[bool, list[str]]:
    """A PutItem sent while a cancelled TransactWriteItems holds its copy of the table (the transaction waits there
    until the put is answered, or :data:`WINDOW_S`): whether the put's item exists afterwards, and what the backend
    did, in order (``copied`` the table, ``put`` the item, ``cancelled`` the transaction)."""
    table = create_table(dynamodb)
    events: list[str] = []
    in_window, put_answered = threading.Event(), threading.Event()
    answers: list[str] = []  # what the transaction's client was told
    transaction = threading.Thread(target=lambda: answers.append(transact(dynamodb, table)), name="transaction")
    get_item, put_item, transact_write_items = (
        DynamoDBBackend.get_item,
        DynamoDBBackend.put_item,
        DynamoDBBackend.transact_write_items,
    )

    def held_get_item(self: DynamoDBBackend, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is transaction:  # its condition check: the table's copy is taken
            events.append("copied")
            in_window.set()
            put_answered.wait(WINDOW_S)
        return get_item(self, *args, **kwargs)

    def recorded_put_item(self: DynamoDBBackend, *args: Any, **kwargs: Any) -> Any:
        item = put_item(self, *args, **kwargs)
        events.append("put")
        return item

    def recorded_transact_write_items(self: DynamoDBBackend, *args: Any, **kwargs: Any) -> None:
        try:
            transact_write_items(self, *args, **kwargs)
        finally:
            events.append("cancelled")

    monkeypatch.setattr(DynamoDBBackend, "get_item", held_get_item)
    monkeypatch.setattr(DynamoDBBackend, "put_item", recorded_put_item)
    monkeypatch.setattr(DynamoDBBackend, "transact_write_items", recorded_transact_write_items)
    transaction.start()
    try:
        assert in_window.wait(30), "the transaction never reached its condition check"
        dynamodb.put_item(TableName=table, Item={"pk": {"S": "acknowledged"}})
    finally:
        put_answered.set()
        transaction.join(30)
    assert answers == ["TransactionCanceledException"]  # what the condition asks for
    kept = "Item" in dynamodb.get_item(TableName=table, Key={"pk": {"S": "acknowledged"}}, ConsistentRead=True)
    return kept, events


def transact(dynamodb: Any, table: str) -> str:
    """The error code a cancelled transaction is answered with ("" if it was not)."""
    try:
        dynamodb.transact_write_items(TransactItems=[cancelled_transaction(table)])
    except dynamodb.exceptions.ClientError as error:
        return str(error.response["Error"]["Code"])
    return ""


def test_moto_alone_reverts_a_write_acknowledged_beside_a_cancelled_transaction(
    in_process_dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept, events = put_beside_a_cancelled_transaction(in_process_dynamodb, monkeypatch)
    # the race the emulator's patch removes: the put was acknowledged, then the cancel restored the older copy
    assert events == ["copied", "put", "cancelled"] and not kept


def test_the_patch_makes_a_put_wait_for_the_cancelled_transaction(
    in_process_dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_dynamodb_requests_atomic(DynamoHandler)
    kept, events = put_beside_a_cancelled_transaction(in_process_dynamodb, monkeypatch)
    assert events == ["copied", "cancelled", "put"] and kept


def writes_kept_beside_cancelled_transactions(emulator: Emulator) -> tuple[int, int]:
    """PUTS acknowledged PutItems while two threads loop TransactWriteItems whose condition fails: how many items
    exist afterwards, and how many requests the server failed (HTTP 500)."""
    dynamodb = emulator.client("dynamodb")
    table = create_table(dynamodb)
    done, errors = threading.Event(), []

    def cancel_in_a_loop() -> None:
        client = emulator.client("dynamodb")
        while not done.is_set():
            try:
                client.transact_write_items(TransactItems=[cancelled_transaction(table)])
            except client.exceptions.TransactionCanceledException:
                pass  # what the condition asks for
            except client.exceptions.ClientError as error:
                errors.append(error)

    threads = [threading.Thread(target=cancel_in_a_loop) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        for i in range(PUTS):
            dynamodb.put_item(TableName=table, Item={"pk": {"S": f"k{i}"}})
    finally:
        done.set()
        for thread in threads:
            thread.join()
    return dynamodb.scan(TableName=table, Select="COUNT")["Count"], len(errors)


def test_the_emulator_keeps_every_acknowledged_write(local_aws: LocalServer) -> None:
    assert writes_kept_beside_cancelled_transactions(local_aws) == (PUTS, 0)
