"""A ``LambdaJob``'s props read into its declaration (:class:`jobqueues.lambda_job_plan.LambdaJobDeclaration`):
types checked where they enter, the deployment options as the plain values the rules check
(:mod:`jobqueues.lambda_rules`), the facts of its CDK objects read here (they need the CDK); and the options'
grants on the function's role.
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
from aws_cdk import aws_logs as logs
from constructs import Construct

from jobqueues import defaults
from jobqueues.consumer_options import read_runtime_values
from jobqueues.consumer_rules import check_vpc_members
from jobqueues.inputs import PropReader
from jobqueues.lambda_job_plan import LambdaJobDeclaration, LambdaJobPlan, lambda_consumer_check
from jobqueues.lambda_rules import LambdaOptions
from jobqueues.lease_layer import LAMBDA_RUNTIME
from jobqueues.planning import raise_errors, read_queue
from jobqueues.props import LambdaJobProps, LeaseOptions, QueueOptions
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


# The props that declare the queue (the function timeout becomes its lambda_timeout).
_QUEUE_PROPS = (set(QueueOptions.__annotations__) | set(LeaseOptions.__annotations__) | {"max_batching_window"}) - {
    "visibility_timeout"
}


def lambda_job_declaration(
    owner: Construct, kind: str, job_type: str, props: Mapping[str, Any], name_prefix: str
) -> LambdaJobDeclaration:
    """A ``LambdaJob``'s props read into its declaration (types checked where they enter, the CDK objects' facts
    read); a queue prop of a wrong type raises ``JobQueueError`` with the consumer's errors, as the queue's own
    planning does.

    :param owner: the construct the user declared (errors name its path).
    :param kind: what the user declared, ``"LambdaJob"``.
    :param name_prefix: the start of the default queue names (the stack's name).
    """
    read = PropReader(props, LambdaJobProps.__annotations__)
    code = read.having("code", "bind", "a lambda_.Code, e.g. Code.from_asset('lambda_src/handlers')")
    handler = read.string("handler")
    batch_size = read.integer("batch_size", defaults.LAMBDA_BATCH_SIZE)
    max_concurrency = read.integer("max_concurrency", 10)
    memory_size = read.integer("memory_size", defaults.LAMBDA_MEMORY_MIB)
    environment = read.instance("environment", dict, "a dict of str to str") or {}
    log_retention = read.member("log_retention", logs.RetentionDays, "logs.RetentionDays.ONE_MONTH")
    runtime = read_runtime_values(read)
    options = _read_options(read, max_concurrency)
    queue_props: dict[str, Any] = {k: v for k, v in props.items() if k in _QUEUE_PROPS}
    if props.get("timeout") is not None:
        queue_props["lambda_timeout"] = props["timeout"]
    queue = read_queue(queue_props, job_type, name_prefix=name_prefix, labels={"lambda_timeout": "timeout"})
    declaration = LambdaJobDeclaration(
        queue=queue.declaration,
        code=code,
        handler=handler,
        batch_size=batch_size,
        memory_size=memory_size,
        environment=environment,
        hooks=runtime.hooks,
        idempotency_key=runtime.idempotency_key,
        log_retention=log_retention,
        options=options.options,
        function_options=options.function_options,
        event_source_options=options.event_source_options,
        tracing_active=options.tracing_active,
        queue_resources=queue.resources,
        alarms_enabled=queue.alarms_enabled,
        tokens={p: props[p] for p in read.tokens},
        errors=tuple(read.errors),
        findings=options.findings,
        refused=frozenset(read.refused | queue.refused),
    )
    if queue.errors:
        # Type errors of the queue first: its rules would only repeat them with less precision.
        raise_errors(kind, owner, queue.errors + lambda_consumer_check(declaration)[0].errors)
    return declaration


@dataclass(frozen=True)
class _Options:
    """A ``LambdaJob``'s deployment options as read: the plain values the rules check, the CDK values the build
    passes on, and what needed the CDK to check."""

    options: LambdaOptions
    function_options: Mapping[str, Any]
    event_source_options: Mapping[str, Any]
    tracing_active: bool
    findings: tuple[str, ...]


def _read_options(read: PropReader, max_concurrency: int | None) -> _Options:
    """The deployment options of a ``LambdaJob``'s props; type errors go to ``read.errors``."""
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
    pollers, poller_read = _read_pollers(read)
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
    findings = _layer_runtimes(layers) + (_subnet_errors(vpc, subnets) if vpc is not None else [])
    if vpc is not None:
        findings += check_vpc_members(vpc.node.path, members_outside(vpc, groups, subnets))
    given = {
        "architecture": architecture,
        "vpc": vpc,
        "vpc_subnets": subnets,
        "security_groups": list(groups) or None,
        "tracing": tracing,
        "layers": list(layers) or None,
    }
    source = {
        "filters": list(filters) or None,
        "metrics_config": metrics,
        "provisioned_poller_config": _as_lambda_pollers(pollers),
    }
    return _Options(
        options=options,
        function_options={k: v for k, v in given.items() if v is not None},
        event_source_options={k: v for k, v in source.items() if v is not None},
        tracing_active=tracing is lambda_.Tracing.ACTIVE,
        findings=tuple(findings),
    )


def _read_pollers(read: PropReader) -> tuple[Any, PropReader]:
    """``provisioned_poller_config`` as given, and a reader of its fields (their errors are the caller's to add)."""
    pollers = read.instance(
        "provisioned_poller_config",
        POLLER_CONFIG_TYPES,
        "lambda_.ProvisionedPollerConfig(minimum_pollers=2, maximum_pollers=20)",
    )
    fields = {k: getattr(pollers, k, None) for k in _POLLER_FIELDS}
    return pollers, PropReader(fields, _POLLER_FIELDS, "provisioned_poller_config.")


def grant_vpc_access(role: iam.Role, plan: LambdaJobPlan) -> None:
    """Let Lambda manage a VPC function's network interfaces; Lambda checks it as it creates the function, so the
    statement is in the role's policy before the function is."""
    if plan.vpc_access:
        role.add_to_principal_policy(iam.PolicyStatement(actions=list(VPC_ACCESS_ACTIONS), resources=["*"]))


def acknowledge_wildcards(role: iam.Role, plan: LambdaJobPlan) -> None:
    """Acknowledge cdk-nag's IAM5 for the ``Resource *`` statements the options put in the role's policy, each
    reason with its statement."""
    reasons = []
    if plan.vpc_access:
        reasons.append(
            "Lambda manages the function's VPC network interfaces, whose ids exist only at run time, and "
            "ec2:DescribeNetworkInterfaces takes Resource * only (the EC2 actions of AWSLambdaVPCAccessExecutionRole)"
        )
    if plan.tracing_active:
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
