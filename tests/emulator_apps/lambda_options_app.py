#!/usr/bin/env python3
"""A LambdaJob app with the deployment options the example app leaves out: an ARM64 function in a VPC, with a
layer of its own, X-Ray tracing, reserved concurrency, event source filters and metrics; and a second job in
provisioned mode, with idempotency (the stack's idempotency table).

``tests/test_emulator_lambda_options.py`` deploys it with the real ``cdk`` CLI to the local emulator (whose
post-deploy check compares what the emulator keeps) and runs the filtered job through the local Lambda driver.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import Duration, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from jobqueues import LambdaJob, deploy_time_availability_zones

STACK_NAME = "EmulatorLambdaOptions"
HERE = Path(__file__).resolve().parent
HANDLERS = HERE.parent.parent / "lambda_src" / "handlers"


class LambdaOptionsStack(Stack):
    """Two Lambda jobs with every deployment option between them."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        vpc = ec2.Vpc(self, "Vpc", max_azs=2, nat_gateways=1, flow_logs={"All": ec2.FlowLogOptions()})
        group = ec2.SecurityGroup(self, "WorkerGroup", vpc=vpc, description="thumbnail workers: outbound only")
        deps = lambda_.LayerVersion(
            self,
            "Deps",
            code=lambda_.Code.from_asset(str(HERE / "layer")),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_14],
            compatible_architectures=[lambda_.Architecture.ARM_64],
            description="a layer of the team's own",
        )
        code = lambda_.Code.from_asset(str(HANDLERS))
        #: Thumbnail jobs only: other kinds on the queue are deleted unprocessed.
        self.thumbnails = LambdaJob(
            self,
            "Thumbnails",
            code=code,
            handler="thumbs.handle",
            timeout=Duration.seconds(30),
            architecture=lambda_.Architecture.ARM_64,
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            security_groups=[group],
            reserved_concurrent_executions=10,
            max_concurrency=5,
            tracing=lambda_.Tracing.ACTIVE,
            layers=[deps],
            filters=[
                lambda_.FilterCriteria.filter({"body": {"kind": lambda_.FilterRule.is_equal("thumb")}}),
                lambda_.FilterCriteria.filter({"body": {"priority": lambda_.FilterRule.between(5, 9)}}),
            ],
            metrics_config=lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT]),
        )
        self.bursts = LambdaJob(
            self,
            "Bursts",
            code=code,
            handler="thumbs.handle",
            timeout=Duration.seconds(10),
            provisioned_poller_config=lambda_.ProvisionedPollerConfig(minimum_pollers=2, maximum_pollers=8),
            idempotency=True,
            idempotency_key="thumbs.job_key",  # a producer's retry of the same job id is a duplicate
        )

    @property
    def availability_zones(self) -> list[str]:
        """The region's first two zones at deploy time: no lookup at synth, no zone name in the template."""
        return deploy_time_availability_zones()


def build_app(app: cdk.App | None = None) -> cdk.App:
    """The test app: one stack in the emulator's account and region."""
    app = app or cdk.App()
    LambdaOptionsStack(app, STACK_NAME, env=cdk.Environment(account="123456789012", region="us-east-1"))
    return app


if __name__ == "__main__":
    build_app().synth()
