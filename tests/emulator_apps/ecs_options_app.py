#!/usr/bin/env python3
"""A team's app whose EcsJobs use the deployment options, unlike the example app: a VPC of its own, an ARM64
worker with variables, secrets (an SSM parameter of the stack, a Secrets Manager secret it imports, one it generates
under a KMS key of its own), a security
group of its own, ECS Exec and tag propagation; and a worker mostly on Fargate Spot with a public IP.

``tests/test_emulator_ecs_options.py`` deploys it with the real ``cdk`` CLI to the local emulator, and the
post-deploy check compares what the emulator keeps of each option with the template.
"""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from jobqueues import EcsJob, deploy_time_availability_zones

STACK_NAME = "EmulatorEcsOptions"
ENV = cdk.Environment(account="123456789012", region="us-east-1")
REGISTRY_IMAGE = "public.ecr.aws/docker/library/python:3.14-slim"
#: A secret the team manages elsewhere (rotation included), imported by its full ARN.
DATABASE_SECRET_ARN = f"arn:aws:secretsmanager:{ENV.region}:{ENV.account}:secret:render/database-AbCdEf"


class EcsOptionsStack(Stack):
    """Two ECS jobs in the team's own VPC."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        flow_logs = logs.LogGroup(
            self, "FlowLogs", retention=logs.RetentionDays.TWO_WEEKS, removal_policy=RemovalPolicy.DESTROY
        )
        vpc = ec2.Vpc(
            self,
            "Vpc",
            nat_gateways=1,
            restrict_default_security_group=False,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="Edge", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
                ec2.SubnetConfiguration(name="Render", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=22),
            ],
            flow_logs={"All": ec2.FlowLogOptions(destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs))},
        )
        api_token = ssm.StringParameter(self, "ApiToken", parameter_name="/render/api-token", string_value="local")
        database = secretsmanager.Secret.from_secret_complete_arn(self, "Database", DATABASE_SECRET_ARN)
        admin_key = kms.Key(
            self, "AdminKey", enable_key_rotation=True, removal_policy=RemovalPolicy.DESTROY, description="render admin"
        )
        admin = secretsmanager.Secret(
            self,
            "Admin",
            description="render admin credentials",
            encryption_key=admin_key,
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template=json.dumps({"username": "render"}),
                generate_string_key="password",
                exclude_punctuation=True,
                password_length=24,
            ),
            removal_policy=RemovalPolicy.DESTROY,
        )
        Validations.of(admin).acknowledge(
            Acknowledgment(
                id="AwsSolutions::AwsSolutions-SMG4",
                reason="a test app's generated credential, deployed to the local emulator only, which runs no "
                "rotation Lambda",
            )
        )
        workers = ec2.SecurityGroup(self, "RenderWorkers", vpc=vpc, description="render workers: egress only")
        EcsJob(
            self,
            "Render",
            handler="render:handle",
            processing_p99=Duration.seconds(40),
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_group_name="Render"),
            security_groups=[workers],
            cpu_architecture=ecs.CpuArchitecture.ARM64,
            cpu=512,
            memory_limit_mib=1024,
            environment={"RENDER_QUALITY": "high"},
            secrets={
                "DATABASE_PASSWORD": ecs.Secret.from_secrets_manager(database, "password"),
                "API_TOKEN": ecs.Secret.from_ssm_parameter(api_token),
                "ADMIN_PASSWORD": ecs.Secret.from_secrets_manager(admin, "password"),
            },
            enable_execute_command=True,
            propagate_tags=ecs.PropagatedTagSource.SERVICE,
            max_tasks=4,
        )
        EcsJob(
            self,
            "Crawl",
            handler="crawl:handle",
            processing_p99=Duration.seconds(15),
            vpc=vpc,
            assign_public_ip=True,  # the public subnets: no NAT gateway in the path
            capacity_provider_strategies=[
                ecs.CapacityProviderStrategy(capacity_provider="FARGATE", base=1, weight=1),
                ecs.CapacityProviderStrategy(capacity_provider="FARGATE_SPOT", weight=4),
            ],
            max_tasks=8,
            idempotency=True,  # the worker container gets the table's variables
            idempotency_key="crawl:page_key",  # ... and the key function as its --idempotency-key
        )

    @property
    def availability_zones(self) -> list[str]:
        return deploy_time_availability_zones()


def build_app(app: cdk.App | None = None) -> cdk.App:
    """The test app: one stack in the emulator's account and region, its worker image from a registry."""
    app = app or cdk.App()
    app.node.set_context("jobqueues:image", REGISTRY_IMAGE)
    EcsOptionsStack(app, STACK_NAME, env=ENV)
    return app


if __name__ == "__main__":
    build_app().synth()
