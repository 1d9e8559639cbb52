"""Alarms on a job type's consumer, from the same declaration as its queue: lease leak, lease lost, p99 drift.

Factories apart from the constructs (as cdk-monitoring-constructs); thresholds are pure functions below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from jobqueues.alarms import alarm
from jobqueues.interface import IJobQueue
from jobqueues.metrics import CONSUMER_PERIOD_S as PERIOD_S
from jobqueues.metrics import ConsumerMetrics, consumer_period
from sqslease.rules import SQS_MAX_VISIBILITY_TIMEOUT_S, format_duration

#: CloudWatch evaluates at most one day of periods.
MAX_EVALUATION_S = 86_400
#: A lease leak shows after at least this long without a deletion.
MIN_LEAK_WINDOW_S = 900
#: A Lambda job without a declared p99 drifts when its p99 is above this share of the function timeout.
LAMBDA_DRIFT_FRACTION = 0.5


@dataclass(frozen=True)
class ConsumerAlarms:
    """The consumer alarms of one job type (Lambda- or ECS-specific ones are ``None`` for the other kind)."""

    lease_leak: cloudwatch.Alarm
    lease_lost: cloudwatch.Alarm
    p99_drift: cloudwatch.Alarm
    errors: cloudwatch.Alarm | None = None
    throttles: cloudwatch.Alarm | None = None
    no_running_task: cloudwatch.Alarm | None = None
    #: Messages waiting and none deleted (:mod:`jobqueues.progress_alarms`).
    stalled: cloudwatch.Alarm | None = None
    #: The backlog's time to drain above ``max_time_to_drain`` (only when declared).
    time_to_drain: cloudwatch.Alarm | None = None

    def all(self) -> list[cloudwatch.Alarm]:
        """Every alarm that exists."""
        candidates = (self.lease_leak, self.lease_lost, self.p99_drift, self.errors, self.throttles)
        progress = (self.stalled, self.time_to_drain)
        return [a for a in (*candidates, self.no_running_task, *progress) if a is not None]


def p99_drift_threshold_ms(
    visibility_timeout_s: float,
    lease_extension: bool,
    max_processing_time_s: float | None,
    processing_p99_s: float | None = None,
) -> int:
    """Above this p99 (milliseconds) the declared p99 no longer holds.

    Without lease extension the VT is ``2 x p99``, so a p99 above half the VT eats the safety margin. With it,
    the lease follows the job, so the bound is the declared ``processing_p99`` itself; with no p99 declared,
    ``max_processing_time`` (or SQS's 12 h), past which leases are no longer extended.
    """
    if lease_extension:
        return int((processing_p99_s or max_processing_time_s or SQS_MAX_VISIBILITY_TIMEOUT_S) * 1000)
    return int(visibility_timeout_s * 1000 / 2)


def lambda_p99_drift_threshold_ms(function_timeout_s: float, processing_p99_s: float | None) -> int:
    """Above this p99 (milliseconds) a Lambda job's declared p99 no longer holds: the declared p99 (below the
    timeout, checked at synth), or half the function timeout when none is declared."""
    return int((processing_p99_s or function_timeout_s * LAMBDA_DRIFT_FRACTION) * 1000)


def lease_leak_periods(visibility_timeout_s: float, lease_extension: bool, max_processing_time_s: float | None) -> int:
    """Periods of in-flight messages with no deletion before the lease-leak alarm fires.

    The longest a message may legitimately be worked on (the VT, or ``max_processing_time`` with lease
    extension), at least 15 min and at most the day CloudWatch evaluates.
    """
    longest = max_processing_time_s if lease_extension and max_processing_time_s else visibility_timeout_s
    window = min(max(longest, MIN_LEAK_WINDOW_S), MAX_EVALUATION_S)
    return max(1, math.ceil(window / PERIOD_S))


def create_consumer_alarms(
    scope: Construct, job_queue: IJobQueue, metrics: ConsumerMetrics, *, function_timeout_s: float | None = None
) -> tuple[cloudwatch.Alarm, cloudwatch.Alarm, cloudwatch.Alarm]:
    """The lease-leak, lease-lost and p99-drift alarms, from the job queue's declaration.

    :param function_timeout_s: a Lambda consumer's function timeout, in seconds: the p99 drift is then measured
        against the declared p99 or the timeout. Default: none (an ECS consumer).
    """
    job_type = job_queue.job_type
    visibility_timeout_s = job_queue.visibility_timeout_seconds or 0
    lease_extension = job_queue.lease_extension
    max_processing_time_s = job_queue.max_processing_time_seconds
    period = consumer_period(scope)
    periods = lease_leak_periods(visibility_timeout_s, lease_extension, max_processing_time_s)
    leak = alarm(
        scope,
        "LeaseLeakAlarm",
        cloudwatch.MathExpression(
            expression="IF(inflight >= 1 AND FILL(deleted, 0) < 1, 1, 0)",
            using_metrics={"inflight": metrics.in_flight, "deleted": metrics.deleted},
            label="in flight, none deleted",
            period=period,
        ),
        threshold=1,
        evaluation_periods=periods,
        description=(
            f"{job_type}: messages have been in flight for {format_duration(periods * PERIOD_S)} with none "
            "deleted: consumers receive but never finish (stuck handlers, or deletes failing). Their leases keep "
            "the messages from anyone else."
        ),
    )
    lost = alarm(
        scope,
        "LeaseLostAlarm",
        metrics.leases_lost,
        threshold=1,
        evaluation_periods=1,
        description=(
            f"{job_type}: a consumer lost the lease of a message it was still handling; it may run twice. "
            "Look for throttled or failing ChangeMessageVisibility calls, or a stalled process."
        ),
    )
    threshold_ms, bound = p99_drift_bound(job_queue, function_timeout_s)
    drift = alarm(
        scope,
        "P99DriftAlarm",
        metrics.processing_p99,
        threshold=threshold_ms,
        evaluation_periods=3,
        comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        description=(
            f"{job_type}: the measured p99 processing time is above {bound}: the declared p99 no longer holds. "
            "Re-measure with jobstats and redeploy with the new profile."
        ),
    )
    return leak, lost, drift


def p99_drift_bound(job_queue: IJobQueue, function_timeout_s: float | None) -> tuple[int, str]:
    """The p99-drift alarm's threshold in milliseconds, and what it is in words.

    :param function_timeout_s: a Lambda consumer's function timeout, in seconds; ``None``: an ECS consumer.
    """
    p99_s = job_queue.processing_p99_seconds
    if function_timeout_s is not None:
        threshold_ms = lambda_p99_drift_threshold_ms(function_timeout_s, p99_s)
        bound = (
            f"the declared processing_p99 ({format_duration(threshold_ms / 1000)})"
            if p99_s
            else f"half the function timeout ({format_duration(threshold_ms / 1000)})"
        )
        return threshold_ms, bound
    lease_extension = job_queue.lease_extension
    threshold_ms = p99_drift_threshold_ms(
        job_queue.visibility_timeout_seconds or 0, lease_extension, job_queue.max_processing_time_seconds, p99_s
    )
    if not lease_extension:
        return threshold_ms, f"half the visibility timeout ({format_duration(threshold_ms / 1000)})"
    if p99_s:
        return threshold_ms, f"the declared processing_p99 ({format_duration(threshold_ms / 1000)})"
    return threshold_ms, f"max_processing_time {format_duration(threshold_ms / 1000)}"
