"""Metric factories of a job type, apart from the constructs (as cdk-monitoring-constructs).

Queue metrics come from SQS (``AWS/SQS``); per-message metrics from the EMF lines ``sqslease`` writes
(namespace ``jobqueues``, dimension ``JobType``; see ``sqslease.emf``).
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs

from jobqueues.alarms import one_minute
from sqslease.emf import NAMESPACE as EMF_NAMESPACE


def emf_metric(job_type: str, metric_name: str, statistic: str, period: Duration | None = None) -> cloudwatch.Metric:
    """A metric ``sqslease`` publishes per processed message, for one job type.

    :param metric_name: ``ProcessingTime`` (milliseconds), ``Extensions``, ``LeaseLost`` or ``ReceiveCount``.
    :param statistic: e.g. ``"p99"``, ``"Sum"``, ``"Maximum"``.
    :param period: Default: 1 minute.
    """
    return cloudwatch.Metric(
        namespace=EMF_NAMESPACE,
        metric_name=metric_name,
        dimensions_map={"JobType": job_type},
        statistic=statistic,
        period=period or one_minute(),
    )


def backlog(queue: sqs.IQueue, period: Duration | None = None) -> cloudwatch.MathExpression:
    """Outstanding work: visible plus in-flight (received, not yet deleted) messages.

    Visible messages alone drop to zero while every message is being worked on, which is why scaling on them
    stops tasks with work in progress.
    """
    period = period or one_minute()
    return cloudwatch.MathExpression(
        expression="visible + inflight",
        using_metrics={
            "visible": queue.metric_approximate_number_of_messages_visible(statistic="Maximum", period=period),
            "inflight": queue.metric_approximate_number_of_messages_not_visible(statistic="Maximum", period=period),
        },
        label="backlog (visible + in flight)",
        period=period,
    )
