"""Rules for a ``LambdaJob``'s deployment options, in plain values (no aws_cdk), beside
:mod:`jobqueues.consumer_rules`. Each error names the prop, the value and the fix; the limits are Lambda's for an
SQS event source (the AWS Lambda API reference and developer guide).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from jobqueues.consumer_rules import MAX_CONCURRENCY_RANGE, ConsumerCheck
from jobqueues.declaration_warnings import (
    FILTERS_ABOVE_DEFAULT_QUOTA,
    POLLERS_NOT_BOUND_BY_RESERVED_CONCURRENCY,
    DeclarationWarning,
)

#: Layers a function may have, the ``sqslease`` layer included.
LAMBDA_MAX_LAYERS = 5
#: The most concurrent invocations one SQS event source makes without ``max_concurrency`` (standard mode).
SQS_EVENT_SOURCE_MAX_INVOCATIONS = 1250
#: ``ProvisionedPollerConfig`` for an SQS event source: at least 2 pollers, at most 200 when idle, 2,000 at most.
#: The Lambda API reference (ProvisionedPollerConfig) now takes 2-10,000 MaximumPollers for SQS, and so does
#: CloudFormation's schema, but aws-cdk-lib's SqsEventSource refuses more than 2,000: 2,000 is what deploys.
MIN_POLLERS_RANGE = (2, 200)
MAX_POLLERS_RANGE = (2, 2000)
#: Filters per event source: 5 by default, 10 with a quota increase.
FILTERS_DEFAULT_QUOTA = 5
FILTERS_MAX = 10
#: Characters in one filter pattern.
FILTER_PATTERN_MAX_CHARS = 4096
#: The event source mapping metrics an SQS event source produces (``ErrorCount`` and ``KafkaMetrics`` are Kafka's).
SQS_EVENT_SOURCE_METRICS = ("EVENT_COUNT",)


@dataclass(frozen=True)
class LambdaOptions:
    """A ``LambdaJob``'s deployment options as plain values: what the rules check. ``None``: not given.

    :param max_concurrency: the event source's cap on concurrent invocations.
    :param reserved_concurrent_executions: the function's reserved concurrency.
    :param min_pollers: ``provisioned_poller_config.minimum_pollers``.
    :param max_pollers: ``provisioned_poller_config.maximum_pollers``.
    :param provisioned: ``provisioned_poller_config`` is given.
    :param poller_group_name: ``provisioned_poller_config.poller_group_name``.
    :param layers: the function's own layers, each by its ARN (one layer given twice: one token string).
    :param filter_patterns: each filter's ``pattern``, a JSON string.
    :param metrics: the ``MetricType`` names of ``metrics_config``.
    :param vpc: a VPC is given.
    :param vpc_subnets: subnets are selected.
    :param security_groups: security groups are given.
    """

    max_concurrency: int | None = None
    reserved_concurrent_executions: int | None = None
    min_pollers: int | None = None
    max_pollers: int | None = None
    provisioned: bool = False
    poller_group_name: str | None = None
    layers: tuple[str, ...] = ()
    filter_patterns: tuple[str, ...] = ()
    metrics: tuple[str, ...] = field(default=())
    vpc: bool = False
    vpc_subnets: bool = False
    security_groups: bool = False


def check_lambda_options(options: LambdaOptions) -> ConsumerCheck:
    """Every rule of a ``LambdaJob``'s deployment options."""
    check = ConsumerCheck()
    check.errors += check_vpc(options)
    check.errors += check_layers(options.layers)
    check.errors += check_provisioned_pollers(options)
    concurrency = check_reserved_concurrency(options)
    filters = check_filters(options.filter_patterns)
    check.errors += concurrency.errors + filters.errors + check_metrics(options.metrics)
    check.warnings += concurrency.warnings + filters.warnings
    return check


def check_vpc(options: LambdaOptions) -> list[str]:
    """Subnets and security groups belong to a VPC: without ``vpc`` they would do nothing."""
    return [
        f"{prop} is given without vpc: pass vpc=ec2.Vpc(...) (or ec2.Vpc.from_lookup(...)) too, or remove {prop}"
        for prop, given in (("vpc_subnets", options.vpc_subnets), ("security_groups", options.security_groups))
        if given and not options.vpc
    ]


def check_layers(layers: Sequence[str]) -> list[str]:
    """The function's own layers (by ARN): each once (its ``Layers`` are unique), :data:`LAMBDA_MAX_LAYERS` in all
    with ``sqslease``'s. None is valid: the ``sqslease`` layer alone, the default."""
    most = LAMBDA_MAX_LAYERS - 1
    errors = [
        f"layers[{i}] repeats layers[{layers.index(arn)}]: Lambda takes each layer once (a function's Layers are "
        "unique); remove the repeat"
        for i, arn in enumerate(layers)
        if layers.index(arn) != i
    ]
    if len(layers) > most:
        errors.append(
            f"layers has {len(layers)} layers: a function takes at most {LAMBDA_MAX_LAYERS}, and the sqslease layer "
            f"is one of them; pass at most {most}, e.g. by merging layers into one"
        )
    return errors


def check_provisioned_pollers(options: LambdaOptions) -> list[str]:
    """Provisioned mode: the pollers' ranges, their order, and its exclusion of ``max_concurrency``."""
    if not options.provisioned:
        return []
    errors = []
    minimum, maximum = options.min_pollers, options.max_pollers
    for name, value, (low, high) in (
        ("minimum_pollers", minimum, MIN_POLLERS_RANGE),
        ("maximum_pollers", maximum, MAX_POLLERS_RANGE),
    ):
        if value is not None and not low <= value <= high:
            errors.append(
                f"provisioned_poller_config.{name} must be between {low} and {high:,} for an SQS event source "
                f"(got {value})"
            )
    if minimum is not None and maximum is not None and minimum > maximum:
        errors.append(
            f"provisioned_poller_config.minimum_pollers {minimum} is above maximum_pollers {maximum}: lower "
            "minimum_pollers or raise maximum_pollers"
        )
    if options.poller_group_name is not None:
        errors.append(
            f"provisioned_poller_config.poller_group_name={options.poller_group_name!r}: poller groups are for Kafka "
            "event sources only; remove it"
        )
    if options.max_concurrency is not None:
        errors.append(
            f"max_concurrency {options.max_concurrency} and provisioned_poller_config cannot both be set (Lambda "
            "refuses ScalingConfig with ProvisionedPollerConfig): remove max_concurrency, and bound the pollers "
            "with maximum_pollers"
        )
    return errors


def check_reserved_concurrency(options: LambdaOptions) -> ConsumerCheck:
    """Reserved concurrency against what the event source invokes: above it, invocations are throttled."""
    check = ConsumerCheck()
    reserved = options.reserved_concurrent_executions
    if reserved is None:
        return check
    low, high = MAX_CONCURRENCY_RANGE
    if reserved < low:
        check.errors.append(
            f"reserved_concurrent_executions {reserved} is below {low}, the least max_concurrency an SQS event "
            f"source takes: {'the function would never run' if reserved == 0 else 'its invocations would throttle'}; "
            f"raise it to at least {low}, or leave it out"
        )
    elif options.max_concurrency is not None and options.max_concurrency > reserved:
        check.errors.append(
            f"max_concurrency {options.max_concurrency} is above reserved_concurrent_executions {reserved}: the "
            "invocations above it are throttled; lower max_concurrency to at most "
            f"{reserved}, or raise reserved_concurrent_executions to at least {options.max_concurrency}"
        )
    elif options.max_concurrency is None and options.provisioned:
        check.warnings.append(
            DeclarationWarning(
                POLLERS_NOT_BOUND_BY_RESERVED_CONCURRENCY,
                f"reserved_concurrent_executions {reserved} with provisioned_poller_config: the pollers can invoke "
                "more at once than the reserved concurrency, and throttled batches return to the queue after the "
                "visibility timeout; size maximum_pollers for it",
            )
        )
    elif options.max_concurrency is None and reserved < SQS_EVENT_SOURCE_MAX_INVOCATIONS:
        check.errors.append(
            f"reserved_concurrent_executions {reserved} without max_concurrency: the event source invokes up to "
            f"{SQS_EVENT_SOURCE_MAX_INVOCATIONS:,} at once and the invocations above {reserved} are throttled; set "
            f"max_concurrency={min(reserved, high)}"
        )
    return check


def check_filters(patterns: tuple[str, ...]) -> ConsumerCheck:
    """Filter patterns Lambda takes for an SQS event source: JSON objects on the ``body`` key only, not too long,
    not too many."""
    check = ConsumerCheck()
    if len(patterns) > FILTERS_MAX:
        check.errors.append(
            f"filters has {len(patterns)} filters: an event source takes at most {FILTERS_MAX} (with a quota "
            f"increase; {FILTERS_DEFAULT_QUOTA} by default); merge filters, e.g. several values in one list"
        )
    elif len(patterns) > FILTERS_DEFAULT_QUOTA:
        check.warnings.append(
            DeclarationWarning(
                FILTERS_ABOVE_DEFAULT_QUOTA,
                f"filters has {len(patterns)} filters: Lambda takes more than {FILTERS_DEFAULT_QUOTA} per event source "
                f"only after a quota increase (up to {FILTERS_MAX}); without one the deploy fails",
            )
        )
    for index, pattern in enumerate(patterns):
        label = f"filters[{index}]"
        if len(pattern) > FILTER_PATTERN_MAX_CHARS:
            check.errors.append(
                f"{label} pattern has {len(pattern):,} characters; Lambda takes at most {FILTER_PATTERN_MAX_CHARS:,}: "
                "shorten it or split it into several filters"
            )
            continue
        try:
            parsed = json.loads(pattern)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            check.errors.append(
                f"{label} pattern {pattern[:80]!r} is not a JSON object: build it with lambda_.FilterCriteria.filter("
                "{'body': {...}})"
            )
            continue
        other = sorted(set(parsed) - {"body"})
        empty = _empty_part(parsed)
        if empty is not None:
            check.errors.append(
                f'{label} pattern {pattern[:80]!r} has an empty {empty} (Lambda refuses it: "Invalid filter pattern '
                'definition"), which would match nothing: give each field a rule, e.g. '
                "FilterCriteria.filter({'body': {'kind': FilterRule.is_equal('thumb')}}), or remove the filter to "
                "take every record"
            )
        elif other:
            check.errors.append(
                f"{label} filters on {', '.join(other)}: an SQS event source filters on the body key only; put the "
                "fields under 'body', e.g. FilterCriteria.filter({'body': {'kind': FilterRule.is_equal('thumb')}})"
            )
    return check


def _empty_part(pattern: object, path: str = "") -> str | None:
    """Where ``pattern`` has an empty object or match list (``{}``, ``[]``), e.g. ``"body" object``."""
    if isinstance(pattern, dict | list) and not pattern:
        return f"{path or 'pattern'} {'object' if isinstance(pattern, dict) else 'list'}"
    if isinstance(pattern, dict):
        for key, value in pattern.items():
            found = _empty_part(value, f"{path}.{key}" if path else repr(key))
            if found is not None:
                return found
    return None


def check_metrics(metrics: tuple[str, ...]) -> list[str]:
    """``EventCount`` only (an SQS event source's one metric), named once (``Metrics`` are unique); none is valid."""
    errors = [
        f"metrics_config has MetricType.{name}, which only Kafka event sources produce: pass "
        "lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT])"
        for name in metrics
        if name not in SQS_EVENT_SOURCE_METRICS
    ]
    errors += [
        f"metrics_config names MetricType.{name} {metrics.count(name)} times: Lambda takes each metric once; pass "
        f"lambda_.MetricsConfig(metrics=[lambda_.MetricType.{name}])"
        for name in sorted({m for m in metrics if metrics.count(m) > 1})
    ]
    return errors


def layer_runtime_error(runtime: str, served: Sequence[str], fix: str) -> str | None:
    """A function on ``runtime`` (its name, e.g. ``python3.12``) given the ``sqslease`` layer, which serves only
    ``served``: the error naming both and the fixes (``fix``: the runtime to give, as code), or ``None``. The CDK
    would refuse the layer with an error naming neither fix."""
    if runtime in served:
        return None
    return (
        f"the function's runtime {runtime} is not one the sqslease layer serves ({', '.join(served)}): give the "
        f"function {fix}, or pass add_layer=False and ship sqslease in its code"
    )
