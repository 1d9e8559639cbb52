"""``jobqueues status``: one row per job type: its queue's depth, the oldest message's age, the DLQ's depth, the
lease numbers SQS holds, and its consumer's state.

Queue attributes come from SQS (one ``GetQueueAttributes`` per queue, eight at a time); the oldest message's age,
a fair queue's noisy groups and the Lambda errors and throttles from CloudWatch, in one ``GetMetricData`` call for
every job type (SQS and Lambda publish them once a minute; the emulator publishes none, so they read ``None``); ECS
tasks from ``DescribeServices``, ten services a call, per cluster.

Locally, ``jobqueues local up`` sets the emulator's ``desiredCount`` to the workers its scaler runs (``UpdateService``,
on each change) and the emulator (moto) then reports ``runningCount`` equal to it: the ECS columns are the local
workers (workers still draining after a scale-in are not counted, as on ECS a stopping task is not).
"""

from __future__ import annotations

import datetime
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from jobqueues.ops.discovery import EcsConsumer, JobType, LambdaConsumer
from jobqueues.ops.parallel_reads import read_pool
from jobqueues.ops.queues import missing_queue, queue_attributes, queue_name
from sqslease.rules import SQS_IN_FLIGHT_QUOTA

#: The window of the CloudWatch figures: the oldest message's age and a fair queue's noisy groups are their latest
#: one-minute maximum in it, the Lambda errors and throttles are sums over it (seconds).
METRIC_WINDOW_S = 300
#: Query ids (their prefixes) whose figure is the latest datapoint, not a sum over the window.
LATEST_QUERIES = ("age", "noisy")

_QUEUE_ATTRIBUTES = [
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
    "VisibilityTimeout",
    "RedrivePolicy",
]


@dataclass(frozen=True)
class JobTypeStatus:
    """One job type's state now. A figure that could not be read is ``None`` (``note`` says why when known).

    Counts are SQS's approximate ones; ``oldest_age_s`` and ``visibility_timeout_s`` are seconds;
    ``lambda_errors`` and ``lambda_throttles`` are counts summed over the last :data:`METRIC_WINDOW_S` seconds (0
    without a datapoint: a function not invoked in the window);
    ``noisy_groups``, a fair queue's ``ApproximateNumberOfNoisyGroups`` (``None`` for a queue that is not fair, or
    without a datapoint: the emulator publishes none).
    """

    name: str  # STACK/JOB_TYPE
    job_type: str
    stack: str
    fifo: bool
    visible: int | None = None
    in_flight: int | None = None
    delayed: int | None = None
    oldest_age_s: float | None = None
    dead_letter: int | None = None
    visibility_timeout_s: int | None = None
    max_receive_count: int | None = None
    consumer: str = "none"  # "ecs", "lambda" or "none"
    ecs_running: int | None = None
    ecs_desired: int | None = None
    lambda_errors: int | None = None
    lambda_throttles: int | None = None
    note: str | None = None
    fair: bool = False
    noisy_groups: float | None = None

    @property
    def in_flight_share(self) -> float | None:
        """In-flight messages as a share of SQS's in-flight quota (:data:`sqslease.rules.SQS_IN_FLIGHT_QUOTA`)."""
        return None if self.in_flight is None else self.in_flight / SQS_IN_FLIGHT_QUOTA

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` form: every field above, plus ``in_flight_share``."""
        return {**asdict(self), "in_flight_share": self.in_flight_share}


def _int(attributes: dict[str, str] | None, name: str) -> int | None:
    value = (attributes or {}).get(name)
    return int(value) if value is not None and value.isdigit() else None


def _max_receive_count(attributes: dict[str, str] | None) -> int | None:
    redrive = (attributes or {}).get("RedrivePolicy")
    if not redrive:
        return None
    count = json.loads(redrive).get("maxReceiveCount")
    return int(count) if count is not None else None


def metric_queries(job_types: Sequence[JobType]) -> list[dict[str, Any]]:
    """The ``GetMetricData`` queries for ``job_types``: ``age<i>``, ``noisy<i>`` (a fair queue's), ``errors<i>``,
    ``throttles<i>`` (``i`` the job type's index)."""

    def query(query_id: str, namespace: str, metric: str, dimension: str, value: str, stat: str, period: int) -> Any:
        return {
            "Id": query_id,
            "ReturnData": True,
            "MetricStat": {
                "Metric": {
                    "Namespace": namespace,
                    "MetricName": metric,
                    "Dimensions": [{"Name": dimension, "Value": value}],
                },
                "Period": period,
                "Stat": stat,
            },
        }

    queries = []
    for i, job in enumerate(job_types):
        if job.queue_url is not None:
            name = queue_name(job.queue_url)
            queries.append(
                query(f"age{i}", "AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", name, "Maximum", 60)
            )
            if job.fair:
                queries.append(
                    query(f"noisy{i}", "AWS/SQS", "ApproximateNumberOfNoisyGroups", "QueueName", name, "Maximum", 60)
                )
        if isinstance(job.consumer, LambdaConsumer) and job.consumer.function_name:
            function = job.consumer.function_name
            for kind, metric in (("errors", "Errors"), ("throttles", "Throttles")):
                queries.append(
                    query(f"{kind}{i}", "AWS/Lambda", metric, "FunctionName", function, "Sum", METRIC_WINDOW_S)
                )
    return queries


def read_metrics(cloudwatch: Any, job_types: Sequence[JobType], now: datetime.datetime) -> dict[str, float]:
    """Query id -> its latest value (:data:`LATEST_QUERIES`) or its sum over the window; ids without data are absent.
    At most 500 queries a call (CloudWatch's limit)."""
    queries = metric_queries(job_types)
    values: dict[str, float] = {}
    start = now - datetime.timedelta(seconds=METRIC_WINDOW_S)
    for first in range(0, len(queries), 500):
        request: dict[str, Any] = {
            "MetricDataQueries": queries[first : first + 500],
            "StartTime": start,
            "EndTime": now,
            "ScanBy": "TimestampDescending",
        }
        while True:
            response = cloudwatch.get_metric_data(**request)
            for result in response.get("MetricDataResults", []):
                points = result.get("Values") or []
                if not points or result["Id"] in values:
                    continue
                latest = result["Id"].startswith(LATEST_QUERIES)
                values[result["Id"]] = float(points[0]) if latest else float(sum(points))
            if not response.get("NextToken"):
                break
            request["NextToken"] = response["NextToken"]
    return values


#: ``DescribeServices``' error codes for a cluster that is gone: its services are "not found", not a failure.
_NO_CLUSTER = frozenset({"ClusterNotFoundException", "ClusterNotFound"})


def read_services(ecs: Any, job_types: Sequence[JobType]) -> dict[str, dict[str, int]]:
    """Service ARN (and name) -> ``{"running": n, "desired": n}``, ten services a ``DescribeServices`` call per
    cluster. A service or cluster deleted outside its stack is absent, never an error."""
    from botocore.exceptions import ClientError

    by_cluster: dict[str, list[str]] = defaultdict(list)
    for job in job_types:
        if isinstance(job.consumer, EcsConsumer) and job.consumer.service:
            by_cluster[job.consumer.cluster or "default"].append(job.consumer.service)
    found: dict[str, dict[str, int]] = {}
    for cluster, services in by_cluster.items():
        for first in range(0, len(services), 10):
            try:
                response = ecs.describe_services(cluster=cluster, services=services[first : first + 10])
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") in _NO_CLUSTER:
                    break
                raise
            for service in response.get("services", []):
                if service.get("status") == "INACTIVE":  # deleted: DescribeServices still lists it for a while
                    continue
                counts = {
                    "running": int(service.get("runningCount", 0)),
                    "desired": int(service.get("desiredCount", 0)),
                }
                found[service["serviceArn"]] = counts
                found[service.get("serviceName", "")] = counts
    return found


def job_status(
    index: int,
    job: JobType,
    queue: dict[str, str] | None,
    dead_letter: dict[str, str] | None,
    metrics: dict[str, float],
    services: dict[str, dict[str, int]],
) -> JobTypeStatus:
    """One row from what was read (pure)."""
    consumer, running, desired, errors, throttles = "none", None, None, None, None
    notes = []
    if job.queue_url is None:
        notes.append("its queue's URL is unknown: the queue is another stack's")
    elif queue is None:
        notes.append(f"its {missing_queue(job.queue_url, job.adopted)}")
    if job.dead_letter_queue_url is not None and dead_letter is None:
        notes.append(f"its dead-letter {missing_queue(job.dead_letter_queue_url, job.adopted)}")
    if isinstance(job.consumer, EcsConsumer):
        consumer = "ecs"
        service = services.get(job.consumer.service or "")
        if service is not None:
            running, desired = service["running"], service["desired"]
        else:
            notes.append("the ECS service was not found")
    elif isinstance(job.consumer, LambdaConsumer):
        consumer = "lambda"
        # Lambda publishes Errors and Throttles only for a function invoked: no datapoint in the window is none.
        # CloudWatch sums them as floats; they are counts
        errors, throttles = round(metrics.get(f"errors{index}", 0.0)), round(metrics.get(f"throttles{index}", 0.0))
    return JobTypeStatus(
        name=job.name,
        job_type=job.job_type,
        stack=job.stack,
        fifo=job.fifo,
        visible=_int(queue, "ApproximateNumberOfMessages"),
        in_flight=_int(queue, "ApproximateNumberOfMessagesNotVisible"),
        delayed=_int(queue, "ApproximateNumberOfMessagesDelayed"),
        oldest_age_s=metrics.get(f"age{index}"),
        dead_letter=_int(dead_letter, "ApproximateNumberOfMessages"),
        visibility_timeout_s=_int(queue, "VisibilityTimeout"),
        max_receive_count=_max_receive_count(queue),
        consumer=consumer,
        ecs_running=running,
        ecs_desired=desired,
        lambda_errors=errors,
        lambda_throttles=throttles,
        note="; ".join(notes) or None,
        fair=job.fair,
        noisy_groups=metrics.get(f"noisy{index}") if job.fair else None,
    )


def read_status(
    job_types: Sequence[JobType], sqs: Any, cloudwatch: Any, ecs: Any, now: datetime.datetime | None = None
) -> list[JobTypeStatus]:
    """Every job type's row, in ``job_types``' order (boto3 clients in; ``now`` defaults to the UTC time)."""
    now = now or datetime.datetime.now(datetime.UTC)
    urls = sorted({u for j in job_types for u in (j.queue_url, j.dead_letter_queue_url) if u is not None})
    with read_pool() as pool:
        attributes = dict(
            zip(urls, pool.map(lambda url: queue_attributes(sqs, url, _QUEUE_ATTRIBUTES), urls), strict=True)
        )
        metrics_future = pool.submit(read_metrics, cloudwatch, job_types, now)
        services_future = pool.submit(read_services, ecs, job_types)
        metrics, services = metrics_future.result(), services_future.result()
    return [
        job_status(
            i,
            job,
            attributes.get(job.queue_url or ""),
            attributes.get(job.dead_letter_queue_url or ""),
            metrics,
            services,
        )
        for i, job in enumerate(job_types)
    ]
