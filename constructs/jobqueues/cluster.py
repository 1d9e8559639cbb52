"""The stack's shared ECS cluster for ``EcsJob``s that bring none, in a VPC whose zones resolve at deploy time."""

from __future__ import annotations

from aws_cdk import Fn, Names, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_logs as logs
from constructs import Construct

from jobqueues.registry import registry_of

CLUSTER_ID = "JobQueuesCluster"


def deploy_time_availability_zones(count: int = 2) -> list[str]:
    """The region's first ``count`` availability zones as CloudFormation resolves them at deploy time
    (``Fn::Select`` of ``Fn::GetAZs``): no zone name hard-coded in the template (cfn-lint W3010), none looked up.

    A stack with a concrete account can return these from its ``availability_zones`` property, so that no
    ``ec2.Vpc`` in it makes synth look up the account's zones (the example app's stack does).
    """
    return [Fn.select(i, Fn.get_azs()) for i in range(count)]


def shared_cluster(scope: Construct, vpc: ec2.IVpc | None = None) -> ecs.Cluster:
    """The stack's cluster for ECS jobs that bring none: Container Insights on, in a new VPC with flow logs, or
    in ``vpc``: one per VPC, shared by the stack's ECS jobs in it.

    Two availability zones, the region's first two as CloudFormation resolves them at deploy time
    (:func:`deploy_time_availability_zones`). CDK's ``ec2.Vpc`` still reads the stack's
    ``availability_zones`` (whatever zones it is given), a context lookup when the stack's account is concrete:
    such a stack returns :func:`deploy_time_availability_zones` from that property to synthesize without one.
    """
    # Kept on the stack's registry per VPC: the tree lookup (and the VPC's unique id) are round trips to the kernel.
    registry = registry_of(scope)
    key = (CLUSTER_ID, vpc)
    cluster: ecs.Cluster | None = registry.cache.get(key)
    if cluster is None:
        cluster = registry.cache[key] = _find_or_create(registry.stack, vpc)
    return cluster


def _find_or_create(stack: Stack, vpc: ec2.IVpc | None) -> ecs.Cluster:
    cluster_id = CLUSTER_ID if vpc is None else f"{CLUSTER_ID}{Names.unique_id(vpc)}"
    existing = stack.node.try_find_child(cluster_id)
    if existing is not None:
        return existing  # type: ignore[return-value]
    if vpc is not None:
        return ecs.Cluster(stack, cluster_id, vpc=vpc, container_insights_v2=ecs.ContainerInsights.ENABLED)
    flow_log_group = logs.LogGroup(stack, "JobQueuesVpcFlowLogs", retention=logs.RetentionDays.ONE_MONTH)
    vpc = ec2.Vpc(
        stack,
        "JobQueuesVpc",
        availability_zones=deploy_time_availability_zones(),
        nat_gateways=1,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="Public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
            ec2.SubnetConfiguration(name="Workers", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=20),
        ],
        # True adds a Custom::VpcRestrictDefaultSG resource (a Lambda); the services use their own groups.
        restrict_default_security_group=False,
        flow_logs={"All": ec2.FlowLogOptions(destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_log_group))},
    )
    return ecs.Cluster(stack, CLUSTER_ID, vpc=vpc, container_insights_v2=ecs.ContainerInsights.ENABLED)
