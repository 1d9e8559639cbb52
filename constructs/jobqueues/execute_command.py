"""ECS Exec into an ``EcsJob``'s worker (``enable_execute_command=True``), with the task role's grants cut to
what a session uses.

With a cluster that has no ``execute_command_configuration``, a session logs to the container's own awslogs
configuration (ECS's ``DEFAULT`` logging), i.e. the worker's log group. The CDK's ``enable_execute_command``
grants that case log writes on every log group (``Resource *``); here the task role may write the worker's log
group only. A cluster with its own configuration (a KMS key, a log group or bucket of its own) is left to the
CDK, which grants what that configuration names.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs

#: The session channel actions; they have no resource-level permissions.
SESSION_ACTIONS = (
    "ssmmessages:CreateControlChannel",
    "ssmmessages:CreateDataChannel",
    "ssmmessages:OpenControlChannel",
    "ssmmessages:OpenDataChannel",
)
#: What writes a session's log to the worker's log group.
LOG_ACTIONS = ("logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents")


def cdk_configures_execute_command(cluster: ecs.ICluster) -> bool:
    """The cluster configures ECS Exec itself: the CDK's ``enable_execute_command`` grants what it names."""
    return cluster.execute_command_configuration is not None


def enable_execute_command(service: ecs.FargateService, log_group: logs.ILogGroup) -> None:
    """Turn ECS Exec on for ``service`` (whose cluster has no exec configuration) and grant its task role the
    session channel and log writes to ``log_group`` (the worker's, where ``DEFAULT`` logging sends sessions)."""
    service_resource: ecs.CfnService = service.node.default_child  # type: ignore[assignment]
    service_resource.enable_execute_command = True
    role = service.task_definition.task_role
    role.add_to_principal_policy(iam.PolicyStatement(actions=list(SESSION_ACTIONS), resources=["*"]))
    # DescribeLogGroups lists; it takes no log group ARN.
    role.add_to_principal_policy(iam.PolicyStatement(actions=["logs:DescribeLogGroups"], resources=["*"]))
    role.add_to_principal_policy(iam.PolicyStatement(actions=list(LOG_ACTIONS), resources=[log_group.log_group_arn]))
    acknowledge_execute_command(role)


def acknowledge_execute_command(role: iam.IRole) -> None:
    """The ``Resource *`` of ECS Exec's grants, acknowledged for cdk-nag on ``role``'s policy with the reason."""
    policy = role.node.try_find_child("DefaultPolicy")
    if policy is not None:
        Validations.of(policy).acknowledge(
            Acknowledgment(
                id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
                reason=(
                    "enable_execute_command=True: ECS Exec's ssmmessages channel actions and logs:DescribeLogGroups "
                    "have no resource-level permissions, so AWS requires Resource *; a session's log writes are "
                    "limited to the worker's log group (with a cluster exec configuration: what the CDK grants for it)"
                ),
            )
        )
