"""``IJobQueue``: what consumers, metrics, alarms and dashboards need of a job queue, declared or imported.

The arrow points one way, as in aws-cdk-lib (``SqsEventSource`` takes an ``IQueue``): the consumer binders and
the metric, alarm and dashboard factories take this interface, never :class:`jobqueues.JobQueue`, so the queue
module never depends on its consumers' modules, and a queue made elsewhere
(:meth:`jobqueues.JobQueue.from_queue_attributes`) gets the same consumers.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct, Node

from jobqueues.consumer_contract import ConsumerContract


@runtime_checkable
class IJobQueue(Protocol):
    """One job type's queue + DLQ pair and the lease facts its consumers are held to.

    Durations are in seconds; ``None`` means not declared (or an unresolved token).
    """

    @property
    def node(self) -> Node:
        """The construct node (errors name its path)."""
        ...

    @property
    def job_type(self) -> str:
        """The job type name: metrics, dashboards and profiles are keyed by it."""
        ...

    @property
    def queue(self) -> sqs.IQueue:
        """The source queue consumers receive from."""
        ...

    @property
    def dead_letter_queue(self) -> sqs.IQueue:
        """Where messages go after ``max_receive_count`` receives, and non-retryable failures at once."""
        ...

    @property
    def visibility_timeout(self) -> Duration:
        """The source queue's visibility timeout."""
        ...

    @property
    def visibility_timeout_seconds(self) -> float | None:
        """The visibility timeout in seconds; ``None`` for an unresolved token."""
        ...

    @property
    def lease_extension(self) -> bool:
        """The consumer extends its leases (``sqslease``'s heartbeat)."""
        ...

    @property
    def processing_p99_seconds(self) -> float | None:
        """The declared p99 handler time of one message, in seconds."""
        ...

    @property
    def max_processing_time_seconds(self) -> float | None:
        """The longest one message may take, in seconds."""
        ...

    @property
    def lambda_timeout_seconds(self) -> float | None:
        """The Lambda function timeout the visibility timeout was derived from, in seconds."""
        ...

    @property
    def max_batching_window_seconds(self) -> float:
        """The Lambda event source's batching window, in seconds (0: none)."""
        ...

    @property
    def max_queue_time_seconds(self) -> float | None:
        """The declared ``max_queue_time`` (the p99 wait promised), in seconds; ``None`` when not declared."""
        ...

    @property
    def max_time_to_drain_seconds(self) -> float | None:
        """The declared ``max_time_to_drain`` (the time-to-drain alarm's bound), in seconds; ``None``: no alarm."""
        ...

    @property
    def delivery_delay_seconds(self) -> float:
        """The source queue's delivery delay, in seconds (0: none, a token, or a queue made elsewhere)."""
        ...

    @property
    def fifo(self) -> bool:
        """Both queues are FIFO: consumers keep order per message group."""
        ...

    @property
    def fair(self) -> bool:
        """A fair queue: its message groups are tenants, SQS keeps the quiet ones' wait low (docs/fair-queues.md)."""
        ...

    @property
    def quiet_group_age_seconds(self) -> float | None:
        """A fair queue's quiet-group alarm threshold, in seconds; ``None``: not fair, or no alarms."""
        ...

    @property
    def alarm_topic(self) -> sns.ITopic | None:
        """Where alarm notifications go; consumers send theirs there too."""
        ...

    @property
    def idempotency_table(self) -> dynamodb.ITable | None:
        """The table of the consumer's idempotency records; ``None``: idempotency off."""
        ...

    @property
    def payload_bucket(self) -> s3.IBucket | None:
        """The bucket of payloads larger than the queue takes; ``None``: none."""
        ...

    #: Where the job type's one consumer is bound (the scope of its alarms and dashboard); ``None``: no consumer yet.
    bound_consumer: Construct | None

    def grant_idempotency(self, grantee: iam.IGrantable) -> iam.Grant | None:
        """Let a consumer keep this job type's idempotency records, on its own keys only."""
        ...

    def grant_payloads(self, grantee: iam.IGrantable) -> iam.Grant | None:
        """Let a consumer read (and delete) the payloads of its payload bucket, if it has one."""
        ...

    def grant_send_messages(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let a producer send messages."""
        ...

    def grant_consume_messages(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let a consumer receive, extend, delete and dead-letter messages."""
        ...

    def consumer_contract(self) -> ConsumerContract:
        """The ``sqslease`` settings a consumer of this queue runs with, validated at synth."""
        ...

    def metric_visible(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Messages waiting to be received (Maximum)."""
        ...

    def metric_in_flight(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Messages received and not yet deleted (Maximum)."""
        ...

    def metric_oldest_message_age(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Age of the oldest message, in seconds (Maximum)."""
        ...

    def metric_deleted(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Messages deleted, that is finished (Sum)."""
        ...

    def metric_dead_letter_queue_depth(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Messages in the DLQ (Maximum)."""
        ...

    def metric_processing_time(self, statistic: str = "p99", period: Duration | None = None) -> cloudwatch.Metric:
        """Handler time of one message, in milliseconds, from ``sqslease``'s EMF lines."""
        ...

    def metric_queue_time(self, statistic: str = "p99", period: Duration | None = None) -> cloudwatch.Metric:
        """Time from sent to the start of a run, in milliseconds, from ``sqslease``'s EMF lines."""
        ...

    def metric_extensions(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Lease extensions (Sum)."""
        ...

    def metric_leases_lost(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Leases lost while the handler ran (Sum)."""
        ...
