#!/usr/bin/env python3
"""Consumers in another stack than their job queues: a team's queues stack, and a consumers stack whose function
and Fargate service are bound with ``add_lambda_consumer`` and ``add_ecs_consumer``.

The consumers stack depends on the queues stack (queue URLs and ARNs, the idempotency table, the alarm topic),
never the other way: the consumer's alarms, dashboard, scaling and ``sqslease`` layer are in the consumer's stack.
``tests/test_cross_stack_consumers.py`` synthesizes it (cdk-nag, cfn-lint); the options app
(``options_app.py``) deploys it to the emulator with the real ``cdk`` CLI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import Duration, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from jobqueues import JobQueue, deploy_time_availability_zones

QUEUES_STACK = "EmulatorCrossStackQueues"
CONSUMERS_STACK = "EmulatorCrossStackConsumers"
STACK_NAMES = (QUEUES_STACK, CONSUMERS_STACK)
ENV = cdk.Environment(account="123456789012", region="us-east-1")
HANDLERS = Path(__file__).resolve().parent.parent.parent / "lambda_src" / "handlers"
REGISTRY_IMAGE = "public.ecr.aws/docker/library/python:3.14-slim"


class QueuesStack(Stack):
    """Two job types, declared with the facts their consumers are held to."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        #: Consumed by a function of the consumers stack.
        self.resize = JobQueue(self, "Resize", lambda_timeout=Duration.seconds(30), idempotency=True)
        #: Consumed by a Fargate service of the consumers stack.
        self.encode = JobQueue(self, "Encode", processing_p99=Duration.seconds(20), lease_extension=True)


class ConsumersStack(Stack):
    """A function and a Fargate service of the team's own, bound to the queues stack's job types."""

    def __init__(self, scope: Construct, construct_id: str, queues: QueuesStack, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        role = iam.Role(self, "ResizeRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        log_group = logs.LogGroup(self, "ResizeLogs", retention=logs.RetentionDays.ONE_WEEK)
        log_group.grant_write(role)
        #: The team's function (its handler runs sqslease's entry point, like a LambdaJob's).
        self.function = lambda_.Function(
            self,
            "ResizeFunction",
            runtime=lambda_.Runtime.PYTHON_3_14,
            code=lambda_.Code.from_asset(str(HANDLERS)),
            handler="sqslease.lambda_entry.handler",
            environment={"SQSLEASE_HANDLER": "thumbs.handle"},
            timeout=Duration.seconds(30),
            role=role,
            log_group=log_group,
        )
        self.function_alarms = queues.resize.add_lambda_consumer(self.function, idempotency_key="thumbs.job_key")
        flow_logs = logs.LogGroup(self, "FlowLogs", retention=logs.RetentionDays.ONE_WEEK)
        vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            nat_gateways=1,
            restrict_default_security_group=False,  # its custom resource would not run in the emulator
            flow_logs={"All": ec2.FlowLogOptions(destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs))},
        )
        cluster = ecs.Cluster(self, "Cluster", vpc=vpc, container_insights_v2=ecs.ContainerInsights.ENABLED)
        task = ecs.FargateTaskDefinition(self, "EncodeTask")
        task.add_container(
            "Worker",
            image=ecs.ContainerImage.from_registry(REGISTRY_IMAGE),
            command=queues.encode.worker_command("encode:handle", concurrency=2),
            logging=ecs.LogDrivers.aws_logs(
                stream_prefix="encode",
                log_group=logs.LogGroup(self, "EncodeLogs", retention=logs.RetentionDays.ONE_WEEK),
            ),
        )
        #: The team's service.
        self.service = ecs.FargateService(
            self, "EncodeService", cluster=cluster, task_definition=task, min_healthy_percent=100
        )
        self.service_alarms = queues.encode.add_ecs_consumer(self.service, max_tasks=2)

    @property
    def availability_zones(self) -> list[str]:
        return deploy_time_availability_zones()


def build_app(app: cdk.App | None = None) -> cdk.App:
    app = app or cdk.App()
    queues = QueuesStack(app, QUEUES_STACK, env=ENV)
    ConsumersStack(app, CONSUMERS_STACK, queues, env=ENV)
    return app


if __name__ == "__main__":
    build_app().synth()
