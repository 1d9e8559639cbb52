"""The fault proxy's DynamoDB faults and lost deletes, seen by real botocore clients against moto_server: what a
worker process behind the proxy (the fault fleet, tests/test_fault_injection.py) gets, and what the server keeps."""

from __future__ import annotations

import time

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError
from support.fault_proxy import Fault, FaultProxy
from support.moto_queues import make_queue
from support.waiting import wait_for

from jobqueues.emulator.server import LOCAL_AWS_ENV, LocalServer
from sqslease.idempotency import create_table_request

pytestmark = pytest.mark.waits  # mostly waits in real time: started early, beside others' work (tests/conftest.py)

#: The read timeout of a client whose request the proxy holds or drops: what is checked is that it ends the wait.
READ_TIMEOUT_S = 0.5
#: The read timeout of a client that is answered: generous, since a loaded machine can take seconds to answer.
ANSWERED_TIMEOUT_S = 30.0


def dynamodb_through(proxy: FaultProxy, read_timeout_s: float = ANSWERED_TIMEOUT_S) -> object:
    """A client as ``sqslease.idempotency_store.store_client`` builds it: no retries; ``read_timeout_s`` short
    only where the proxy never answers in time."""
    config = Config(connect_timeout=read_timeout_s, read_timeout=read_timeout_s, retries={"total_max_attempts": 1})
    return boto3.client(
        "dynamodb",
        endpoint_url=proxy.endpoint,
        config=config,
        region_name=LOCAL_AWS_ENV["AWS_DEFAULT_REGION"],
        aws_access_key_id=LOCAL_AWS_ENV["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=LOCAL_AWS_ENV["AWS_SECRET_ACCESS_KEY"],
    )


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        ("throttle", "ProvisionedThroughputExceededException"),
        ("throttling", "ThrottlingException"),
        ("error500", "InternalServerError"),
    ],
)
def test_a_dynamodb_error_reaches_the_client_and_never_the_server(local_aws: LocalServer, kind: str, code: str) -> None:
    # GIVEN a proxy that answers every PutItem with a DynamoDB error
    table = f"faults-{kind}-{time.time_ns()}"
    local_aws.client("dynamodb").create_table(**create_table_request(table))
    rule = lambda operation, body: Fault(kind) if operation == "PutItem" else None  # noqa: E731
    with FaultProxy(local_aws.endpoint, dynamodb_rule=rule) as proxy:
        # WHEN a client puts an item through it
        with pytest.raises(ClientError) as raised:
            dynamodb_through(proxy).put_item(TableName=table, Item={"pk": {"S": "k"}})  # type: ignore[attr-defined]
    # THEN botocore parses DynamoDB's error, the server never saw the request, and the proxy counted it
    assert raised.value.response["Error"]["Code"] == code
    assert "Item" not in local_aws.client("dynamodb").get_item(TableName=table, Key={"pk": {"S": "k"}})
    assert proxy.dynamodb_counts == {("PutItem", kind): 1}
    assert "DynamoDB_20120810" not in proxy.passed


@pytest.mark.parametrize(("kind", "applied"), [("hold", True), ("drop", False)])
def test_a_held_request_is_applied_and_a_dropped_one_is_not(local_aws: LocalServer, kind: str, applied: bool) -> None:
    # GIVEN a proxy that holds (or drops) PutItem longer than the client's read timeout
    table = f"faults-{kind}-{time.time_ns()}"
    local_aws.client("dynamodb").create_table(**create_table_request(table))
    rule = lambda operation, body: Fault(kind, 4 * READ_TIMEOUT_S) if operation == "PutItem" else None  # noqa: E731
    with FaultProxy(local_aws.endpoint, dynamodb_rule=rule) as proxy:
        # WHEN a client puts an item through it
        with pytest.raises((ReadTimeoutError, ConnectionClosedError)):
            client = dynamodb_through(proxy, READ_TIMEOUT_S)
            client.put_item(TableName=table, Item={"pk": {"S": "k"}})  # type: ignore[attr-defined]
    # THEN the client never gets an answer; the server applied a held request, and never saw a dropped one
    item = local_aws.client("dynamodb").get_item(TableName=table, Key={"pk": {"S": "k"}}, ConsistentRead=True)
    assert ("Item" in item) is applied
    assert proxy.dynamodb_counts == {("PutItem", kind): 1}


def test_dynamodb_without_a_rule_passes_untouched(local_aws: LocalServer) -> None:
    with FaultProxy(local_aws.endpoint, lambda operation, body: Fault("error500")) as proxy:
        assert "TableNames" in dynamodb_through(proxy).list_tables()  # type: ignore[attr-defined]
    assert proxy.passed["DynamoDB_20120810"] == 1 and not proxy.dynamodb_counts


def test_a_redelivered_delete_is_answered_deleted_and_the_message_comes_back(local_aws: LocalServer) -> None:
    # GIVEN a proxy that loses every delete (answered deleted, never applied)
    queues = make_queue(local_aws)
    local_aws.client("sqs").send_message(QueueUrl=queues.url, MessageBody="m")
    rule = lambda operation, body: Fault("redeliver") if operation.startswith("DeleteMessage") else None  # noqa: E731
    with FaultProxy(local_aws.endpoint, rule) as proxy:
        sqs = type(local_aws)(proxy.endpoint, local_aws.process).client("sqs")
        (message,) = sqs.receive_message(QueueUrl=queues.url, VisibilityTimeout=1)["Messages"]
        # WHEN the consumer deletes it, one by one and in a batch
        sqs.delete_message(QueueUrl=queues.url, ReceiptHandle=message["ReceiptHandle"])
        answer = sqs.delete_message_batch(
            QueueUrl=queues.url, Entries=[{"Id": "a", "ReceiptHandle": message["ReceiptHandle"]}]
        )
        # THEN both say deleted, and the message comes back when its visibility timeout ends
        assert [e["Id"] for e in answer["Successful"]] == ["a"] and not answer.get("Failed")
        plain = local_aws.client("sqs")
        back: list[dict] = []

        def came_back() -> bool:
            back.extend(plain.receive_message(QueueUrl=queues.url).get("Messages", []))
            return bool(back)

        assert wait_for(came_back, 20)
        assert [m["MessageId"] for m in back] == [message["MessageId"]]
    assert proxy.counts[("DeleteMessage", "redeliver")] == proxy.counts[("DeleteMessageBatch", "redeliver")] == 1
