"""Alarm props and the alarm factory of a job queue, apart from the construct (as cdk-monitoring-constructs).

The thresholds come from the same declaration as the queue: :mod:`jobqueues.declaration` checks them,
:mod:`jobqueues.defaults` holds their defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from jobqueues import defaults
from jobqueues.defaults import queue_time_threshold_ms
from jobqueues.plan import AlarmPlan
from jobqueues.registry import one_minute
from sqslease.rules import format_duration


@dataclass(frozen=True)
class JobQueueAlarmProps:
    """Thresholds and actions of a job queue's alarms. Every field is optional.

    :param in_flight_quota: in-flight (received, not deleted) message quota. Long-polling consumers never see an
        OverLimit error, so the in-flight alarm is the only warning.
    :param in_flight_fraction: alarm when in-flight messages reach this share of the quota, in (0, 1].
    :param oldest_message_age: alarm when the oldest message on the source queue is older than this.
    :param dlq_depth: alarm when the DLQ holds at least this many visible messages.
    :param topic: SNS topic notified on ALARM and OK.
    :param enabled: set False to create no alarms.
    """

    in_flight_quota: int = defaults.IN_FLIGHT_QUOTA
    in_flight_fraction: float = defaults.IN_FLIGHT_FRACTION
    oldest_message_age: Duration | None = None
    dlq_depth: int = defaults.DLQ_DEPTH
    topic: sns.ITopic | None = None
    enabled: bool = True


#: Periods (of the consumer metrics' 5 minutes) the p99 queue time stays above ``max_queue_time`` before its alarm.
QUEUE_TIME_EVALUATION_PERIODS = 3
#: Minutes an oldest message's age (the queue's, a fair queue's quiet groups') stays above its threshold before its
#: alarm.
OLDEST_AGE_EVALUATION_PERIODS = 5


@dataclass(frozen=True)
class JobQueueAlarms:
    """The queue alarms of one job type; ``queue_time`` only with a declared ``max_queue_time``, ``quiet_group_age``
    only on a fair queue."""

    in_flight: cloudwatch.Alarm
    dlq_not_empty: cloudwatch.Alarm
    oldest_message_age: cloudwatch.Alarm
    queue_time: cloudwatch.Alarm | None = None
    #: A fair queue's (:func:`jobqueues.fair_queue_monitoring.quiet_group_age_alarm`).
    quiet_group_age: cloudwatch.Alarm | None = None


def alarm(
    scope: Construct,
    construct_id: str,
    metric: cloudwatch.IMetric,
    *,
    threshold: float,
    evaluation_periods: int,
    description: str,
    comparison: cloudwatch.ComparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
) -> cloudwatch.Alarm:
    """An alarm on ``metric`` that treats missing data as fine (a quiet queue publishes nothing).

    The same alarm as ``cloudwatch.Alarm(scope, construct_id, metric=metric, ...)``, made by the metric's
    ``create_alarm`` when it has one: the kernel then builds the alarm itself, where a construction from Python also
    has it sort out the class's interfaces (about 10 % of an alarm's kernel time, measured)."""
    options: dict[str, Any] = {
        "threshold": threshold,
        "evaluation_periods": evaluation_periods,
        "comparison_operator": comparison,
        "treat_missing_data": cloudwatch.TreatMissingData.NOT_BREACHING,
        "alarm_description": description,
    }
    if isinstance(metric, (cloudwatch.Metric, cloudwatch.MathExpression)):
        return metric.create_alarm(scope, construct_id, **options)
    return cloudwatch.Alarm(scope, construct_id, metric=metric, **options)


def notify(topic: sns.ITopic | None, alarms: list[cloudwatch.Alarm]) -> None:
    """Send ALARM and OK of ``alarms`` to ``topic`` (nothing when there is none)."""
    if topic is None:
        return
    action = cw_actions.SnsAction(topic)
    for each in alarms:
        each.add_alarm_action(action)
        each.add_ok_action(action)


def create_queue_alarms(
    scope: Construct,
    job_type: str,
    queue: sqs.IQueue,
    dead_letter_queue: sqs.IQueue,
    plan: AlarmPlan,
    topic: sns.ITopic | None = None,
    queue_time_p99: cloudwatch.IMetric | None = None,
) -> JobQueueAlarms:
    """The queue alarms, with the planned thresholds: in flight near the quota, DLQ not empty, oldest message too
    old, and with ``plan.max_queue_time_s`` the p99 queue time above it.

    :param topic: notified on ALARM and OK. Default: none.
    :param queue_time_p99: the p99 of the ``QueueTime`` EMF metric (milliseconds), needed with
        ``plan.max_queue_time_s``. Default: none.
    """
    minute = one_minute(scope)
    in_flight = alarm(
        scope,
        "InFlightAlarm",
        queue.metric_approximate_number_of_messages_not_visible(statistic="Maximum", period=minute),
        threshold=plan.in_flight_threshold,
        evaluation_periods=3,
        description=(
            f"{job_type}: {plan.in_flight_threshold:,} in-flight messages, {plan.in_flight_fraction:.0%} of the "
            f"{plan.in_flight_quota:,} SQS quota. Long-polling consumers get no OverLimit error at the quota; "
            "they just stop receiving. Delete or release messages faster, or shard the job type over more queues."
        ),
    )
    dlq_not_empty = alarm(
        scope,
        "DeadLetterQueueAlarm",
        dead_letter_queue.metric_approximate_number_of_messages_visible(statistic="Maximum", period=minute),
        threshold=plan.dlq_depth,
        evaluation_periods=1,
        description=(
            f"{job_type}: messages in the dead-letter queue after {plan.receives} receives. "
            "Inspect them, fix the cause, then redrive."
        ),
    )
    oldest = alarm(
        scope,
        "OldestMessageAgeAlarm",
        queue.metric_approximate_age_of_oldest_message(statistic="Maximum", period=minute),
        threshold=plan.oldest_message_age_s,
        evaluation_periods=OLDEST_AGE_EVALUATION_PERIODS,
        description=(
            f"{job_type}: the oldest message has waited {format_duration(plan.oldest_message_age_s)} or more: "
            "consumers are not keeping up or are stuck."
        ),
    )
    queue_time = _queue_time_alarm(scope, job_type, plan, queue_time_p99)
    alarms = JobQueueAlarms(
        in_flight=in_flight, dlq_not_empty=dlq_not_empty, oldest_message_age=oldest, queue_time=queue_time
    )
    notify(topic, [in_flight, dlq_not_empty, oldest, *([queue_time] if queue_time else [])])
    return alarms


def _queue_time_alarm(
    scope: Construct, job_type: str, plan: AlarmPlan, queue_time_p99: cloudwatch.IMetric | None
) -> cloudwatch.Alarm | None:
    """The p99 queue time above ``max_queue_time`` (only when declared)."""
    if plan.max_queue_time_s is None:
        return None
    assert queue_time_p99 is not None, "a max_queue_time alarm needs the QueueTime p99 metric"
    return alarm(
        scope,
        "QueueTimeAlarm",
        queue_time_p99,
        threshold=queue_time_threshold_ms(plan.max_queue_time_s),
        evaluation_periods=QUEUE_TIME_EVALUATION_PERIODS,
        comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        description=(
            f"{job_type}: the p99 queue time (sent to started) is above max_queue_time "
            f"{format_duration(plan.max_queue_time_s)}: the promised latency is not met. Add consumers (raise "
            "max_tasks, concurrency or max_concurrency) or look for a backlog behind failing messages. Written "
            "by sqslease consumers only."
        ),
    )
