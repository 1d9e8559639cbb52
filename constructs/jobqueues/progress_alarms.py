"""Is the job type making progress? The stalled-consumer alarm and the time-to-drain alarm and graph.

A consumer that is up but not draining (its handler hangs before any lease is lost, its deletes fail, its poll
loop is stuck) stays under the in-flight quota and may stay under the oldest-message-age threshold for a long time.
The stall alarm fires when messages wait (the oldest is older than :func:`stall_age_threshold_s`) and nothing is
deleted, for the longest a message may legitimately be worked on (:func:`stall_periods`).

Metric math, not a composite alarm: one alarm (two metrics) instead of three, both conditions evaluated on the same
period, and missing data handled in the expression (``FILL``): a queue with no traffic has no age and no deletes,
so the expression is 0 and the alarm stays OK. A composite alarm would need a "no deletes" child alarm that treats
missing data as breaching, in ALARM on every idle queue. Factories apart from the constructs (as
cdk-monitoring-constructs); the thresholds are the pure functions below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from jobqueues.alarms import alarm
from jobqueues.consumer_alarms import lease_leak_periods
from jobqueues.interface import IJobQueue
from jobqueues.metrics import CONSUMER_PERIOD_S as PERIOD_S
from jobqueues.metrics import ConsumerMetrics, consumer_period, stalled
from sqslease.rules import format_duration

#: The stall alarm's age threshold is at least this many seconds: SQS publishes its metrics once a minute.
STALL_AGE_MIN_S = 60
#: Periods (of the consumer metrics' 5 minutes) the time to drain stays above ``max_time_to_drain`` before its alarm.
DRAIN_EVALUATION_PERIODS = 3


def stall_age_threshold_s(
    visibility_timeout_s: float, max_queue_time_s: float | None = None, delivery_delay_s: float = 0
) -> int:
    """Above this age (seconds) the oldest message counts as waiting, for the stall alarm.

    ``delivery_delay + max_queue_time`` when a wait is promised (waiting longer breaks the promise), else
    ``delivery_delay + visibility_timeout``: older than one lease past its delay, a message was either never
    received or its lease ran out. Whole seconds, rounded up, and at least :data:`STALL_AGE_MIN_S`.
    """
    wait = max_queue_time_s if max_queue_time_s is not None else visibility_timeout_s
    return max(STALL_AGE_MIN_S, math.ceil(delivery_delay_s + wait))


def stall_periods(visibility_timeout_s: float, lease_extension: bool, max_processing_time_s: float | None) -> int:
    """Periods of waiting messages with no deletion before the stall alarm fires: the lease-leak alarm's window
    (:func:`jobqueues.consumer_alarms.lease_leak_periods`), the longest one message may legitimately be worked on
    (at least 15 min, at most a day). A busy consumer deletes something within it."""
    return lease_leak_periods(visibility_timeout_s, lease_extension, max_processing_time_s)


@dataclass(frozen=True)
class ProgressAlarms:
    """The progress alarms of one job type; ``time_to_drain`` only with a declared ``max_time_to_drain``."""

    stalled: cloudwatch.Alarm
    time_to_drain: cloudwatch.Alarm | None = None


def create_progress_alarms(scope: Construct, job_queue: IJobQueue, metrics: ConsumerMetrics) -> ProgressAlarms:
    """The stall alarm, and with ``max_time_to_drain`` the time-to-drain alarm, from the job queue's declaration."""
    job_type = job_queue.job_type
    vt_s = job_queue.visibility_timeout_seconds or 0
    age_s = stall_age_threshold_s(vt_s, job_queue.max_queue_time_seconds, job_queue.delivery_delay_seconds)
    periods = stall_periods(vt_s, job_queue.lease_extension, job_queue.max_processing_time_seconds)
    waited = "max_queue_time" if job_queue.max_queue_time_seconds is not None else "a visibility timeout"
    stall = alarm(
        scope,
        "StalledAlarm",
        stalled(metrics.oldest_age, metrics.deleted, age_s, consumer_period(scope)),
        threshold=1,
        evaluation_periods=periods,
        description=(
            f"{job_type}: messages have waited over {format_duration(age_s)} ({waited}) and none was deleted for "
            f"{format_duration(periods * PERIOD_S)}: the consumer is not draining the queue (a handler hung, "
            "deletes failing, a poll loop stuck, or no consumer running). Look at its logs and the lease alarms."
        ),
    )
    return ProgressAlarms(stall, _drain_alarm(scope, job_queue, metrics))


def _drain_alarm(scope: Construct, job_queue: IJobQueue, metrics: ConsumerMetrics) -> cloudwatch.Alarm | None:
    """The time to drain above ``max_time_to_drain`` (only when declared)."""
    bound_s = job_queue.max_time_to_drain_seconds
    if bound_s is None:
        return None
    return alarm(
        scope,
        "TimeToDrainAlarm",
        metrics.time_to_drain,
        threshold=math.ceil(bound_s),
        evaluation_periods=DRAIN_EVALUATION_PERIODS,
        comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        description=(
            f"{job_queue.job_type}: at the current deletion rate the backlog takes over max_time_to_drain "
            f"{format_duration(bound_s)} to drain: consumers are not keeping up. Add consumers (raise max_tasks, "
            "concurrency or max_concurrency) or look for slow or failing handlers."
        ),
    )


def time_to_drain_widget(job_queue: IJobQueue, metrics: ConsumerMetrics, width: int) -> cloudwatch.GraphWidget:
    """The job dashboard's time-to-drain graph, against ``max_time_to_drain`` when declared."""
    bound_s = job_queue.max_time_to_drain_seconds
    annotations = (
        [cloudwatch.HorizontalAnnotation(value=math.ceil(bound_s), label="max_time_to_drain")]
        if bound_s is not None
        else []
    )
    return cloudwatch.GraphWidget(
        title="Time to drain (s) at the current deletion rate",
        left=[metrics.time_to_drain_graph],
        left_annotations=annotations,
        width=width,
    )
