"""Every default of a job type declaration, in one place (plain numbers: no aws_cdk import).

The plans apply them (:mod:`jobqueues.declaration`, :mod:`jobqueues.lambda_job_plan`,
:mod:`jobqueues.ecs_job_plan`); :mod:`jobqueues.prop_defaults` says which prop each is the default of, and the docs'
prop tables are rendered from these values.
"""

from __future__ import annotations

import math

from sqslease.rules import (
    DEFAULT_LAMBDA_BATCH_SIZE,
    DEFAULT_SHUTDOWN_GRACE_S,
    DEFAULT_WORKER_CONCURRENCY,
    SQS_IN_FLIGHT_QUOTA,
)

#: Source queue retention: 4 days, SQS's own default.
RETENTION_S = 4 * 86_400
#: Dead-letter queue retention: 14 days, the SQS maximum, so a dead-lettered message lives as long as it can.
DLQ_RETENTION_S = 14 * 86_400
#: Deliveries before a message moves to the DLQ.
MAX_RECEIVE_COUNT = 5
#: Source queue delivery delay: none.
DELIVERY_DELAY_S = 0
#: A Lambda event source's batching window: none.
MAX_BATCHING_WINDOW_S = 0
#: Largest message the source queue accepts: 256 KiB, the SQS maximum in every region (1 MiB only in some), so a
#: job queue behaves the same wherever it is deployed.
MAX_MESSAGE_SIZE = 262_144
#: What a stack deletion does to the source queue: deletes it (its pending jobs have no consumer left).
REMOVAL_POLICY = "DESTROY"
#: What a stack deletion does to the DLQ: keeps it, with its messages (the evidence of failures).
DLQ_REMOVAL_POLICY = "RETAIN"
#: In-flight alarm: this share of the quota.
IN_FLIGHT_FRACTION = 0.8
IN_FLIGHT_QUOTA = SQS_IN_FLIGHT_QUOTA
#: DLQ alarm: this many visible messages.
DLQ_DEPTH = 1
#: Context key: a registry image for every EcsJob without an ``image`` (the local emulator has no Docker).
IMAGE_CONTEXT = "jobqueues:image"
#: A consumer's log group keeps its lines this long (the ``logs.RetentionDays`` member's name).
LOG_RETENTION = "ONE_MONTH"
#: A Lambda job's records per invocation, and its function's memory in MiB.
LAMBDA_BATCH_SIZE = DEFAULT_LAMBDA_BATCH_SIZE
LAMBDA_MEMORY_MIB = 512
#: An EcsJob's lease extension: on (its worker heartbeats its leases while their handlers may run).
ECS_LEASE_EXTENSION = True
#: An EcsJob's handlers per task, its task count bounds, its task size (CPU units, memory in MiB).
ECS_CONCURRENCY = DEFAULT_WORKER_CONCURRENCY
ECS_MIN_TASKS = 0
ECS_MAX_TASKS = 10
ECS_CPU = 256
ECS_MEMORY_MIB = 512
#: Seconds an EcsJob's running handlers get after SIGTERM.
ECS_SHUTDOWN_GRACE_S = DEFAULT_SHUTDOWN_GRACE_S
#: The directory whose ``Dockerfile`` builds an EcsJob's default image.
ECS_IMAGE_DIRECTORY = "lambda_src"
#: An EcsJob's CPU architecture: Fargate's default.
ECS_CPU_ARCHITECTURE = "X86_64"
#: ``MeasuredProfiles`` warns about measurements older than this, in seconds: 30 days.
PROFILE_MAX_AGE_S = 30 * 86_400
#: Period of a consumer's alarms and dashboard graphs, in seconds (a p99 over fewer minutes is noise); the
#: time-to-drain alarm measures the deletion rate over it.
CONSUMER_PERIOD_S = 300
#: Bounds of the default oldest-message-age alarm threshold.
OLDEST_MESSAGE_AGE_MIN_S = 300


def oldest_message_age_s(
    visibility_timeout_s: float, retention_s: float, max_receive_count: int, delivery_delay_s: float = 0
) -> int:
    """Default threshold of the oldest-message-age alarm, in seconds.

    ``delivery_delay + max_receive_count x VT`` is how long a message may legitimately stay on the source queue
    (a delayed message ages while it waits, then is retried); older than that means consumers are not keeping
    up. At least 5 min (metric noise) and at most half the retention period (time to act before messages expire).
    """
    legitimate = delivery_delay_s + max_receive_count * visibility_timeout_s
    return int(min(max(legitimate, OLDEST_MESSAGE_AGE_MIN_S), retention_s // 2))


def queue_time_threshold_ms(max_queue_time_s: float) -> int:
    """The queue-time alarm's threshold: ``max_queue_time`` in whole milliseconds (the metric's unit), rounded up."""
    return math.ceil(max_queue_time_s * 1000)


def quiet_group_age_s(max_queue_time_s: float | None, oldest_message_age_s: float) -> float:
    """Threshold of a fair queue's quiet-group alarm (``ApproximateAgeOfOldestMessageInQuietGroups``), in seconds:
    the promise the job type already declares, never a second number. ``max_queue_time`` when declared (the
    queue-time alarm's threshold, :func:`queue_time_threshold_ms`, in seconds), else the oldest-message-age alarm's
    threshold ``oldest_message_age_s`` (``alarms.oldest_message_age``, or :func:`oldest_message_age_s`)."""
    if max_queue_time_s is not None:
        return queue_time_threshold_ms(max_queue_time_s) / 1000
    return oldest_message_age_s
