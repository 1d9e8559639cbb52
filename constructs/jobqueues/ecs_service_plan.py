"""Plan, then build, for an ``EcsJob``'s service: its deployment options read, checked and settled before
anything is built.

:func:`plan_ecs_service` reads the props (types where they enter, :class:`jobqueues.inputs.PropReader`), turns
them into plain values for the rules of :mod:`jobqueues.ecs_rules`, and returns an :class:`EcsServicePlan`:
every value the task definition and the service get, and every error. ``EcsJob`` lists those errors with the
queue's in one ``JobQueueError`` (its consumer check goes into :func:`jobqueues.planning.plan_from_props`), and
builds from the plan only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import jsii
from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs

from jobqueues.consumer_rules import check_vpc_members
from jobqueues.ecs_rules import (
    ProviderShare,
    check_capacity_providers,
    check_cpu_architecture,
    check_environment,
    check_network,
    check_platform_version,
)
from jobqueues.inputs import PropReader
from jobqueues.vpc_membership import members_outside


@dataclass(frozen=True)
class EcsServicePlan:
    """Every deployment option of an ``EcsJob``'s task definition and service, final.

    :param environment: the worker container's own variables (besides the contract, which is its command).
    :param secrets: the worker container's secrets; the execution role may read exactly these.
    :param capacity_provider_strategies: the service's strategy; ``None``: the FARGATE launch type.
    :param platform_version: the service's pinned Fargate platform version; ``None``: ECS's LATEST.
    :param cpu_architecture: the task's CPU architecture; ``None``: Fargate's default, X86_64.
    :param architecture: its name, ``"X86_64"`` or ``"ARM64"``.
    :param vpc: the VPC of the job's own cluster; ``None``: the cluster given, or the stack's default.
    :param vpc_subnets: the tasks' subnets; ``None``: the CDK's choice (private, public with a public IP).
    :param security_groups: the tasks' security groups; ``None``: a new one, egress only.
    :param assign_public_ip: tasks get a public IP.
    :param enable_execute_command: ECS Exec into the worker container.
    :param propagate_tags: where the tasks' tags come from; ``None``: no tags propagated.
    :param errors: every problem, each with its fix; a plan with errors is never built.
    """

    environment: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, ecs.Secret] = field(default_factory=dict)
    capacity_provider_strategies: list[ecs.CapacityProviderStrategy] | None = None
    platform_version: ecs.FargatePlatformVersion | None = None
    cpu_architecture: ecs.CpuArchitecture | None = None
    architecture: str = "X86_64"
    vpc: ec2.IVpc | None = None
    vpc_subnets: ec2.SubnetSelection | None = None
    security_groups: list[ec2.ISecurityGroup] | None = None
    assign_public_ip: bool = False
    enable_execute_command: bool = False
    propagate_tags: ecs.PropagatedTagSource | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def fargate_spot(self) -> bool:
        """Some tasks may run on Fargate Spot."""
        return any(s.capacity_provider == "FARGATE_SPOT" for s in self.capacity_provider_strategies or [])


def plan_ecs_service(read: PropReader, cluster: ecs.ICluster | None) -> EcsServicePlan:
    """The plan of an ``EcsJob``'s deployment options; type errors go to ``read.errors``, rule errors to the
    plan's.

    :param read: the job's props reader.
    :param cluster: the cluster given (already read); ``None``: the default one.
    """
    environment = read.mapping("environment", str, "a dict of str to str, e.g. {'LOG_FORMAT': 'json'}")
    secrets = read.mapping(
        "secrets", ecs.Secret, "a dict of str to ecs.Secret, e.g. {'DB_PASSWORD': ecs.Secret.from_secrets_manager(s)}"
    )
    placement = _plan_placement(read)
    vpc = read.having("vpc", "vpc_id", "an ec2.IVpc, e.g. ec2.Vpc(self, 'Vpc')")
    vpc_subnets = read.instance(
        "vpc_subnets",
        ec2.SubnetSelection,
        "an ec2.SubnetSelection, e.g. ec2.SubnetSelection(subnet_group_name='Workers')",
    )
    security_groups = read.sequence(
        "security_groups", None, "security_group_id", "a list of ec2.ISecurityGroup, e.g. [ec2.SecurityGroup(...)]"
    )
    assign_public_ip = read.boolean("assign_public_ip", False)
    propagate_tags = read.instance("propagate_tags", ecs.PropagatedTagSource, "ecs.PropagatedTagSource.SERVICE")
    errors = list(placement.errors)
    errors += check_environment(list(environment or {}), list(secrets or {}))
    cluster_vpc = cluster.vpc if cluster is not None else None
    network_vpc = vpc or cluster_vpc
    errors += check_network(
        vpc_subnets=repr(vpc_subnets) if vpc_subnets is not None else None,
        vpc=vpc.node.path if vpc is not None else None,
        cluster=cluster.node.path if cluster is not None else None,
        cluster_vpc=cluster_vpc.node.path
        if cluster_vpc is not None and vpc is not None and not _same(vpc, cluster_vpc)
        else None,
        assign_public_ip=assign_public_ip,
        private_subnets=_private_subnets(network_vpc, vpc_subnets, errors) if assign_public_ip and network_vpc else [],
    )
    if network_vpc is not None:
        errors += check_vpc_members(
            network_vpc.node.path, members_outside(network_vpc, security_groups or [], vpc_subnets)
        )
    return replace(
        placement,
        environment=environment or {},
        secrets=secrets or {},
        vpc=vpc,
        vpc_subnets=vpc_subnets,
        security_groups=security_groups,
        assign_public_ip=assign_public_ip,
        enable_execute_command=read.boolean("enable_execute_command", False),
        propagate_tags=propagate_tags,
        errors=errors,
    )


def _plan_placement(read: PropReader) -> EcsServicePlan:
    """Where the tasks run, checked: the capacity provider strategy, the pinned platform version and the CPU
    architecture (a plan with only those, and their errors)."""
    strategies = read.sequence(
        "capacity_provider_strategies",
        ecs.CapacityProviderStrategy,
        "",
        "a list of ecs.CapacityProviderStrategy, e.g. [ecs.CapacityProviderStrategy(capacity_provider='FARGATE_SPOT', "
        "weight=1)]",
    )
    cpu_architecture = read.instance("cpu_architecture", ecs.CpuArchitecture, "ecs.CpuArchitecture.ARM64")
    member = read.member("platform_version", ecs.FargatePlatformVersion, "ecs.FargatePlatformVersion.VERSION1_4")
    architecture = "X86_64" if cpu_architecture is None else architecture_name(cpu_architecture)
    errors = check_cpu_architecture(architecture)
    shares = [ProviderShare(s.capacity_provider, s.weight, s.base) for s in strategies or []]
    if strategies is not None:
        errors += check_capacity_providers(shares)
    errors += check_platform_version(member, architecture, shares)
    return EcsServicePlan(
        capacity_provider_strategies=strategies,
        platform_version=ecs.FargatePlatformVersion[member] if member is not None else None,
        cpu_architecture=cpu_architecture,
        architecture=architecture,
        errors=errors,
    )


def architecture_name(cpu_architecture: ecs.CpuArchitecture) -> str:
    """``"X86_64"``, ``"ARM64"``, or the name a ``CpuArchitecture.of(name)`` was given."""
    # The name is private in the CDK; its two constants are told apart by their jsii object reference (one
    # round-trip each), any other as the task definition it renders.
    given: Any = cpu_architecture
    for name in ("X86_64", "ARM64"):
        known: Any = getattr(ecs.CpuArchitecture, name)
        if known.__jsii_ref__.ref == given.__jsii_ref__.ref:
            return name
    scratch = Stack()
    platform = ecs.RuntimePlatform(cpu_architecture=cpu_architecture)
    task = ecs.FargateTaskDefinition(scratch, "Task", runtime_platform=platform)
    rendered: Any = scratch.resolve(task.node.default_child.runtime_platform)  # type: ignore[union-attr]
    return str(rendered["cpuArchitecture"])


def _same(a: ec2.IVpc, b: ec2.IVpc) -> bool:
    return bool(a.node.path == b.node.path)


def _private_subnets(vpc: ec2.IVpc, selection: ec2.SubnetSelection | None, errors: list[str]) -> Sequence[str]:
    """The subnets a service with a public IP would run in that are not public, by construct path."""
    # The CDK's own default with assign_public_ip: the public subnets.
    selection = selection or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC)
    try:
        selected = vpc.select_subnets(
            availability_zones=selection.availability_zones,
            one_per_az=selection.one_per_az,
            subnet_filters=selection.subnet_filters,
            subnet_group_name=selection.subnet_group_name,
            subnets=selection.subnets,
            subnet_type=selection.subnet_type,
        ).subnets
    except jsii.errors.JSIIError as error:
        errors.append(f"vpc_subnets={selection!r} selects no subnet of vpc={vpc.node.path}: {error}")
        return []
    public = {subnet.node.path for subnet in vpc.public_subnets}
    return [subnet.node.path for subnet in selected if subnet.node.path not in public]
