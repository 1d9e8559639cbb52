"""From a construct's props to its :class:`jobqueues.plan.QueuePlan`: read, plan, refuse with every error.

The one place props become a plan, for :class:`jobqueues.JobQueue` and the consumer constructs alike: types are
checked where they enter (:class:`jobqueues.inputs.PropReader`), the declaration is planned by the pure
:func:`jobqueues.plan.plan_job_queue`, names are checked against the deployment target, and one
``JobQueueError`` lists every problem, worded with the construct and the props the user wrote.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from jobqueues import defaults
from jobqueues.alarms import JobQueueAlarmProps
from jobqueues.consumer_rules import ConsumerCheck
from jobqueues.declaration import QueueDeclaration
from jobqueues.errors import JobQueueError
from jobqueues.idempotency_table import read_idempotency
from jobqueues.inputs import PropReader, is_token
from jobqueues.names import StackFacts, name_conflicts, register_names, stack_facts, stack_of
from jobqueues.plan import QueuePlan, plan_job_queue
from jobqueues.props import JobQueueProps

_ALARM_FIELDS = ("in_flight_quota", "in_flight_fraction", "oldest_message_age", "dlq_depth", "topic", "enabled")
_LAMBDA_WHOLE_SECONDS = "a Lambda function timeout"
_WINDOW_WHOLE_SECONDS = "the event source's MaximumBatchingWindowInSeconds"
_DELAY_WHOLE_SECONDS = "SQS's DelaySeconds"


def plan_from_props(
    owner: Construct,
    kind: str,
    job_type: str,
    props: Mapping[str, Any],
    *,
    labels: Mapping[str, str] | None = None,
    consumer: ConsumerCheck | None = None,
    stack: Stack | None = None,
    ecs_consumer: bool = False,
) -> QueuePlan:
    """The plan of a job queue declared with ``props`` (:class:`jobqueues.props.JobQueueProps`) in ``owner``'s
    stack; raises ``JobQueueError`` naming ``kind`` and ``owner``'s path with every problem.

    :param owner: the construct the user declared (errors name its path; it owns the queue names).
    :param kind: what the user declared, e.g. ``"JobQueue"``, ``"LambdaJob"``.
    :param labels: how the props are spelled where the user wrote them (a ``LambdaJob``'s ``timeout`` is the
        queue's ``lambda_timeout``). Default: these names.
    :param consumer: the consumer construct's own findings, so one error lists every problem. Default: none.
    :param ecs_consumer: an ``EcsJob`` declares the queue (hints leave Lambda props out). Default: False.
    :param stack: ``owner``'s stack, when the caller knows it (each ``Stack.of`` is a round-trip to the CDK's
        Node kernel). Default: looked up.
    """
    labels = labels or {}
    consumer = consumer or ConsumerCheck()
    facts = stack_facts(stack or stack_of(owner))
    read = PropReader(props, JobQueueProps.__annotations__, labels=labels)
    alarm_props = read.instance("alarms", JobQueueAlarmProps, "JobQueueAlarmProps(...)") or JobQueueAlarmProps()
    idempotency = read_idempotency(read)
    alarm_read = PropReader({k: getattr(alarm_props, k) for k in _ALARM_FIELDS}, _ALARM_FIELDS, "alarms.")
    declaration = QueueDeclaration(
        job_type=job_type,
        processing_p99=read.duration_s("processing_p99"),
        lambda_timeout=read.whole_seconds("lambda_timeout", _LAMBDA_WHOLE_SECONDS),
        max_batching_window=read.whole_seconds("max_batching_window", _WINDOW_WHOLE_SECONDS),
        visibility_timeout=read.duration_s("visibility_timeout"),
        max_processing_time=read.duration_s("max_processing_time"),
        lease_extension=read.boolean("lease_extension", False),
        retention_period=read.duration_s("retention_period"),
        dlq_retention_period=read.duration_s("dlq_retention_period"),
        max_receive_count=read.integer("max_receive_count", 3),
        fifo=read.boolean("fifo", False),
        content_based_deduplication=read.boolean("content_based_deduplication", False),
        queue_name=read.string("queue_name"),
        name_prefix=facts.name,
        delivery_delay=read.whole_seconds("delivery_delay", _DELAY_WHOLE_SECONDS),
        max_message_size=read.size_bytes("max_message_size"),
        deduplication_scope=read.member(
            "deduplication_scope", sqs.DeduplicationScope, "sqs.DeduplicationScope.MESSAGE_GROUP"
        ),
        fifo_throughput_limit=read.member(
            "fifo_throughput_limit", sqs.FifoThroughputLimit, "sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID"
        ),
        removal_policy=read.member("removal_policy", RemovalPolicy, "RemovalPolicy.RETAIN"),
        dlq_removal_policy=read.member("dlq_removal_policy", RemovalPolicy, "RemovalPolicy.RETAIN"),
        in_flight_quota=alarm_read.integer("in_flight_quota", defaults.IN_FLIGHT_QUOTA),
        in_flight_fraction=alarm_read.number("in_flight_fraction", 0.8),
        oldest_message_age=alarm_read.duration_s("oldest_message_age"),
        dlq_depth=alarm_read.integer("dlq_depth", 1),
        max_queue_time=read.duration_s("max_queue_time"),
        ecs_consumer=ecs_consumer,
        idempotency=idempotency is not False,
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
    encryption_key = read.having("encryption_key", "key_arn", "a kms.IKey, e.g. kms.Key(self, 'Key')")
    topic = alarm_read.having("topic", "topic_arn", "an sns.ITopic, e.g. sns.Topic(self, 'Alarms')")
    alarms_enabled = alarm_read.boolean("enabled", True)
    if read.errors or alarm_read.errors:
        # Type errors first: a rule would only repeat them with less precision.
        raise_errors(kind, owner, read.errors + alarm_read.errors + consumer.errors)
    plan = plan_job_queue(
        declaration,
        consumer=consumer,
        alarms_enabled=alarms_enabled,
        resources={"encryption_key": encryption_key, "alarm_topic": topic, "idempotency": idempotency},
    )
    claim_names(kind, owner, facts, plan)
    _claimed[id(plan)] = plan
    return plan


def claim_names(kind: str, owner: Construct, facts: StackFacts, plan: QueuePlan) -> None:
    """Raise every error of ``plan`` with any clash of its job type or queue names at their deployment target;
    else record the names. A plan built directly (``JobQueue(..., plan=...)``) goes through here too."""
    names = [
        (role, name)
        for role, name in (("queue", plan.queue_name), ("dead-letter queue", plan.dead_letter_queue_name))
        if name is not None and not is_token(name)
    ]
    errors = plan.errors + name_conflicts(facts, owner, plan.job_type, names)
    if errors:
        raise_errors(kind, owner, errors)
    register_names(facts, owner, plan.job_type, names)


def take_claimed(plan: QueuePlan) -> bool:
    """True (once) when :func:`plan_from_props` made ``plan`` and claimed its names: the consumer construct that
    planned it builds it now. Any other build of a plan claims its names itself."""
    return _claimed.pop(id(plan), None) is plan


# Plans whose names are recorded, by id (a plan holds lists: unhashable). Weak: a plan lives as long as its user.
_claimed: weakref.WeakValueDictionary[int, QueuePlan] = weakref.WeakValueDictionary()


def raise_errors(kind: str, owner: Construct, errors: list[str]) -> None:
    """One ``JobQueueError`` listing ``errors`` under the declaration they belong to."""
    raise JobQueueError(f"{kind} {owner.node.path} cannot be deployed:\n" + "\n".join(f"  - {e}" for e in errors))
