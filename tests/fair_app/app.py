#!/usr/bin/env python3
"""A multi-tenant team's app: two fair job types, whose message groups are tenants (docs/fair-queues.md).

- Stack ``Tenants``:
  - ``Reports``: an ``EcsJob`` on a fair queue, 0 to 2 tasks of 2 handlers, handlers in ``../ops_app/worker``;
  - ``Alerts``: a ``LambdaJob`` on a fair queue with a 3 s timeout, code in ``../ops_app/lambda_handlers``, and a
    latency promise (``max_queue_time``): the quiet tenants' oldest-message alarm takes its threshold.

What ``tests/test_fair_queues_local.py`` deploys and floods from one tenant. The handlers are the ops app's
(``tests/ops_app``): a job body is JSON, ``{"id": ..., "work_s": seconds, "fail": "text"}``.
"""

from __future__ import annotations

import os
from typing import Any

import aws_cdk as cdk
from aws_cdk import Duration, Stack
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from jobqueues import EcsJob, LambdaJob, deploy_time_availability_zones

# The README's pattern for an app deployed locally and on AWS: cdk sets both (jobqueues local: the emulator's).
ENV = cdk.Environment(account=os.environ["CDK_DEFAULT_ACCOUNT"], region=os.environ["CDK_DEFAULT_REGION"])


class TenantsStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        EcsJob(
            self,
            "Reports",
            handler="invoices:handle",
            image_directory="../ops_app/worker",
            processing_p99=Duration.seconds(1),
            fair=True,
            concurrency=2,
            min_tasks=0,
            max_tasks=2,
        )
        LambdaJob(
            self,
            "Alerts",
            code=lambda_.Code.from_asset("../ops_app/lambda_handlers"),
            handler="receipts.handle",
            timeout=Duration.seconds(3),
            fair=True,
            max_queue_time=Duration.minutes(2),
        )

    @property
    def availability_zones(self) -> list[str]:
        return deploy_time_availability_zones()


if __name__ == "__main__":
    app = cdk.App()
    TenantsStack(app, "Tenants", env=ENV)
    app.synth()
