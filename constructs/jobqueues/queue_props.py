"""The props every kind of job type shares, as typed declarations: :class:`QueueOptions` and :class:`LeaseOptions`,
and :class:`JobQueueProps`, a ``JobQueue``'s (:mod:`jobqueues.props` holds the consumers').
"""

from __future__ import annotations

from typing import TypedDict

from aws_cdk import Duration, RemovalPolicy, Size
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs

from jobqueues.alarms import JobQueueAlarmProps
from jobqueues.idempotency_table import IdempotencyTable


class QueueOptions(TypedDict, total=False):
    """Queue settings shared by every kind of job type (``JobQueue``, ``LambdaJob``, ``EcsJob``).

    max_receive_count:
        Deliveries before a message moves to the dead-letter queue, 1-1000.
    retention_period:
        How long the source queue keeps a message, 1 min - 14 days (whole seconds, rounded up).
    dlq_retention_period:
        How long the DLQ keeps a message; longer than ``retention_period``, because a message keeps its original enqueue
        time there.
    fifo:
        FIFO queues (both get ``.fifo`` names); consumers keep order per message group. A failed message is retried in
        process while its group's later messages wait, held, and at ``max_receive_count`` its consumer sends it to the
        DLQ itself: its group goes on, none of its later messages having spent a receive. A Lambda consumer retries only
        while the back-off fits in its invocation (synth warning ``jobqueues:fifoRetriesExceedLambdaTimeout``
        otherwise).
    content_based_deduplication:
        FIFO only: deduplicate on the body's SHA-256.
    queue_name:
        Physical name of the source queue; the DLQ's is ``<queue_name>-dlq`` (before ``.fifo``).
    encryption_key:
        KMS key that encrypts both queues.
    alarms:
        Alarm thresholds and actions.
    delivery_delay:
        Source queue only: how long every new message stays invisible before its first delivery, 0 s - 15 min in whole
        seconds (FIFO too: a queue's delay, as SQS has no per-message delay there). A message ages while delayed, so the
        delay counts against ``retention_period`` and the oldest-message-age alarm: its default threshold adds the
        delay, and an explicit one must be above it.
    max_message_size:
        Source queue only: the largest message (body and attributes) it accepts, 1 KiB - 1 MiB in whole bytes
        (CloudFormation's range; regions without 1 MiB messages take 256 KiB at most). ``jobqueues send`` reads it from
        the queue. The DLQ keeps SQS's default, its region's maximum, so that a message ``sqslease`` dead-letters with
        its added attributes fits.
    deduplication_scope:
        FIFO only, both queues: ``sqs.DeduplicationScope.MESSAGE_GROUP`` with ``fifo_throughput_limit``
        ``PER_MESSAGE_GROUP_ID`` is SQS's high-throughput FIFO (one without the other is refused).
    fifo_throughput_limit:
        FIFO only, both queues: ``sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID`` with ``deduplication_scope``
        ``MESSAGE_GROUP``, see there.
    removal_policy:
        What deleting the stack (or replacing the queue) does to the source queue and the jobs still in it:
        ``RemovalPolicy.DESTROY``, ``RETAIN`` or ``RETAIN_ON_UPDATE_OR_DELETE``.
    dlq_removal_policy:
        The same for the DLQ. A retained DLQ keeps its name: delete it once read, before deploying the stack again under
        the same name.
    max_queue_time:
        The latency the team promises: an alarm fires when the p99 queue time (from ``SentTimestamp`` to the start of
        the run, milliseconds in the ``QueueTime`` metric ``sqslease`` consumers write) stays above it for 15 min.
        Positive, at most ``retention_period``; needs the alarms on.
    max_time_to_drain:
        How long the backlog may take to drain: an alarm on the consumer fires when the backlog (visible + in flight)
        divided by the deletion rate stays above it for 15 min (docs/monitoring.md). At least 5 min (the deletion rate
        is measured over 5 min), at most ``retention_period``; needs the alarms on and a consumer.
    fair:
        A fair queue: the queue is shared by tenants, each message's ``MessageGroupId`` naming its tenant, and SQS keeps
        the quiet tenants' wait low while one floods it (docs/fair-queues.md). Adds the dashboard's noisy-group and
        quiet-group graphs and an alarm on the quiet groups' oldest message, at ``max_queue_time`` (else at the
        oldest-message-age alarm's threshold). Standard queues only: not with ``fifo``.
    idempotency:
        Exactly-once completion (``sqslease``'s idempotency records, docs/sqslease.md): ``True`` gives the job type the
        stack's ``IdempotencyTable`` (one per stack and KMS key, shared by its job types: on-demand, TTL, point-in-time
        recovery, encrypted with ``encryption_key`` when there is one); or pass an ``IdempotencyTable`` (or a
        ``dynamodb.ITable`` with partition key ``pk``, string) of your own. The consumer gets
        ``SQSLEASE_IDEMPOTENCY_TABLE`` and ``SQSLEASE_IDEMPOTENCY_RETENTION_PERIOD`` (the longer of the two queues'
        retention periods, or 14 days for a token) and may use PutItem, GetItem, UpdateItem and DeleteItem on its own
        job type's keys only (``dynamodb:LeadingKeys`` ``<job type>#*``). The job type may not contain ``#``.
    payload_bucket:
        Payloads larger than the queue takes (its ``max_message_size``: 256 KiB by default, 1 MiB at most), kept in S3
        with a pointer in the message, in the AWS SQS Extended Client's wire format (docs/sqslease.md, "the claim
        check"): ``True`` gives the job type a bucket of its own, encrypted as its queues are (their KMS key, else
        S3-managed keys), TLS only, public access blocked, its objects expiring a day after the longest a pointer can
        live in the queues (``retention_period`` plus ``dlq_retention_period``), kept when the stack is deleted; or pass
        an ``s3.IBucket`` of your own. The consumer reads a payload before the handler and may ``s3:GetObject`` (and
        ``s3:DeleteObject``) on the bucket's objects; ``grant_send_messages`` adds ``s3:PutObject``. Not with
        ``content_based_deduplication``.
    delete_payloads:
        The consumer deletes a payload's object once its message's delete is confirmed (``SQSLEASE_DELETE_PAYLOADS``);
        ``False`` keeps every object for the bucket's lifecycle (and grants no ``s3:DeleteObject``). Only with
        ``payload_bucket``.
    """

    max_receive_count: int
    retention_period: Duration
    dlq_retention_period: Duration
    fifo: bool
    content_based_deduplication: bool
    queue_name: str
    encryption_key: kms.IKey
    alarms: JobQueueAlarmProps
    delivery_delay: Duration
    max_message_size: Size
    deduplication_scope: sqs.DeduplicationScope
    fifo_throughput_limit: sqs.FifoThroughputLimit
    removal_policy: RemovalPolicy
    dlq_removal_policy: RemovalPolicy
    max_queue_time: Duration
    max_time_to_drain: Duration
    fair: bool
    idempotency: bool | IdempotencyTable | dynamodb.ITable
    payload_bucket: bool | s3.IBucket
    delete_payloads: bool


class LeaseOptions(TypedDict, total=False):
    """How long one message may take, and whether its consumer extends its lease.

    processing_p99:
        Measured p99 handler time of one message (any ``Duration``, milliseconds too). The visibility timeout is derived
        from it: ``max(2 x p99, 10 s)``, whole seconds rounded up.
    visibility_timeout:
        Explicit visibility timeout, 0 s - 12 h (whole seconds, rounded up). Not below the derived one unless
        ``lease_extension`` is set.
    lease_extension:
        The consumer heartbeats its leases (``sqslease``), so the visibility timeout is a lease length rather than a
        worst-case bound.
    max_processing_time:
        The longest one message may take, from its handler's start: a handler still running then has failed
        (``timed_out``). At most 12 h; above the visibility timeout only with ``lease_extension``, and then at most 12 h
        less a minute and the visibility timeout (a lease lasts at most 12 h from its receive).
    """

    processing_p99: Duration
    visibility_timeout: Duration
    lease_extension: bool
    max_processing_time: Duration


class JobQueueProps(QueueOptions, LeaseOptions, total=False):
    """Props of :class:`jobqueues.JobQueue` and :meth:`jobqueues.JobQueueStacks.add`.

    lambda_timeout:
        Timeout of the consuming Lambda function, 2 s - 15 min in whole seconds, above ``processing_p99``; the
        visibility timeout is then at least ``6 x lambda_timeout + max_batching_window``, or ``lambda_timeout +
        max_batching_window + 10 s`` with ``lease_extension``.
    max_batching_window:
        Maximum batching window of the Lambda event source, 0 s - 5 min in whole seconds; not for FIFO.
    """

    lambda_timeout: Duration
    max_batching_window: Duration
