"""A fair queue's metrics, its quiet-group alarm and its dashboard widgets, apart from the constructs (as
cdk-monitoring-constructs).

SQS publishes these for a standard queue whose messages carry a ``MessageGroupId`` (a fair queue: the group is the
tenant; docs/fair-queues.md), in ``AWS/SQS`` with dimension ``QueueName``, like the queue's other metrics. The
alarm's threshold is planned (:func:`jobqueues.defaults.quiet_group_age_s`): here it is only built.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from jobqueues.alarms import OLDEST_AGE_EVALUATION_PERIODS, alarm
from jobqueues.registry import one_minute
from sqslease.rules import format_duration

#: Groups SQS finds noisy (holding more than their share of the consumers).
NOISY_GROUPS = "ApproximateNumberOfNoisyGroups"
#: The quiet groups' visible messages.
QUIET_VISIBLE = "ApproximateNumberOfMessagesVisibleInQuietGroups"
#: The quiet groups' in-flight messages.
QUIET_IN_FLIGHT = "ApproximateNumberOfMessagesNotVisibleInQuietGroups"
#: The age of the quiet groups' oldest message, in seconds: what the alarm watches.
QUIET_OLDEST_AGE = "ApproximateAgeOfOldestMessageInQuietGroups"


@dataclass(frozen=True)
class FairQueueMetrics:
    """A fair queue's metrics (one-minute maxima by default), built once per job type: every metric object costs a
    round-trip to the CDK's Node kernel."""

    noisy_groups: cloudwatch.Metric
    quiet_visible: cloudwatch.Metric
    quiet_in_flight: cloudwatch.Metric
    quiet_backlog: cloudwatch.MathExpression
    quiet_oldest_age: cloudwatch.Metric

    @classmethod
    def of(cls, queue: sqs.IQueue, period: Duration | None = None) -> FairQueueMetrics:
        """The metrics of ``queue``. :param period: Default: 1 minute (its stack's shared one)."""
        period = period or one_minute(queue)

        def maximum(name: str) -> cloudwatch.Metric:
            return queue.metric(name, statistic="Maximum", period=period)

        visible, in_flight = maximum(QUIET_VISIBLE), maximum(QUIET_IN_FLIGHT)
        return cls(
            noisy_groups=maximum(NOISY_GROUPS),
            quiet_visible=visible,
            quiet_in_flight=in_flight,
            quiet_backlog=cloudwatch.MathExpression(
                expression="visible + inflight",
                using_metrics={"visible": visible, "inflight": in_flight},
                label="quiet groups' backlog (visible + in flight)",
                period=period,
            ),
            quiet_oldest_age=maximum(QUIET_OLDEST_AGE),
        )


def quiet_group_age_alarm(scope: Construct, job_type: str, queue: sqs.IQueue, threshold_s: float) -> cloudwatch.Alarm:
    """``QuietGroupAgeAlarm``: the quiet groups' oldest message on ``queue`` older than ``threshold_s`` seconds
    (planned: :func:`jobqueues.defaults.quiet_group_age_s`), its one-minute maximum for
    :data:`jobqueues.alarms.OLDEST_AGE_EVALUATION_PERIODS` minutes. SQS is holding the noisy tenants back and the
    well-behaved ones still wait: the consumers lack capacity."""
    return alarm(
        scope,
        "QuietGroupAgeAlarm",
        queue.metric(QUIET_OLDEST_AGE, statistic="Maximum", period=one_minute(scope)),
        threshold=threshold_s,
        evaluation_periods=OLDEST_AGE_EVALUATION_PERIODS,
        comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        description=(
            f"{job_type}: a quiet tenant's oldest message has waited more than {format_duration(threshold_s)} on "
            "this fair queue: SQS holds the noisy tenants back, yet the well-behaved ones wait past their promise. "
            "Add consumers (raise max_tasks, concurrency or max_concurrency)."
        ),
    )


def fair_queue_widgets(metrics: FairQueueMetrics, threshold_s: float | None, width: int) -> list[cloudwatch.IWidget]:
    """Noisy groups, the quiet groups' backlog, and their oldest message's age (against ``threshold_s``, the
    quiet-group alarm's; ``None``: no alarm, no line)."""
    line = (
        [] if threshold_s is None else [cloudwatch.HorizontalAnnotation(value=threshold_s, label="quiet-group alarm")]
    )
    return [
        cloudwatch.GraphWidget(title="Noisy groups (tenants held back)", left=[metrics.noisy_groups], width=width),
        cloudwatch.GraphWidget(title="Quiet groups' backlog", left=[metrics.quiet_backlog], width=width),
        cloudwatch.GraphWidget(
            title="Quiet groups' oldest message (s)",
            left=[metrics.quiet_oldest_age],
            left_annotations=line,
            width=width,
        ),
    ]
