"""A ``LambdaJob``'s deployment options: read from its props (types checked where they enter), planned as plain
values that :func:`jobqueues.lambda_rules.check_lambda_options` checks, then applied to the function, its role
and its event source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsii
from aws_cdk import Acknowledgment, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources

from jobqueues.consumer_rules import ConsumerCheck, check_vpc_members
from jobqueues.inputs import PropReader
from jobqueues.lambda_rules import LambdaOptions, check_lambda_options
from jobqueues.lease_layer import LAMBDA_RUNTIME
from jobqueues.vpc_membership import members_outside

#: What Lambda needs to manage a VPC function's network interfaces: the EC2 actions of AWS's
#: ``AWSLambdaVPCAccessExecutionRole``, without its ``logs:*`` on ``*`` (the function writes its own log group).
VPC_ACCESS_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
)
_POLLER_FIELDS = ("minimum_pollers", "maximum_pollers", "poller_group_name")
#: The two ``ProvisionedPollerConfig`` structs of aws-cdk-lib, of one shape: ``SqsEventSource`` takes
#: ``aws_lambda``'s, the Kafka event sources ``aws_lambda_event_sources``'.
POLLER_CONFIG_TYPES = (lambda_.ProvisionedPollerConfig, event_sources.ProvisionedPollerConfig)


@dataclass(frozen=True)
class LambdaDeployment:
    """The options as planned: the plain values the rules checked, and the CDK values the build passes on."""

    options: LambdaOptions
    function_props: Mapping[str, Any]
    event_source_props: Mapping[str, Any]
    tracing: lambda_.Tracing | None


def read_lambda_options(read: PropReader, max_concurrency: int | None) -> tuple[LambdaDeployment, ConsumerCheck]:
    """The options of a ``LambdaJob``'s props and their findings; type errors go to ``read.errors``."""
    architecture = read.instance(
        "architecture", lambda_.Architecture, "lambda_.Architecture.ARM_64 or lambda_.Architecture.X86_64"
    )
    vpc = read.having("vpc", "vpc_id", "an ec2.IVpc, e.g. ec2.Vpc(self, 'Vpc')")
    subnets = read.instance(
        "vpc_subnets", ec2.SubnetSelection, "ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)"
    )
    groups = _sequence(read, "security_groups", "security_group_id", "[ec2.SecurityGroup(self, 'Sg', vpc=vpc)]")
    reserved = read.integer("reserved_concurrent_executions", 10)
    tracing = read.instance("tracing", lambda_.Tracing, "lambda_.Tracing.ACTIVE or lambda_.Tracing.PASS_THROUGH")
    layers = _sequence(read, "layers", "layer_version_arn", "[lambda_.LayerVersion(self, 'Deps', code=...)]")
    filters = _sequence(read, "filters", "get", "[lambda_.FilterCriteria.filter({'body': {...}})]")
    patterns = _patterns(read, filters)
    metrics = read.instance(
        "metrics_config", lambda_.MetricsConfig, "lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT])"
    )
    pollers = read.instance(
        "provisioned_poller_config",
        POLLER_CONFIG_TYPES,
        "lambda_.ProvisionedPollerConfig(minimum_pollers=2, maximum_pollers=20)",
    )
    poller_read = PropReader(
        {k: getattr(pollers, k, None) for k in _POLLER_FIELDS}, _POLLER_FIELDS, "provisioned_poller_config."
    )
    options = LambdaOptions(
        max_concurrency=max_concurrency,
        reserved_concurrent_executions=reserved,
        min_pollers=poller_read.integer("minimum_pollers", 2),
        max_pollers=poller_read.integer("maximum_pollers", 20),
        provisioned=pollers is not None,
        poller_group_name=poller_read.string("poller_group_name"),
        layers=tuple(str(layer.layer_version_arn) for layer in layers),
        filter_patterns=patterns,
        metrics=tuple(getattr(m, "name", str(m)) for m in (metrics.metrics or [])) if metrics is not None else (),
        vpc=vpc is not None,
        vpc_subnets=subnets is not None,
        security_groups=bool(groups),
    )
    read.errors += poller_read.errors
    check = check_lambda_options(options)
    check.errors += _layer_runtimes(layers) + (_subnet_errors(vpc, subnets) if vpc is not None else [])
    if vpc is not None:
        check.errors += check_vpc_members(vpc.node.path, members_outside(vpc, groups, subnets))
    given = {
        "architecture": architecture,
        "vpc": vpc,
        "vpc_subnets": subnets,
        "security_groups": list(groups) or None,
        "reserved_concurrent_executions": reserved,
        "tracing": tracing,
        "layers": list(layers) or None,
    }
    source = {
        "filters": list(filters) or None,
        "metrics_config": metrics,
        "provisioned_poller_config": _as_lambda_pollers(pollers),
    }
    deployment = LambdaDeployment(
        options=options,
        function_props={k: v for k, v in given.items() if v is not None},
        event_source_props={k: v for k, v in source.items() if v is not None},
        tracing=tracing,
    )
    return deployment, check


def grant_vpc_access(role: iam.Role, deployment: LambdaDeployment) -> None:
    """Let Lambda manage a VPC function's network interfaces; Lambda checks it as it creates the function, so the
    statement is in the role's policy before the function is."""
    if deployment.options.vpc:
        role.add_to_principal_policy(iam.PolicyStatement(actions=list(VPC_ACCESS_ACTIONS), resources=["*"]))


def acknowledge_wildcards(role: iam.Role, deployment: LambdaDeployment) -> None:
    """Acknowledge cdk-nag's IAM5 for the ``Resource *`` statements the options put in the role's policy, each
    reason with its statement."""
    reasons = []
    if deployment.options.vpc:
        reasons.append(
            "Lambda manages the function's VPC network interfaces, whose ids exist only at run time, and "
            "ec2:DescribeNetworkInterfaces takes Resource * only (the EC2 actions of AWSLambdaVPCAccessExecutionRole)"
        )
    if deployment.tracing is lambda_.Tracing.ACTIVE:
        reasons.append("X-Ray's PutTraceSegments and PutTelemetryRecords have no resource-level permissions")
    policy = role.node.try_find_child("DefaultPolicy")
    if reasons and policy is not None:
        Validations.of(policy).acknowledge(
            Acknowledgment(id="AwsSolutions::AwsSolutions-IAM5[Resource::*]", reason="; ".join(reasons))
        )


def _sequence(read: PropReader, prop: str, attribute: str, fix: str) -> Sequence[Any]:
    """A list prop whose items each have ``attribute``; empty when absent or wrong (the error names the item)."""
    value = read.props.get(prop)
    if value is None:
        return ()
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        read.errors.append(f"{prop}={value!r} is not a list: pass a list, e.g. {fix}")
        return ()
    wrong = [i for i, item in enumerate(value) if not hasattr(item, attribute)]
    if wrong:
        read.errors.append(f"{prop}[{wrong[0]}]={value[wrong[0]]!r} is not what {prop} takes: pass e.g. {fix}")
        return ()
    return tuple(value)


def _as_lambda_pollers(pollers: Any) -> lambda_.ProvisionedPollerConfig | None:
    """``aws_lambda``'s struct, the one ``SqsEventSource`` type-checks, with the fields of either given."""
    if pollers is None or isinstance(pollers, lambda_.ProvisionedPollerConfig):
        return pollers
    return lambda_.ProvisionedPollerConfig(**{k: getattr(pollers, k) for k in _POLLER_FIELDS})


def _patterns(read: PropReader, filters: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    patterns = []
    for index, item in enumerate(filters):
        pattern = item.get("pattern")
        if not isinstance(pattern, str):
            read.errors.append(
                f"filters[{index}]={dict(item)!r} has no 'pattern' string: build each filter with "
                "lambda_.FilterCriteria.filter({'body': {...}})"
            )
            continue
        patterns.append(pattern)
    return tuple(patterns)


def _layer_runtimes(layers: Sequence[Any]) -> list[str]:
    """A layer of the stack that declares its runtimes must list the function's (the CDK would refuse it)."""
    errors = []
    for index, layer in enumerate(layers):
        runtimes = getattr(layer, "compatible_runtimes", None)
        if runtimes and LAMBDA_RUNTIME.name not in {r.name for r in runtimes}:
            errors.append(
                f"layers[{index}] ({layer.node.path}) is compatible with {', '.join(r.name for r in runtimes)}, not "
                f"{LAMBDA_RUNTIME.name}, the runtime of Lambda jobs: add {LAMBDA_RUNTIME.name} to its "
                "compatible_runtimes"
            )
    return errors


def _subnet_errors(vpc: ec2.IVpc, subnets: ec2.SubnetSelection | None) -> list[str]:
    """The subnets ``vpc_subnets`` selects must exist and be private: Lambda gives a function no public IP."""
    label = "vpc_subnets" if subnets is not None else "the default subnets of vpc"
    try:
        selection = subnets or ec2.SubnetSelection()
        selected = vpc.select_subnets(
            availability_zones=selection.availability_zones,
            one_per_az=selection.one_per_az,
            subnet_filters=selection.subnet_filters,
            subnet_group_name=selection.subnet_group_name,
            subnets=selection.subnets,
            subnet_type=selection.subnet_type,
        )
    except jsii.errors.JSIIError as error:
        return [f"{label}: {error}; select subnets the VPC has, e.g. ec2.SubnetSelection(subnet_type=...)"]
    if selected.has_public:
        return [
            f"{label} selects public subnets: a function there gets no public IP, so it cannot reach SQS; select "
            "private subnets, e.g. vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)"
        ]
    return []
