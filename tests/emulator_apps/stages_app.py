#!/usr/bin/env python3
"""A CDK app laid out as the README recommends for Dev/Prod: a top-level stack beside two ``Stage`` s.

``tests/test_local_deploy.py`` deploys it with the real ``cdk`` CLI, so the emulator is proved to deploy and
verify the stacks of nested cloud assemblies, not only the top-level one. Each stack holds one small job
queue; Prod's is FIFO and encrypted with its own KMS key. The top-level stack also adopts a queue made elsewhere
(``JobQueue.from_queue_attributes``), which no stack creates: ``jobqueues local deploy`` says how to create it
(``tests/test_cli_local_deploy.py``).
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import Duration, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from jobqueues import JobQueue

ENV = cdk.Environment(account="123456789012", region="us-east-1")
#: Stack names as CloudFormation knows them (a stack in a Stage is named ``<stage>-<stack>``).
STACK_NAMES = ("EmulatorShared", "Dev-EmulatorJobs", "Prod-EmulatorJobs")


class JobsStack(Stack):
    """One job queue (queue, DLQ, alarms); FIFO and KMS-encrypted when ``fifo``."""

    def __init__(self, scope: Construct, construct_id: str, *, fifo: bool = False, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        if fifo:
            key = kms.Key(self, "Key", enable_key_rotation=True, removal_policy=cdk.RemovalPolicy.DESTROY)
            JobQueue(self, "Orders", processing_p99=Duration.seconds(2), fifo=True, encryption_key=key)
        else:
            JobQueue(self, "Emails", processing_p99=Duration.seconds(2))

    def adopt_legacy_billing(self) -> None:
        """Adopt the queue ``legacy-billing`` and its DLQ, made elsewhere (no resource of this stack)."""
        arn = f"arn:aws:sqs:{ENV.region}:{ENV.account}:legacy-billing"
        JobQueue.from_queue_attributes(
            self,
            "Billing",
            job_type="Billing",
            queue=sqs.Queue.from_queue_arn(self, "BillingQueue", arn),
            dead_letter_queue=sqs.Queue.from_queue_arn(self, "BillingDlq", f"{arn}-dlq"),
            visibility_timeout=Duration.seconds(30),
            processing_p99=Duration.seconds(5),
        )


def build_app(app: cdk.App | None = None) -> cdk.App:
    app = app or cdk.App()
    JobsStack(app, "EmulatorShared", env=ENV).adopt_legacy_billing()
    for stage_name, fifo in (("Dev", False), ("Prod", True)):
        stage = cdk.Stage(app, stage_name, env=ENV)
        JobsStack(stage, "EmulatorJobs", fifo=fifo)
    return app


if __name__ == "__main__":
    build_app().synth()
