#!/usr/bin/env python3
"""Large payloads (the claim check) in an app of its own: what ``tests/test_payload_interop.py`` deploys and runs
with ``jobqueues local up``.

Stack ``Payloads``:

- ``Renders``: a ``LambdaJob`` with a payload bucket (S3-managed keys), code in ``lambda_handlers``;
- ``Transcode``: an ``EcsJob`` on a queue encrypted with its own KMS key, with a payload bucket under that key,
  handlers in ``worker/handlers`` (the image's build directory);
- ``Archive``: a queue-only job type with a payload bucket whose objects its consumer keeps
  (``delete_payloads=False``), no consumer: the official client reads what ``jobqueues send`` offloaded.

Each handler records what it was handed in the file ``PAYLOAD_EVENTS`` names.
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

ENV = cdk.Environment(account=os.environ["CDK_DEFAULT_ACCOUNT"], region=os.environ["CDK_DEFAULT_REGION"])


class PayloadsStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        LambdaJob(
            self,
            "Renders",
            code=lambda_.Code.from_asset("lambda_handlers"),
            handler="payloads.handle",
            timeout=Duration.seconds(30),
            payload_bucket=True,
        )
        key = kms.Key(self, "Key", enable_key_rotation=True, removal_policy=cdk.RemovalPolicy.DESTROY)
        EcsJob(
            self,
            "Transcode",
            handler="payloads:handle",
            image_directory="worker",
            processing_p99=Duration.seconds(5),
            encryption_key=key,
            min_tasks=0,
            max_tasks=1,
            payload_bucket=True,
        )
        JobQueue(self, "Archive", processing_p99=Duration.seconds(5), payload_bucket=True, delete_payloads=False)

    @property
    def availability_zones(self) -> list[str]:
        return deploy_time_availability_zones()


app = cdk.App()
PayloadsStack(app, "Payloads", env=ENV)
app.synth()
