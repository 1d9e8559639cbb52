"""The post-deploy check of SQS queues: every attribute the template sets, against ``GetQueueAttributes``."""

from __future__ import annotations

import json

from jobqueues.emulator.checks.comparison import Checker, Clients, Comparison, kms_key

NOT_VERIFIABLE: dict[str, str] = {
    "AWS::SQS::Queue": (
        "a stack deletion keeps Retain and RetainExceptOnCreate queues, but UpdateReplacePolicy is not emulated, "
        "and a new queue named like a retained one is not refused as CloudFormation does (AlreadyExists)"
    ),
}


def _sqs_queue(server: Clients, physical_id: str, c: Comparison) -> None:
    a = server.client("sqs").get_queue_attributes(QueueUrl=physical_id, AttributeNames=["All"])["Attributes"]
    for name in ("VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "ReceiveMessageWaitTimeSeconds"):
        c.expect(name, a.get(name))
    c.expect("MaximumMessageSize", a.get("MaximumMessageSize"))
    c.expect("FifoQueue", a.get("FifoQueue", "false"), default=False)
    c.expect("ContentBasedDeduplication", a.get("ContentBasedDeduplication"))
    # FIFO high throughput: moto keeps both (camelCase values, as in the template).
    c.expect("DeduplicationScope", a.get("DeduplicationScope"))
    c.expect("FifoThroughputLimit", a.get("FifoThroughputLimit"))
    # One kind of encryption: SSE-KMS with the template's key, else SSE-SQS (on unless the template turns it off).
    c.expect(
        "SqsManagedSseEnabled", a.get("SqsManagedSseEnabled", "false"), default="KmsMasterKeyId" not in c.properties
    )
    c.expect_value(
        "KmsMasterKeyId", kms_key(c.properties.get("KmsMasterKeyId"), c.stack), kms_key(a.get("KmsMasterKeyId"))
    )
    c.expect("KmsDataKeyReusePeriodSeconds", a.get("KmsDataKeyReusePeriodSeconds"))
    # deadLetterTargetArn is an Fn::GetAtt, which cannot be resolved here; the receive count can.
    redrive = c.properties.get("RedrivePolicy")
    if redrive:
        actual = json.loads(a.get("RedrivePolicy", "{}"))
        c.expect_value("RedrivePolicy.maxReceiveCount", redrive.get("maxReceiveCount"), actual.get("maxReceiveCount"))


CHECKERS: dict[str, Checker] = {"AWS::SQS::Queue": _sqs_queue}
