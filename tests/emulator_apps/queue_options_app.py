#!/usr/bin/env python3
"""A CDK app of job queues with the queue options, unlike the example: what ``tests/test_emulator_queue_options.py``
deploys to the emulator, reads back, and deletes.

- ``Orders``: FIFO high throughput (``MESSAGE_GROUP`` deduplication, ``PER_MESSAGE_GROUP_ID`` limit), a 5 s
  delivery delay, 64 KiB messages, its own KMS key (retained, as the retained DLQ's messages need it), the
  source queue destroyed with the stack and the DLQ retained (the defaults).
- ``Audit``: a standard queue kept on deletion (``RETAIN``), its DLQ ``RETAIN_ON_UPDATE_OR_DELETE``.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import Duration, RemovalPolicy, Size, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from jobqueues import JobQueue

ENV = cdk.Environment(account="123456789012", region="us-east-1")
STACK_NAME = "EmulatorQueueOptions"
DELAY_S = 5
MAX_MESSAGE_SIZE = 64 * 1024


class QueueOptionsStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        key = kms.Key(self, "Key", enable_key_rotation=True, removal_policy=RemovalPolicy.RETAIN)
        JobQueue(
            self,
            "Orders",
            processing_p99=Duration.seconds(2),
            fifo=True,
            encryption_key=key,
            delivery_delay=Duration.seconds(DELAY_S),
            max_message_size=Size.bytes(MAX_MESSAGE_SIZE),
            deduplication_scope=sqs.DeduplicationScope.MESSAGE_GROUP,
            fifo_throughput_limit=sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
        )
        JobQueue(
            self,
            "Audit",
            processing_p99=Duration.seconds(2),
            removal_policy=RemovalPolicy.RETAIN,
            dlq_removal_policy=RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
        )


def build_app(app: cdk.App | None = None) -> cdk.App:
    app = app or cdk.App()
    QueueOptionsStack(app, STACK_NAME, env=ENV)
    return app


if __name__ == "__main__":
    build_app().synth()
