"""Plan, then build, for an ``EcsJob``'s service: its deployment options checked and settled before anything is
built.

:func:`plan_ecs_service` runs the rules of :mod:`jobqueues.ecs_rules` on an :class:`EcsServiceDeclaration` (plain
values, and the CDK objects as given) and returns an :class:`EcsServicePlan`: every value the task definition and
the service get, and every error. Pure Python (no aws_cdk): the construct reads the props into the declaration
(:mod:`jobqueues.ecs_options`), and :func:`jobqueues.ecs_job_plan.plan_ecs_job` plans the service with the job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jobqueues.consumer_rules import OutsideMember, check_vpc_members
from jobqueues.ecs_rules import (
    ProviderShare,
    check_capacity_providers,
    check_cpu_architecture,
    check_environment,
    check_network,
    check_platform_version,
)

if TYPE_CHECKING:
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_ecs as ecs


@dataclass(frozen=True)
class NetworkFacts:
    """What the network rules need of the VPC, the subnets and the cluster given, by construct path (reading them
    needs the CDK: the construct does).

    :param vpc: the VPC given; ``None``: not given.
    :param cluster: the cluster given; ``None``: the default one.
    :param cluster_vpc: that cluster's VPC, when it is not ``vpc``; ``None``: it is, or there is no ``vpc``.
    :param vpc_subnets: the subnet selection as given (its ``repr``); ``None``: not given.
    :param private_subnets: the subnets a service with a public IP would run in that are not public.
    :param selection_error: why the selection picks no subnet of the VPC; ``None``: it does.
    :param network_vpc: the VPC the tasks run in (``vpc``, else the cluster's); ``None``: the default cluster's.
    :param outside: the security groups and subnets given that are in another VPC than ``network_vpc``.
    """

    vpc: str | None = None
    cluster: str | None = None
    cluster_vpc: str | None = None
    vpc_subnets: str | None = None
    private_subnets: tuple[str, ...] = ()
    selection_error: str | None = None
    network_vpc: str | None = None
    outside: tuple[OutsideMember, ...] = ()


@dataclass(frozen=True)
class EcsServiceDeclaration:
    """An ``EcsJob``'s deployment options as declared: plain values, the CDK objects as given.

    :param environment: the worker container's own variables.
    :param secrets: the worker container's secrets (``ecs.Secret``), by variable name.
    :param capacity_provider_strategies: the strategy as given (``ecs.CapacityProviderStrategy`` items); ``None``:
        the FARGATE launch type.
    :param shares: the strategy's items as the rules read them.
    :param platform_version: the ``ecs.FargatePlatformVersion`` member's name; ``None``: not pinned.
    :param cpu_architecture: the ``ecs.CpuArchitecture`` given; ``None``: Fargate's default.
    :param architecture: its name, ``"X86_64"`` or ``"ARM64"`` (or another, which the rules refuse).
    :param vpc: the VPC given. :param vpc_subnets: the subnet selection given.
    :param security_groups: the security groups given.
    :param network: what the network rules need of those, by construct path.
    :param assign_public_ip: tasks get a public IP.
    :param enable_execute_command: ECS Exec into the worker container.
    :param propagate_tags: the ``ecs.PropagatedTagSource`` given; ``None``: no tags propagated.
    """

    environment: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, Any] = field(default_factory=dict)
    capacity_provider_strategies: Sequence[Any] | None = None
    shares: tuple[ProviderShare, ...] = ()
    platform_version: str | None = None
    cpu_architecture: Any = None
    architecture: str = "X86_64"
    vpc: Any = None
    vpc_subnets: Any = None
    security_groups: Sequence[Any] | None = None
    network: NetworkFacts = field(default_factory=NetworkFacts)
    assign_public_ip: bool = False
    enable_execute_command: bool = False
    propagate_tags: Any = None


@dataclass(frozen=True)
class EcsServicePlan:
    """Every deployment option of an ``EcsJob``'s task definition and service, final.

    :param environment: the worker container's own variables (besides the contract, which is its command).
    :param secrets: the worker container's secrets; the execution role may read exactly these.
    :param capacity_provider_strategies: the service's strategy; ``None``: the FARGATE launch type.
    :param platform_version: the ``ecs.FargatePlatformVersion`` member's name the service pins; ``None``: LATEST.
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

    environment: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, ecs.Secret] = field(default_factory=dict)
    capacity_provider_strategies: Sequence[ecs.CapacityProviderStrategy] | None = None
    platform_version: str | None = None
    cpu_architecture: ecs.CpuArchitecture | None = None
    architecture: str = "X86_64"
    vpc: ec2.IVpc | None = None
    vpc_subnets: ec2.SubnetSelection | None = None
    security_groups: Sequence[ec2.ISecurityGroup] | None = None
    assign_public_ip: bool = False
    enable_execute_command: bool = False
    propagate_tags: ecs.PropagatedTagSource | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def fargate_spot(self) -> bool:
        """Some tasks may run on Fargate Spot."""
        return any(s.capacity_provider == "FARGATE_SPOT" for s in self.capacity_provider_strategies or [])


def plan_ecs_service(d: EcsServiceDeclaration) -> EcsServicePlan:
    """The plan of an ``EcsJob``'s deployment options: where its tasks run (capacity providers, platform version,
    CPU architecture), their variables and their network, each checked."""
    errors = check_cpu_architecture(d.architecture)
    if d.capacity_provider_strategies is not None:
        errors += check_capacity_providers(d.shares)
    errors += check_platform_version(d.platform_version, d.architecture, d.shares)
    errors += check_environment(list(d.environment), list(d.secrets))
    network = d.network
    if network.selection_error is not None:
        errors.append(network.selection_error)
    errors += check_network(
        vpc_subnets=network.vpc_subnets,
        vpc=network.vpc,
        cluster=network.cluster,
        cluster_vpc=network.cluster_vpc,
        assign_public_ip=d.assign_public_ip,
        private_subnets=network.private_subnets,
    )
    if network.network_vpc is not None:
        errors += check_vpc_members(network.network_vpc, network.outside)
    return EcsServicePlan(
        environment=d.environment,
        secrets=d.secrets,
        capacity_provider_strategies=d.capacity_provider_strategies,
        platform_version=d.platform_version,
        cpu_architecture=d.cpu_architecture,
        architecture=d.architecture,
        vpc=d.vpc,
        vpc_subnets=d.vpc_subnets,
        security_groups=d.security_groups,
        assign_public_ip=d.assign_public_ip,
        enable_execute_command=d.enable_execute_command,
        propagate_tags=d.propagate_tags,
        errors=errors,
    )
