"""A job queue's metrics (:class:`JobQueueMetrics`, a part of every job queue): its queues' from SQS, and the ones
``sqslease`` writes per message (:mod:`jobqueues.metrics` makes them).

A queue metric asked again with the same period is the same object: a metric is immutable, and each new one is a
round trip to the CDK's Node kernel (the consumer's alarms and dashboard, and the stack's fleet view, share them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from constructs import IConstruct

from jobqueues import metrics
from jobqueues.registry import one_minute


class JobQueueMetrics:
    """The metrics of a job queue; part of :class:`jobqueues.job_queue_base.JobQueueBase`, whose subclasses set the
    attributes below."""

    job_type: str
    #: The source queue consumers receive from.
    queue: sqs.IQueue
    #: The dead-letter queue.
    dead_letter_queue: sqs.IQueue
    _queue_metrics: dict[tuple[str, Duration | None], cloudwatch.Metric] | None = None

    def _minute(self) -> Duration:
        return one_minute(cast(IConstruct, self))  # every job queue is a construct

    def _shared(
        self, name: str, period: Duration | None, make: Callable[..., cloudwatch.Metric], statistic: str = "Maximum"
    ) -> cloudwatch.Metric:
        """``make(statistic=, period=)``, made once per period (the ``Duration`` object itself: the stack's are
        shared, :meth:`jobqueues.registry.StackRegistry.seconds`)."""
        if self._queue_metrics is None:
            self._queue_metrics = {}
        key = (name, period)
        metric = self._queue_metrics.get(key)
        if metric is None:
            metric = self._queue_metrics[key] = make(statistic=statistic, period=period)
        return metric

    def metric_visible(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Messages waiting to be received (Maximum). Default period: 5 minutes (the CDK's)."""
        return self._shared("visible", period, self.queue.metric_approximate_number_of_messages_visible)

    def metric_in_flight(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Messages received and not yet deleted (Maximum), against the 120,000 quota. Default period: 5 minutes
        (the CDK's)."""
        return self._shared("in_flight", period, self.queue.metric_approximate_number_of_messages_not_visible)

    def metric_backlog(self, period: Duration | None = None) -> cloudwatch.MathExpression:
        """Outstanding work: visible + in flight. Default period: 1 minute."""
        return metrics.backlog(self.queue, period or self._minute())

    def metric_oldest_message_age(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Age of the oldest message on the source queue, in seconds (Maximum). Default period: 5 minutes (the
        CDK's)."""
        return self._shared("oldest", period, self.queue.metric_approximate_age_of_oldest_message)

    def metric_deleted(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Messages deleted, that is finished (Sum). Default period: 5 minutes (the CDK's)."""
        return self._shared("deleted", period, self.queue.metric_number_of_messages_deleted, "Sum")

    def metric_dead_letter_queue_depth(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Messages in the DLQ (Maximum). Default period: 5 minutes (the CDK's)."""
        return self._shared("dlq_depth", period, self.dead_letter_queue.metric_approximate_number_of_messages_visible)

    def metric_processing_time(self, statistic: str = "p99", period: Duration | None = None) -> cloudwatch.Metric:
        """Handler time of one message in milliseconds, from ``sqslease``'s EMF lines. Default: p99, 1 minute."""
        return metrics.emf_metric(self.job_type, "ProcessingTime", statistic, period or self._minute())

    def metric_queue_time(self, statistic: str = "p99", period: Duration | None = None) -> cloudwatch.Metric:
        """How long a message waited before a run started, in milliseconds: from its ``SentTimestamp`` (delay and
        earlier attempts included), from ``sqslease``'s EMF lines. Written only where sqslease consumers run.
        Default: p99, 1 minute."""
        return metrics.emf_metric(self.job_type, "QueueTime", statistic, period or self._minute())

    def metric_extensions(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Lease extensions (Sum), from ``sqslease``'s EMF lines. Default period: 1 minute."""
        return metrics.emf_metric(self.job_type, "Extensions", "Sum", period or self._minute())

    def metric_leases_lost(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Leases lost while the handler ran (Sum): the message may run twice. Default period: 1 minute."""
        return metrics.emf_metric(self.job_type, "LeaseLost", "Sum", period or self._minute())
