"""Metric factories of a job type, apart from the constructs (as cdk-monitoring-constructs).

Queue metrics come from SQS (``AWS/SQS``); per-message metrics from the EMF lines ``sqslease`` writes
(namespace ``jobqueues``, dimension ``JobType``; see ``sqslease.emf``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from constructs import IConstruct

from jobqueues.interface import IJobQueue
from jobqueues.registry import registry_of
from sqslease.emf import NAMESPACE as EMF_NAMESPACE

#: Period of a consumer's alarms and dashboard graphs (a p99 over fewer minutes is noise).
CONSUMER_PERIOD_S = 300


def emf_metric(job_type: str, metric_name: str, statistic: str, period: Duration) -> cloudwatch.Metric:
    """A metric ``sqslease`` publishes per processed message, for one job type.

    :param metric_name: ``ProcessingTime`` or ``QueueTime`` (milliseconds), ``Extensions``, ``LeaseLost`` or
        ``ReceiveCount``.
    :param statistic: e.g. ``"p99"``, ``"Sum"``, ``"Maximum"``.
    """
    return cloudwatch.Metric(
        namespace=EMF_NAMESPACE,
        metric_name=metric_name,
        dimensions_map={"JobType": job_type},
        statistic=statistic,
        period=period,
    )


def backlog(queue: sqs.IQueue, period: Duration) -> cloudwatch.MathExpression:
    """Outstanding work: visible plus in-flight (received, not yet deleted) messages.

    Visible messages alone drop to zero while every message is being worked on, which is why scaling on them
    stops tasks with work in progress.
    """
    return cloudwatch.MathExpression(
        expression="visible + inflight",
        using_metrics={
            "visible": queue.metric_approximate_number_of_messages_visible(statistic="Maximum", period=period),
            "inflight": queue.metric_approximate_number_of_messages_not_visible(statistic="Maximum", period=period),
        },
        label="backlog (visible + in flight)",
        period=period,
    )


@dataclass(frozen=True)
class ConsumerMetrics:
    """The metrics a consumer's alarms and dashboard share, at 5-minute periods.

    Built once per job type: every metric object costs a round-trip to the CDK's Node kernel.
    """

    visible: cloudwatch.Metric
    in_flight: cloudwatch.Metric
    backlog: cloudwatch.MathExpression
    deleted: cloudwatch.Metric
    processing_p50: cloudwatch.Metric
    processing_p99: cloudwatch.Metric
    queue_time_p50: cloudwatch.Metric
    queue_time_p99: cloudwatch.Metric
    extensions: cloudwatch.Metric
    leases_lost: cloudwatch.Metric

    @classmethod
    def of(cls, job_queue: IJobQueue) -> ConsumerMetrics:
        period = consumer_period(cast(IConstruct, job_queue))  # every job queue is a construct
        visible = job_queue.metric_visible(period)
        in_flight = job_queue.metric_in_flight(period)
        return cls(
            visible=visible,
            in_flight=in_flight,
            backlog=cloudwatch.MathExpression(
                expression="visible + inflight",
                using_metrics={"visible": visible, "inflight": in_flight},
                label="backlog (visible + in flight)",
                period=period,
            ),
            deleted=job_queue.metric_deleted(period),
            processing_p50=job_queue.metric_processing_time("p50", period),
            processing_p99=job_queue.metric_processing_time("p99", period),
            queue_time_p50=job_queue.metric_queue_time("p50", period),
            queue_time_p99=job_queue.metric_queue_time("p99", period),
            extensions=job_queue.metric_extensions(period),
            leases_lost=job_queue.metric_leases_lost(period),
        )


def consumer_period(scope: IConstruct) -> Duration:
    """The 5-minute ``Duration`` of consumer metrics, shared in ``scope``'s stack."""
    return registry_of(scope).seconds(CONSUMER_PERIOD_S)
