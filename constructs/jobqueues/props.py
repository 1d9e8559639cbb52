"""The props of a job type, as typed declarations a type checker can hold user code to.

``JobQueue(self, "Job", **props: Unpack[JobQueueProps])`` and ``JobQueueStacks.add(name, **props)`` take the
same ``JobQueueProps``, so ``processing_p99=5`` is a type error in both. Every prop is also checked where it
enters at run time (:mod:`jobqueues.inputs`), for users without a type checker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from aws_cdk import Duration
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from jobqueues.alarms import JobQueueAlarmProps


class QueueOptions(TypedDict, total=False):
    """Queue settings shared by every kind of job type (``JobQueue``, ``LambdaJob``, ``EcsJob``).

    max_receive_count:
        Deliveries before a message moves to the dead-letter queue, 1-1000. Default: 5.
    retention_period:
        How long the source queue keeps a message, 1 min - 14 days (whole seconds, rounded up).
        Default: 4 days.
    dlq_retention_period:
        How long the DLQ keeps a message; longer than ``retention_period``, because a message keeps its
        original enqueue time there. Default: 14 days.
    fifo:
        FIFO queues (both get ``.fifo`` names); consumers keep order per message group. Default: False.
    content_based_deduplication:
        FIFO only: deduplicate on the body's SHA-256. Default: False.
    queue_name:
        Physical name of the source queue; the DLQ's is ``<queue_name>-dlq`` (before ``.fifo``).
        Default: ``<stack name>-<job type>``.
    encryption_key:
        KMS key that encrypts both queues. Default: SQS-managed server-side encryption.
    alarms:
        Alarm thresholds and actions. Default: ``JobQueueAlarmProps()``.
    max_queue_time:
        The latency the team promises: an alarm fires when the p99 queue time (from ``SentTimestamp`` to the
        start of the run, milliseconds in the ``QueueTime`` metric ``sqslease`` consumers write) stays above it
        for 15 min. Positive, at most ``retention_period``; needs the alarms on. Default: none (no alarm).
    """

    max_receive_count: int
    retention_period: Duration
    dlq_retention_period: Duration
    fifo: bool
    content_based_deduplication: bool
    queue_name: str
    encryption_key: kms.IKey
    alarms: JobQueueAlarmProps
    max_queue_time: Duration


class LeaseOptions(TypedDict, total=False):
    """How long one message may take, and whether its consumer extends its lease.

    processing_p99:
        Measured p99 handler time of one message (any ``Duration``, milliseconds too). The visibility timeout
        is derived from it: ``max(2 x p99, 10 s)``, whole seconds rounded up. Default: none.
    visibility_timeout:
        Explicit visibility timeout, 0 s - 12 h (whole seconds, rounded up). Not below the derived one unless
        ``lease_extension`` is set. Default: derived.
    lease_extension:
        The consumer heartbeats its leases (``sqslease``), so the visibility timeout is a lease length rather
        than a worst-case bound. Default: False.
    max_processing_time:
        The longest one message may take, at most 12 h; above the visibility timeout only with
        ``lease_extension``. Default: none.
    """

    processing_p99: Duration
    visibility_timeout: Duration
    lease_extension: bool
    max_processing_time: Duration


class JobQueueProps(QueueOptions, LeaseOptions, total=False):
    """Props of :class:`jobqueues.JobQueue` and :meth:`jobqueues.JobQueueStacks.add`.

    lambda_timeout:
        Timeout of the consuming Lambda function, 2 s - 15 min in whole seconds, above ``processing_p99``; the
        visibility timeout is then at least ``6 x lambda_timeout + max_batching_window``, or
        ``lambda_timeout + max_batching_window + 10 s`` with ``lease_extension``. Default: none.
    max_batching_window:
        Maximum batching window of the Lambda event source, 0 s - 5 min in whole seconds; not for FIFO.
        Default: 0 s.
    """

    lambda_timeout: Duration
    max_batching_window: Duration


class LambdaJobProps(QueueOptions, total=False):
    """Props of :class:`jobqueues.LambdaJob`: the queue options plus the function and its event source.

    code:
        The handler's code (required), e.g. ``lambda_.Code.from_asset("lambda_src/handlers")``. The ``sqslease``
        runtime comes in a layer; the code needs only the handler.
    handler:
        The per-message function, ``module.function`` (required), called as ``handler(body, message)``; raising
        fails that record only. The function's Lambda handler is ``sqslease.lambda_entry.handler``.
    timeout:
        The function timeout, 2 s - 15 min in whole seconds (required), above ``processing_p99``. The visibility
        timeout is derived from it: ``6 x timeout + max_batching_window``, or ``timeout + max_batching_window +
        10 s`` with ``lease_extension``.
    batch_size:
        Records per invocation: 1-10,000 (above 10 only with a batching window), at most 10 for FIFO.
        Default: 10.
    max_batching_window:
        How long the event source gathers records, 0 s - 5 min in whole seconds; not for FIFO. Default: 0 s.
    max_concurrency:
        Cap on concurrent invocations by the event source, 2-1000. Default: no cap.
    memory_size:
        Function memory in MiB. Default: 512.
    processing_p99:
        Measured p99 of one message, below ``timeout``; with it, the VT is at least ``max(2 x p99, 10 s)`` too,
        and the p99-drift alarm fires above it (above half the timeout without it). Default: none.
    lease_extension:
        The function renews every record's lease as the invocation starts and heartbeats it, so the VT can be
        the shorter ``timeout + max_batching_window + 10 s``: faster retries after a crash, but a batch the
        event source holds longer (retrying throttled invocations, see :class:`jobqueues.LambdaJob`) becomes
        visible again before it runs. Default: False (the VT of ``6 x timeout + max_batching_window`` covers that).
    max_processing_time:
        The longest one message may take. Default: none.
    environment:
        More environment variables for the function. Default: none.
    log_retention:
        Retention of the function's log group. Default: one month.
    """

    code: lambda_.Code
    handler: str
    timeout: Duration
    batch_size: int
    max_batching_window: Duration
    max_concurrency: int
    memory_size: int
    processing_p99: Duration
    lease_extension: bool
    max_processing_time: Duration
    environment: Mapping[str, str]
    log_retention: logs.RetentionDays


class EcsJobProps(QueueOptions, LeaseOptions, total=False):
    """Props of :class:`jobqueues.EcsJob`: the queue and lease options plus the Fargate service.

    ``processing_p99`` (or ``visibility_timeout``) is required; ``lease_extension`` defaults to True here: the
    worker heartbeats its leases, up to ``max_processing_time``.

    handler:
        The per-message function, ``package.module:function`` (required), called as ``handler(body, message)``.
    cluster:
        The ECS cluster. Default: one per stack, shared by its ECS jobs, with Container Insights, in a new VPC
        (two availability zones, one NAT gateway, flow logs).
    image:
        The container image, with ``sqslease`` and the handler installed. Default: built from the
        ``Dockerfile`` in ``image_directory``; or the registry image in context ``jobqueues:image`` when set
        (the local emulator has no Docker).
    image_directory:
        The directory whose ``Dockerfile`` builds the default image (sqslease and the handlers installed),
        relative to the current directory; missing, or without a ``Dockerfile``, is a synth error. Not with
        ``image``. Default: ``"lambda_src"``.
    concurrency:
        Handlers running at once in one task, 1-1000. Default: 4.
    min_tasks:
        Tasks when idle. Default: 0 (scaled out from 0 as soon as a message is visible).
    max_tasks:
        Tasks at most. Default: 10.
    target_backlog_per_task:
        Target of the scaling policy: outstanding messages (visible + in flight) per running task.
        Default: ``concurrency``.
    cpu:
        Task CPU units. Default: 256.
    memory_limit_mib:
        Task memory in MiB. Default: 512.
    shutdown_grace:
        After SIGTERM, how long running handlers may finish before their messages are released; the
        container's stopTimeout is this + 5 s, at most 120 s. Default: 25 s.
    log_retention:
        Retention of the worker's log group. Default: one month.
    """

    handler: str
    cluster: ecs.ICluster
    image: ecs.ContainerImage
    image_directory: str
    concurrency: int
    min_tasks: int
    max_tasks: int
    target_backlog_per_task: int
    cpu: int
    memory_limit_mib: int
    shutdown_grace: Duration
    log_retention: logs.RetentionDays
