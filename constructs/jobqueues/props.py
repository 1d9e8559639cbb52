"""The props of a job type, as typed declarations a type checker can hold user code to.

``JobQueue(self, "Job", **props: Unpack[JobQueueProps])`` and ``JobQueueStacks.add(name, **props)`` take the
same ``JobQueueProps``, so ``processing_p99=5`` is a type error in both. Every prop is also checked where it
enters at run time (:mod:`jobqueues.inputs`), for users without a type checker.
"""

from __future__ import annotations

from typing import TypedDict

from aws_cdk import Duration
from aws_cdk import aws_kms as kms

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
    """

    max_receive_count: int
    retention_period: Duration
    dlq_retention_period: Duration
    fifo: bool
    content_based_deduplication: bool
    queue_name: str
    encryption_key: kms.IKey
    alarms: JobQueueAlarmProps


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
        Timeout of the consuming Lambda function, 1 s - 15 min in whole seconds; the visibility timeout is
        then at least ``6 x lambda_timeout + max_batching_window``. Default: none.
    max_batching_window:
        Maximum batching window of the Lambda event source, 0 s - 5 min in whole seconds; not for FIFO.
        Default: 0 s.
    """

    lambda_timeout: Duration
    max_batching_window: Duration
