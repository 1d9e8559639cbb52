#!/usr/bin/env python3
"""One team's stack deployed twice, by a ``Dev`` and a ``Prod`` Stage: the same job types in two deployments.

- Stage ``Dev`` and Stage ``Prod``, each with stack ``TeamC`` (CloudFormation names ``Dev-TeamC``, ``Prod-TeamC``):
  - ``Exports``: an ``EcsJob``, 0 to 2 tasks of 2 handlers, handlers in ``../ops_app/worker/handlers``;
  - ``Refunds``: a ``LambdaJob`` with a 3 s timeout, code in ``../ops_app/lambda_handlers``.

What ``tests/test_stage_measurements.py`` measures: each deployment's jobs, profiles, drift rows and summaries apart
from the other's. The handlers are the ops app's (``tests/ops_app``): a job body is JSON, ``{"id": ...,
"work_s": seconds, "fail": "text"}``.
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
#: Stack names as CloudFormation knows them (a stack in a Stage is named ``<stage>-<stack>``).
STACK_NAMES = ("Dev-TeamC", "Prod-TeamC")


class TeamStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        EcsJob(
            self,
            "Exports",
            handler="invoices:handle",
            image_directory="../ops_app/worker",
            processing_p99=Duration.seconds(2),
            concurrency=2,
            min_tasks=0,
            max_tasks=2,
        )
        LambdaJob(
            self,
            "Refunds",
            code=lambda_.Code.from_asset("../ops_app/lambda_handlers"),
            handler="receipts.handle",
            timeout=Duration.seconds(3),
        )

    @property
    def availability_zones(self) -> list[str]:
        return deploy_time_availability_zones()


def build_app(app: cdk.App | None = None) -> cdk.App:
    app = app or cdk.App()
    for stage in ("Dev", "Prod"):
        TeamStack(cdk.Stage(app, stage, env=ENV), "TeamC")
    return app


if __name__ == "__main__":
    build_app().synth()
