"""An ``EcsJob``'s props read into its declaration (:class:`jobqueues.ecs_job_plan.EcsJobDeclaration`): types checked
where they enter (:class:`jobqueues.inputs.PropReader`), the deployment options as the plain values the rules of
:mod:`jobqueues.ecs_rules` check, the facts of its CDK objects (a VPC's subnets, a cluster's VPC, the CPU
architecture's name) read here, as they need the CDK.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsii
from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_logs as logs
from constructs import Construct

from jobqueues import defaults
from jobqueues.consumer_options import read_runtime_values
from jobqueues.ecs_job_plan import EcsJobDeclaration, ecs_consumer_check
from jobqueues.ecs_rules import ProviderShare
from jobqueues.ecs_service_plan import EcsServiceDeclaration, NetworkFacts
from jobqueues.inputs import PropReader
from jobqueues.planning import raise_errors, read_queue
from jobqueues.props import EcsJobProps, LeaseOptions, QueueOptions
from jobqueues.registry import StackRegistry
from jobqueues.vpc_membership import members_outside

_QUEUE_PROPS = set(QueueOptions.__annotations__) | set(LeaseOptions.__annotations__)


def ecs_job_declaration(
    owner: Construct, kind: str, job_type: str, props: Mapping[str, Any], registry: StackRegistry
) -> EcsJobDeclaration:
    """An ``EcsJob``'s props read into its declaration; a queue prop of a wrong type raises ``JobQueueError`` with
    the consumer's type errors, as the queue's own planning does.

    :param owner: the construct the user declared (errors name its path).
    :param kind: what the user declared, ``"EcsJob"``.
    :param registry: the registry of its stack (the default queue names, the context's registry image).
    """
    read = PropReader(props, EcsJobProps.__annotations__)
    handler = read.string("handler")
    concurrency = read.integer("concurrency", defaults.ECS_CONCURRENCY)
    counts = {
        "min_tasks": read.integer("min_tasks", defaults.ECS_MIN_TASKS),
        "max_tasks": read.integer("max_tasks", defaults.ECS_MAX_TASKS),
        "target_backlog_per_task": read.integer("target_backlog_per_task", concurrency or defaults.ECS_CONCURRENCY),
        "cpu": read.integer("cpu", defaults.ECS_CPU),
        "memory_limit_mib": read.integer("memory_limit_mib", defaults.ECS_MEMORY_MIB),
    }
    shutdown_grace = read.duration_s("shutdown_grace")
    cluster = read.having("cluster", "cluster_name", "an ecs.ICluster, e.g. ecs.Cluster(self, 'Cluster')")
    image = read.instance("image", ecs.ContainerImage, "an ecs.ContainerImage")
    image_directory = read.string("image_directory")
    log_retention = read.member("log_retention", logs.RetentionDays, "logs.RetentionDays.ONE_MONTH")
    service = read_ecs_service(read, cluster)
    runtime = read_runtime_values(read)
    queue_props: dict[str, Any] = {k: v for k, v in props.items() if k in _QUEUE_PROPS}
    queue_props.setdefault("lease_extension", defaults.ECS_LEASE_EXTENSION)  # the worker heartbeats by default
    queue = read_queue(queue_props, job_type, name_prefix=registry.facts.name, ecs_consumer=True)
    declaration = EcsJobDeclaration(
        queue=queue.declaration,
        handler=handler,
        image=image,
        image_directory=image_directory,
        registry_image=registry.context(defaults.IMAGE_CONTEXT),
        concurrency=concurrency,
        **counts,
        shutdown_grace=shutdown_grace,
        log_retention=log_retention,
        cluster=cluster,
        service=service,
        hooks=runtime.hooks,
        idempotency_key=runtime.idempotency_key,
        queue_resources=queue.resources,
        alarms_enabled=queue.alarms_enabled,
        tokens={p: props[p] for p in read.tokens},
        errors=tuple(read.errors),
        refused=frozenset(read.refused | queue.refused),
    )
    if queue.errors:
        # Type errors of the queue first: its rules would only repeat them with less precision.
        raise_errors(kind, owner, queue.errors + ecs_consumer_check(declaration)[0].errors)
    return declaration


def read_ecs_service(read: PropReader, cluster: ecs.ICluster | None) -> EcsServiceDeclaration:
    """An ``EcsJob``'s deployment options as declared; type errors go to ``read.errors``.

    :param read: the job's props reader.
    :param cluster: the cluster given (already read); ``None``: the default one.
    """
    environment = read.mapping("environment", str, "a dict of str to str, e.g. {'LOG_FORMAT': 'json'}")
    secrets = read.mapping(
        "secrets", ecs.Secret, "a dict of str to ecs.Secret, e.g. {'DB_PASSWORD': ecs.Secret.from_secrets_manager(s)}"
    )
    strategies = read.sequence(
        "capacity_provider_strategies",
        ecs.CapacityProviderStrategy,
        "",
        "a list of ecs.CapacityProviderStrategy, e.g. [ecs.CapacityProviderStrategy(capacity_provider='FARGATE_SPOT', "
        "weight=1)]",
    )
    cpu_architecture = read.instance("cpu_architecture", ecs.CpuArchitecture, "ecs.CpuArchitecture.ARM64")
    platform_version = read.member(
        "platform_version", ecs.FargatePlatformVersion, "ecs.FargatePlatformVersion.VERSION1_4"
    )
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
    return EcsServiceDeclaration(
        environment=environment or {},
        secrets=secrets or {},
        capacity_provider_strategies=strategies,
        shares=tuple(ProviderShare(s.capacity_provider, s.weight, s.base) for s in strategies or []),
        platform_version=platform_version,
        cpu_architecture=cpu_architecture,
        architecture=defaults.ECS_CPU_ARCHITECTURE if cpu_architecture is None else architecture_name(cpu_architecture),
        vpc=vpc,
        vpc_subnets=vpc_subnets,
        security_groups=security_groups,
        network=_network(vpc, vpc_subnets, security_groups or [], cluster, assign_public_ip),
        assign_public_ip=assign_public_ip,
        enable_execute_command=read.boolean("enable_execute_command", False),
        propagate_tags=propagate_tags,
    )


def _network(
    vpc: ec2.IVpc | None,
    selection: ec2.SubnetSelection | None,
    groups: Sequence[Any],
    cluster: ecs.ICluster | None,
    assign_public_ip: bool,
) -> NetworkFacts:
    """What the network rules need of the VPC, the subnets, the groups and the cluster given."""
    cluster_vpc = cluster.vpc if cluster is not None else None
    network_vpc = vpc or cluster_vpc
    private: Sequence[str] = []
    selection_error = None
    if assign_public_ip and network_vpc is not None:
        private, selection_error = _private_subnets(network_vpc, selection)
    return NetworkFacts(
        vpc=vpc.node.path if vpc is not None else None,
        cluster=cluster.node.path if cluster is not None else None,
        cluster_vpc=(
            cluster_vpc.node.path
            if cluster_vpc is not None and vpc is not None and not _same(vpc, cluster_vpc)
            else None
        ),
        vpc_subnets=repr(selection) if selection is not None else None,
        private_subnets=tuple(private),
        selection_error=selection_error,
        network_vpc=network_vpc.node.path if network_vpc is not None else None,
        outside=tuple(members_outside(network_vpc, groups, selection)) if network_vpc is not None else (),
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


def _private_subnets(vpc: ec2.IVpc, selection: ec2.SubnetSelection | None) -> tuple[Sequence[str], str | None]:
    """The subnets a service with a public IP would run in that are not public, by construct path; or why the
    selection picks none."""
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
        return [], f"vpc_subnets={selection!r} selects no subnet of vpc={vpc.node.path}: {error}"
    public = {subnet.node.path for subnet in vpc.public_subnets}
    return [subnet.node.path for subnet in selected if subnet.node.path not in public], None
