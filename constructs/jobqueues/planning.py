"""From a construct's props to its plan: read, plan, claim the names, refuse with every error.

Props are read where they enter (:class:`jobqueues.inputs.PropReader`: types, units, tokens) into a pure
declaration; a pure function plans it (:func:`jobqueues.plan.plan_job_queue`, and for consumers
:func:`jobqueues.lambda_job_plan.plan_lambda_job`, :func:`jobqueues.ecs_job_plan.plan_ecs_job`); the plan's job
type and queue names are claimed at their deployment target (:func:`claim_names`) before anything is built. One
``JobQueueError`` lists every problem, worded with the construct and the props the user wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from jobqueues import defaults
from jobqueues.alarms import JobQueueAlarmProps
from jobqueues.declaration import QueueDeclaration
from jobqueues.errors import JobQueueError, declaration_error
from jobqueues.idempotency_table import read_idempotency
from jobqueues.inputs import PropReader, is_token
from jobqueues.payload_bucket import read_delete_payloads, read_payload_bucket
from jobqueues.plan import QueuePlan, plan_job_queue
from jobqueues.props import JobQueueProps
from jobqueues.registry import StackRegistry

_ALARM_FIELDS = ("in_flight_quota", "in_flight_fraction", "oldest_message_age", "dlq_depth", "topic", "enabled")
_LAMBDA_WHOLE_SECONDS = "a Lambda function timeout"
_WINDOW_WHOLE_SECONDS = "the event source's MaximumBatchingWindowInSeconds"
_DELAY_WHOLE_SECONDS = "SQS's DelaySeconds"


@dataclass(frozen=True)
class QueueReading:
    """A job queue's props, read.

    :param declaration: the queue's declaration, durations in seconds.
    :param resources: the construct props the plan carries as given: ``encryption_key``, ``alarm_topic``,
        ``idempotency``, ``payload_bucket``.
    :param alarms_enabled: ``alarms.enabled``.
    :param errors: the props of a wrong type or unit, each with its fix (the rules are not run on them).
    :param refused: the names of the props those errors are about (not reported missing as well).
    """

    declaration: QueueDeclaration
    resources: Mapping[str, Any]
    alarms_enabled: bool
    errors: list[str]
    refused: frozenset[str]


def read_queue(
    props: Mapping[str, Any],
    job_type: str,
    *,
    name_prefix: str,
    labels: Mapping[str, str] | None = None,
    ecs_consumer: bool = False,
) -> QueueReading:
    """Read the queue props of a declaration (:class:`jobqueues.props.JobQueueProps`).

    :param name_prefix: the start of the default queue names (the stack's name).
    :param labels: how the props are spelled where the user wrote them (a ``LambdaJob``'s ``timeout`` is the
        queue's ``lambda_timeout``). Default: these names.
    :param ecs_consumer: an ``EcsJob`` declares the queue (hints leave Lambda props out). Default: False.
    """
    labels = labels or {}
    read = PropReader(props, JobQueueProps.__annotations__, labels=labels)
    alarm_props = read.instance("alarms", JobQueueAlarmProps, "JobQueueAlarmProps(...)") or JobQueueAlarmProps()
    idempotency = read_idempotency(read)
    payload_bucket = read_payload_bucket(read)
    alarm_read = PropReader({k: getattr(alarm_props, k) for k in _ALARM_FIELDS}, _ALARM_FIELDS, "alarms.")
    declaration = QueueDeclaration(
        job_type=job_type,
        **_queue_values(read),
        name_prefix=name_prefix,
        **_alarm_values(alarm_read),
        max_queue_time=read.duration_s("max_queue_time"),
        max_time_to_drain=read.duration_s("max_time_to_drain"),
        ecs_consumer=ecs_consumer,
        idempotency=idempotency is not False,
        payload_bucket=payload_bucket is not None,
        delete_payloads=read_delete_payloads(read),
        tokens={
            **{p: props[p] for p in read.tokens},
            **{p: getattr(alarm_props, p) for p in alarm_read.tokens},
        },
        prop_names={
            **{k: f"alarms.{k}" for k in ("in_flight_quota", "in_flight_fraction", "oldest_message_age")},
            "dlq_depth": "alarms.dlq_depth",
            **labels,
        },
    )
    resources = {
        "encryption_key": read.having("encryption_key", "key_arn", "a kms.IKey, e.g. kms.Key(self, 'Key')"),
        "alarm_topic": alarm_read.having("topic", "topic_arn", "an sns.ITopic, e.g. sns.Topic(self, 'Alarms')"),
        "idempotency": idempotency,
        "payload_bucket": payload_bucket,
    }
    alarms_enabled = alarm_read.boolean("enabled", True)
    return QueueReading(
        declaration=declaration,
        resources=resources,
        alarms_enabled=alarms_enabled,
        errors=read.errors + alarm_read.errors,
        refused=frozenset(read.refused | {f"alarms.{p}" for p in alarm_read.refused}),
    )


def _queue_values(read: PropReader) -> dict[str, Any]:
    """The queue's own props, each read as the declaration takes it (seconds, bytes, enum member names)."""
    return {
        "processing_p99": read.duration_s("processing_p99"),
        "lambda_timeout": read.whole_seconds("lambda_timeout", _LAMBDA_WHOLE_SECONDS),
        "max_batching_window": read.whole_seconds("max_batching_window", _WINDOW_WHOLE_SECONDS),
        "visibility_timeout": read.duration_s("visibility_timeout"),
        "max_processing_time": read.duration_s("max_processing_time"),
        "lease_extension": read.boolean("lease_extension", False),
        "retention_period": read.duration_s("retention_period"),
        "dlq_retention_period": read.duration_s("dlq_retention_period"),
        "max_receive_count": read.integer("max_receive_count", 3),
        "fifo": read.boolean("fifo", False),
        "fair": read.boolean("fair", False),
        "content_based_deduplication": read.boolean("content_based_deduplication", False),
        "queue_name": read.string("queue_name"),
        "delivery_delay": read.whole_seconds("delivery_delay", _DELAY_WHOLE_SECONDS),
        "max_message_size": read.size_bytes("max_message_size"),
        "deduplication_scope": read.member(
            "deduplication_scope", sqs.DeduplicationScope, "sqs.DeduplicationScope.MESSAGE_GROUP"
        ),
        "fifo_throughput_limit": read.member(
            "fifo_throughput_limit", sqs.FifoThroughputLimit, "sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID"
        ),
        "removal_policy": read.member("removal_policy", RemovalPolicy, "RemovalPolicy.RETAIN"),
        "dlq_removal_policy": read.member("dlq_removal_policy", RemovalPolicy, "RemovalPolicy.RETAIN"),
    }


def _alarm_values(alarm_read: PropReader) -> dict[str, Any]:
    """The alarm thresholds of ``alarms``, read."""
    return {
        "in_flight_quota": alarm_read.integer("in_flight_quota", defaults.IN_FLIGHT_QUOTA),
        "in_flight_fraction": alarm_read.number("in_flight_fraction", 0.8),
        "oldest_message_age": alarm_read.duration_s("oldest_message_age"),
        "dlq_depth": alarm_read.integer("dlq_depth", 1),
    }


def plan_from_props(
    owner: Construct, kind: str, job_type: str, props: Mapping[str, Any], registry: StackRegistry
) -> QueuePlan:
    """The plan of a job queue declared with ``props`` in ``registry``'s stack; a prop of a wrong type raises
    ``JobQueueError`` naming ``kind`` and ``owner``'s path (the rules' errors are in the plan).

    :param owner: the construct the user declared (errors name its path).
    :param kind: what the user declared, e.g. ``"JobQueue"``.
    """
    reading = read_queue(props, job_type, name_prefix=registry.facts.name)
    if reading.errors:
        # Type errors first: a rule would only repeat them with less precision.
        raise_errors(kind, owner, reading.errors)
    return plan_job_queue(reading.declaration, alarms_enabled=reading.alarms_enabled, resources=reading.resources)


def claim_names(kind: str, owner: Construct, registry: StackRegistry, plan: QueuePlan) -> None:
    """Raise every error of ``plan`` with any clash of its job type or queue names at their deployment target;
    else record the names as ``owner``'s."""
    names = [
        (role, name)
        for role, name in (("queue", plan.queue_name), ("dead-letter queue", plan.dead_letter_queue_name))
        if name is not None and not is_token(name)
    ]
    errors = plan.errors + registry.names.conflicts(registry.facts, owner, plan.job_type, names)
    if errors:
        raise_errors(kind, owner, errors)
    registry.names.register(registry.facts, owner, plan.job_type, names)


def raise_errors(kind: str, owner: Construct, errors: list[str]) -> None:
    """One ``JobQueueError`` listing ``errors`` under the declaration they belong to."""
    raise JobQueueError(declaration_error(kind, owner.node.path, errors))
