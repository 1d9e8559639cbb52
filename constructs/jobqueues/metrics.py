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

from jobqueues.defaults import CONSUMER_PERIOD_S
from jobqueues.interface import IJobQueue
from jobqueues.registry import registry_of
from sqslease.emf import NAMESPACE as EMF_NAMESPACE

__all__ = [
    "CONSUMER_PERIOD_S",
    "ConsumerMetrics",
    "backlog",
    "consumer_period",
    "emf_metric",
    "stalled",
    "time_to_drain",
]


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
    oldest_age: cloudwatch.Metric
    time_to_drain: cloudwatch.MathExpression
    #: The same on a dashboard's graph, over the graph's own period (:func:`time_to_drain`'s ``graph``).
    time_to_drain_graph: cloudwatch.MathExpression

    @classmethod
    def of(cls, job_queue: IJobQueue) -> ConsumerMetrics:
        period = consumer_period(cast(IConstruct, job_queue))  # every job queue is a construct
        visible = job_queue.metric_visible(period)
        in_flight = job_queue.metric_in_flight(period)
        deleted = job_queue.metric_deleted(period)
        return cls(
            visible=visible,
            in_flight=in_flight,
            backlog=cloudwatch.MathExpression(
                expression="visible + inflight",
                using_metrics={"visible": visible, "inflight": in_flight},
                label="backlog (visible + in flight)",
                period=period,
            ),
            deleted=deleted,
            processing_p50=job_queue.metric_processing_time("p50", period),
            processing_p99=job_queue.metric_processing_time("p99", period),
            queue_time_p50=job_queue.metric_queue_time("p50", period),
            queue_time_p99=job_queue.metric_queue_time("p99", period),
            extensions=job_queue.metric_extensions(period),
            leases_lost=job_queue.metric_leases_lost(period),
            oldest_age=job_queue.metric_oldest_message_age(period),
            time_to_drain=time_to_drain(visible, in_flight, deleted, period),
            time_to_drain_graph=time_to_drain(visible, in_flight, deleted, period, graph=True),
        )


def consumer_period(scope: IConstruct) -> Duration:
    """The 5-minute ``Duration`` of consumer metrics, shared in ``scope``'s stack."""
    return registry_of(scope).seconds(CONSUMER_PERIOD_S)


def time_to_drain(
    visible: cloudwatch.IMetric,
    in_flight: cloudwatch.IMetric,
    deleted: cloudwatch.IMetric,
    period: Duration,
    *,
    graph: bool = False,
) -> cloudwatch.MathExpression:
    """Seconds the backlog (visible + in flight) takes to drain at the period's deletion rate, on the consumer period.

    ``deleted + 1`` (one more deletion than seen) so that nothing divides by zero: with nothing deleted the value is
    ``backlog x period``, a lower bound that grows with the backlog, never a gap (the stall alarm tells a stopped
    consumer apart). An empty queue drains in 0 s; a queue with no traffic publishes nothing.

    :param graph: a dashboard's: the period is the graph's own (``PERIOD(deleted)``), which a dashboard lengthens on
        long time ranges, ``deleted`` then a sum over it; an alarm's is the fixed consumer period. Default False.
    """
    seconds = "PERIOD(deleted)" if graph else str(CONSUMER_PERIOD_S)
    return cloudwatch.MathExpression(
        expression=f"(visible + inflight) * {seconds} / (FILL(deleted, 0) + 1)",
        using_metrics={"visible": visible, "inflight": in_flight, "deleted": deleted},
        label="time to drain (s)",
        period=period,
    )


def stalled(
    oldest_age: cloudwatch.IMetric, deleted: cloudwatch.IMetric, age_threshold_s: int, period: Duration
) -> cloudwatch.MathExpression:
    """1 in a period where the oldest message is older than ``age_threshold_s`` seconds and none was deleted, else 0.

    Missing data is no traffic: no age is no waiting message, no deletion count is none deleted (``FILL``); with
    neither, no value, which the alarms treat as fine.
    """
    return cloudwatch.MathExpression(
        expression=f"IF(FILL(age, 0) > {age_threshold_s} AND FILL(deleted, 0) < 1, 1, 0)",
        using_metrics={"age": oldest_age, "deleted": deleted},
        label="waiting, none deleted",
        period=period,
    )
