"""End to end: the queue options deployed to the emulator with the real `cdk` CLI, read back, and the stack
deleted: a retained queue survives with its messages, a destroyed one goes.

`tests/emulator_apps/queue_options_app.py`: a FIFO high-throughput job queue with a delay, 64 KiB messages and a
KMS key (its DLQ retained by default), and a standard one retained whole. One deploy per module.
"""

from __future__ import annotations

import pytest
from emulator_apps.queue_options_app import DELAY_S, MAX_MESSAGE_SIZE, STACK_NAME
from emulator_fixtures import NEEDS_CDK, Deployment

from jobqueues.ops.send import send

pytestmark = NEEDS_CDK

ORDERS, ORDERS_DLQ = f"{STACK_NAME}-Orders.fifo", f"{STACK_NAME}-Orders-dlq.fifo"
AUDIT, AUDIT_DLQ = f"{STACK_NAME}-Audit", f"{STACK_NAME}-Audit-dlq"


@pytest.fixture(scope="module")
def deployed(options_deployment: Deployment) -> Deployment:
    """The options app (its three stacks) deployed once for the three options test modules."""
    return options_deployment


def attributes(deployed: Deployment, name: str) -> dict[str, str]:
    sqs = deployed.server.client("sqs")
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    return dict(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"])


def test_the_emulator_keeps_each_option_and_the_check_compares_them(deployed: Deployment) -> None:
    # GIVEN the app deployed and verified (the post-deploy check raises on any mismatch)
    assert deployed.report.properties_compared > 0
    # THEN the source queue has the delay, the cap and the high-throughput mode; the DLQ the mode only
    orders, dlq = attributes(deployed, ORDERS), attributes(deployed, ORDERS_DLQ)
    assert (orders["DelaySeconds"], orders["MaximumMessageSize"]) == (str(DELAY_S), str(MAX_MESSAGE_SIZE))
    for queue in (orders, dlq):
        assert (queue["DeduplicationScope"], queue["FifoThroughputLimit"]) == ("messageGroup", "perMessageGroupId")
        assert queue["KmsMasterKeyId"].endswith(orders["KmsMasterKeyId"].rsplit("/", 1)[-1])
    assert dlq["DelaySeconds"] == "0"
    assert "AWS::SQS::Queue" in deployed.report.not_verifiable


def test_a_message_waits_the_delay_and_send_refuses_one_over_the_cap(deployed: Deployment) -> None:
    sqs = deployed.server.client("sqs")
    url = sqs.get_queue_url(QueueName=ORDERS)["QueueUrl"]
    # WHEN jobqueues send sends one message within the cap and one over it
    result = send(sqs, url, [(1, "x" * (MAX_MESSAGE_SIZE - 1)), (2, "y" * (MAX_MESSAGE_SIZE + 1))], group="g")
    # THEN the first is sent, the second refused before SQS with the queue's own limit ...
    assert len(result.message_ids) == 1
    assert [(f.line, f.code) for f in result.failed] == [(2, "MessageTooLong")]
    assert f"the queue takes {MAX_MESSAGE_SIZE:,}" in result.failed[0].message
    # ... and the sent one is delayed, then delivered
    counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
    assert counts["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1"
    received = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=DELAY_S + 10).get("Messages", [])
    assert [len(m["Body"]) for m in received] == [MAX_MESSAGE_SIZE - 1]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=received[0]["ReceiptHandle"])


def test_deleting_the_stack_keeps_the_retained_queues_and_their_messages(deployed: Deployment) -> None:
    # GIVEN a dead-lettered message in each DLQ and a pending job on the retained source queue
    sqs = deployed.server.client("sqs")
    urls = {name: sqs.get_queue_url(QueueName=name)["QueueUrl"] for name in (ORDERS, ORDERS_DLQ, AUDIT, AUDIT_DLQ)}
    sqs.send_message(
        QueueUrl=urls[ORDERS_DLQ], MessageBody="failed order", MessageGroupId="g", MessageDeduplicationId="1"
    )
    sqs.send_message(QueueUrl=urls[AUDIT_DLQ], MessageBody="failed audit")
    sqs.send_message(QueueUrl=urls[AUDIT], MessageBody="pending audit")
    key_id = attributes(deployed, ORDERS)["KmsMasterKeyId"].rsplit("/", 1)[-1]
    # WHEN the stack is deleted
    cloudformation = deployed.server.client("cloudformation")
    cloudformation.delete_stack(StackName=STACK_NAME)
    cloudformation.get_waiter("stack_delete_complete").wait(StackName=STACK_NAME, WaiterConfig={"Delay": 1})
    # THEN the destroyed source queue is gone, the retained queues are there with their messages
    remaining = {url.rsplit("/", 1)[-1] for url in sqs.list_queues(QueueNamePrefix=STACK_NAME).get("QueueUrls", [])}
    assert remaining == {ORDERS_DLQ, AUDIT, AUDIT_DLQ}
    for name, body in ((ORDERS_DLQ, "failed order"), (AUDIT_DLQ, "failed audit"), (AUDIT, "pending audit")):
        messages = sqs.receive_message(QueueUrl=urls[name], WaitTimeSeconds=1).get("Messages", [])
        assert [m["Body"] for m in messages] == [body], name
    # ... and so is the retained key their messages are encrypted with (moto answers its DescribeKey with a 500)
    assert key_id in [k["KeyId"] for k in deployed.server.client("kms").list_keys()["Keys"]]
