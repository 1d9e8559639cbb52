#!/usr/bin/env python3
"""A new team's own app, unlike the example: what ``tests/test_cli_*.py`` run the ``jobqueues`` command on.

- Stage ``Prod``, stack ``Billing`` (CloudFormation name ``Prod-Billing``):
  - ``Invoices``: an ``EcsJob`` on a FIFO queue encrypted with its own KMS key, 0 to 3 tasks of 2 handlers,
    dead-lettered after 2 receives; handlers in ``worker/handlers`` (the image's build directory).
  - ``Receipts``: a ``LambdaJob`` with a 3 s timeout, code in ``lambda_handlers``.
- Top-level stack ``OpsShared``: ``Emails``, a queue-only job type with a queue name of its own
  (``team-emails-inbox``), no consumer.

A job body is JSON: ``{"id": ..., "work_s": seconds, "fail": "text"}``; ``fail`` raises ``RuntimeError(text)``.
"""

from __future__ import annotations

import os
from typing import Any

import aws_cdk as cdk
from aws_cdk import Duration, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from jobqueues import EcsJob, JobQueue, LambdaJob, deploy_time_availability_zones

# The README's pattern for an app deployed locally and on AWS: cdk sets both (jobqueues local: the emulator's).
ENV = cdk.Environment(account=os.environ["CDK_DEFAULT_ACCOUNT"], region=os.environ["CDK_DEFAULT_REGION"])


class BillingStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        key = kms.Key(self, "Key", enable_key_rotation=True, removal_policy=cdk.RemovalPolicy.DESTROY)
        EcsJob(
            self,
            "Invoices",
            handler="invoices:handle",
            image_directory="worker",
            processing_p99=Duration.seconds(2),
            fifo=True,
            encryption_key=key,
            concurrency=2,
            min_tasks=0,
            max_tasks=3,
            max_receive_count=2,
        )
        LambdaJob(
            self,
            "Receipts",
            code=lambda_.Code.from_asset("lambda_handlers"),
            handler="receipts.handle",
            timeout=Duration.seconds(3),
            max_receive_count=2,
        )

    @property
    def availability_zones(self) -> list[str]:
        return deploy_time_availability_zones()


class SharedStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        JobQueue(self, "Emails", processing_p99=Duration.seconds(2), queue_name="team-emails-inbox")


def build_app(app: cdk.App | None = None) -> cdk.App:
    app = app or cdk.App()
    SharedStack(app, "OpsShared", env=ENV)
    BillingStack(cdk.Stage(app, "Prod", env=ENV), "Billing")
    return app


if __name__ == "__main__":
    build_app().synth()
