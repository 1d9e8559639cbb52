"""A CloudWatch dashboard per job type: the queue, the leases and the consumer on one page."""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from jobqueues.defaults import IN_FLIGHT_QUOTA, queue_time_threshold_ms
from jobqueues.fair_queue_monitoring import FairQueueMetrics, fair_queue_widgets
from jobqueues.interface import IJobQueue
from jobqueues.metrics import ConsumerMetrics

WIDTH = 8  # three graphs per row of the 24-column grid


def job_dashboard(
    scope: Construct,
    dashboard_name: str,
    job_queue: IJobQueue,
    metrics: ConsumerMetrics,
    consumer_widgets: list[cloudwatch.IWidget],
) -> cloudwatch.Dashboard:
    """Backlog, in flight vs the quota, oldest message, p50/p99 vs the VT, DLQ depth, extensions, leases lost,
    queue time p50/p99 (vs ``max_queue_time`` when declared), a fair queue's noisy groups and quiet groups'
    backlog and oldest message (:mod:`jobqueues.fair_queue_monitoring`), then the consumer's own graphs."""
    vt_s = job_queue.visibility_timeout_seconds
    vt_annotation = (
        [cloudwatch.HorizontalAnnotation(value=vt_s * 1000, label="visibility timeout")] if vt_s is not None else []
    )
    slo_s = job_queue.max_queue_time_seconds
    slo_annotation = (
        [cloudwatch.HorizontalAnnotation(value=queue_time_threshold_ms(slo_s), label="max_queue_time")]
        if slo_s is not None
        else []
    )
    widgets: list[cloudwatch.IWidget] = [
        cloudwatch.GraphWidget(title="Backlog (visible + in flight)", left=[metrics.backlog], width=WIDTH),
        cloudwatch.GraphWidget(
            title="In flight vs the quota",
            left=[metrics.in_flight],
            left_annotations=[cloudwatch.HorizontalAnnotation(value=IN_FLIGHT_QUOTA, label="SQS in-flight quota")],
            width=WIDTH,
        ),
        cloudwatch.GraphWidget(title="Age of the oldest message (s)", left=[metrics.oldest_age], width=WIDTH),
        cloudwatch.GraphWidget(
            title="Processing time p50 / p99 (ms) vs the VT",
            left=[metrics.processing_p50, metrics.processing_p99],
            left_annotations=vt_annotation,
            width=WIDTH,
        ),
        cloudwatch.GraphWidget(
            title="Dead-letter queue depth", left=[job_queue.metric_dead_letter_queue_depth()], width=WIDTH
        ),
        cloudwatch.GraphWidget(
            title="Lease extensions / leases lost",
            left=[metrics.extensions],
            right=[metrics.leases_lost],
            width=WIDTH,
        ),
        cloudwatch.GraphWidget(
            title="Queue time p50 / p99 (ms), sent to started",
            left=[metrics.queue_time_p50, metrics.queue_time_p99],
            left_annotations=slo_annotation,
            width=WIDTH,
        ),
        *(
            fair_queue_widgets(FairQueueMetrics.of(job_queue.queue), job_queue.quiet_group_age_seconds, WIDTH)
            if job_queue.fair
            else []
        ),
        *consumer_widgets,
    ]
    rows = [widgets[start : start + 3] for start in range(0, len(widgets), 3)]
    return cloudwatch.Dashboard(scope, "Dashboard", dashboard_name=dashboard_name, widgets=rows)
