"""What every job queue offers, declared (:class:`jobqueues.JobQueue`) or imported
(:meth:`jobqueues.JobQueue.from_queue_attributes`): grants, metrics (:mod:`jobqueues.job_queue_metrics`), the
consumer contract and consumers.

As aws-cdk-lib's ``QueueBase``: the subclasses set the queues and the lease facts; everything here is derived.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct

from jobqueues.consumer_alarms import ConsumerAlarms
from jobqueues.consumer_binding import consumer_scope
from jobqueues.consumer_contract import ConsumerContract
from jobqueues.defaults import ECS_MAX_TASKS, ECS_MIN_TASKS
from jobqueues.ecs_consumer import bind_ecs_consumer
from jobqueues.idempotency_table import grant_job_type
from jobqueues.inputs import is_token
from jobqueues.job_queue_metrics import JobQueueMetrics
from jobqueues.lambda_consumer import bind_lambda_consumer
from jobqueues.payload_bucket import grant_consumer, grant_producer
from jobqueues.registry import RegisteredConstruct, registry_of
from sqslease.rules import (
    DEFAULT_LAMBDA_BATCH_SIZE,
    DEFAULT_SHUTDOWN_GRACE_S,
    DEFAULT_WORKER_CONCURRENCY,
    SQS_MAX_RETENTION_S,
)

# What sqs.Queue.grant_send_messages grants on the queue itself.
_SEND_ACTIONS = ("sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl")


class JobQueueBase(JobQueueMetrics, RegisteredConstruct):
    """A job queue's derived behaviour (an :class:`jobqueues.interface.IJobQueue`). Subclasses set the attributes
    below, and :class:`jobqueues.job_queue_metrics.JobQueueMetrics`' (the job type and the queues), before anything
    reads them."""

    #: True when the queues are this construct's own resources (a declared ``JobQueue``), False when adopted.
    owns_queues: bool = False
    #: The source queue's visibility timeout.
    visibility_timeout: Duration
    #: The visibility timeout in seconds; ``None`` when it is an unresolved token.
    visibility_timeout_seconds: float | None
    #: True when the consumer extends its leases.
    lease_extension: bool
    #: The declared p99 handler time, in seconds; ``None`` when not declared.
    processing_p99_seconds: float | None
    #: The longest one message may take, in seconds; ``None`` when not declared.
    max_processing_time_seconds: float | None
    #: The Lambda function timeout the VT was derived from, in seconds; ``None`` when not declared.
    lambda_timeout_seconds: float | None
    #: The event source's batching window, in seconds (Lambda consumers).
    max_batching_window_seconds: float
    #: The declared ``max_queue_time`` in seconds (the queue-time alarm's bound); ``None`` when not declared.
    max_queue_time_seconds: float | None = None
    #: The declared ``max_time_to_drain`` in seconds (the time-to-drain alarm's bound); ``None`` when not declared.
    max_time_to_drain_seconds: float | None = None
    #: The source queue's delivery delay in seconds (0: none, a token, or a queue made elsewhere).
    delivery_delay_seconds: float = 0
    #: Whether both queues are FIFO.
    fifo: bool
    #: A fair queue: its message groups are tenants (docs/fair-queues.md).
    fair: bool = False
    #: A fair queue's quiet-group alarm threshold, in seconds; ``None``: not fair, or no alarms.
    quiet_group_age_seconds: float | None = None
    #: Receives before a message moves to the DLQ, when known at synth (``None``: a token, or an adopted queue).
    known_max_receive_count: int | None = None
    #: Where alarm notifications go; consumers send theirs there too.
    alarm_topic: sns.ITopic | None
    #: The table of the consumer's idempotency records (``idempotency``); ``None``: idempotency off.
    idempotency_table: dynamodb.ITable | None = None
    #: Seconds a COMPLETED record must outlive its message (``SQSLEASE_IDEMPOTENCY_RETENTION_PERIOD``).
    idempotency_retention_seconds: float | None = None
    #: The bucket of payloads larger than the queue takes (``payload_bucket``); ``None``: none.
    payload_bucket: s3.IBucket | None = None
    #: Whether the consumer deletes a payload's object after its message (``delete_payloads``).
    delete_payloads: bool = True
    #: Where the job type's one consumer is bound (the scope of its alarms and dashboard); ``None``: no consumer yet.
    bound_consumer: Construct | None = None
    _contract: ConsumerContract | None = None

    # --- grants ------------------------------------------------------------------------------------------------
    def grant_send_messages(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let a producer send messages to the job queue, and with a KMS key ``kms:GenerateDataKey`` and
        ``kms:Decrypt`` on it (what SQS needs to encrypt a message), nothing more. With a :attr:`payload_bucket`,
        ``s3:PutObject`` on its objects too (:func:`jobqueues.payload_bucket.grant_producer`)."""
        grant = self.queue.grant(grantee, *_SEND_ACTIONS)
        self._grant_key(grantee, "kms:GenerateDataKey", "kms:Decrypt")
        if self.payload_bucket is not None:
            grant_producer(self.payload_bucket, grantee, queue_key=self._queue_key())
        return grant

    def grant_consume_messages(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let a consumer receive, extend (ChangeMessageVisibility), delete, and dead-letter messages.

        The consumer also gets ``sqs:SendMessage`` on the DLQ so that ``sqslease`` can move a message that
        failed with a non-retryable error straight to the DLQ. With a KMS key: ``kms:Decrypt`` (receive) and
        ``kms:GenerateDataKey`` (send to the DLQ), nothing more.
        """
        grant = self.queue.grant_consume_messages(grantee)  # with a key: kms:Decrypt
        self.dead_letter_queue.grant(grantee, *_SEND_ACTIONS)
        self._grant_key(grantee, "kms:GenerateDataKey")
        return grant

    def grant_idempotency(self, grantee: iam.IGrantable) -> iam.Grant | None:
        """Let a consumer keep this job type's idempotency records: PutItem, GetItem, UpdateItem and DeleteItem on
        keys ``<job type>#*`` of :attr:`idempotency_table` only, and its KMS key if it has one. ``None`` (nothing
        granted) when idempotency is off."""
        if self.idempotency_table is None:
            return None
        return grant_job_type(self.idempotency_table, grantee, self.job_type)

    def grant_payloads(self, grantee: iam.IGrantable) -> iam.Grant | None:
        """Let a consumer read the payloads of :attr:`payload_bucket` (``s3:GetObject``), and delete them
        (``s3:DeleteObject``) unless :attr:`delete_payloads` is off. ``None`` (nothing granted) without a bucket."""
        if self.payload_bucket is None:
            return None
        return grant_consumer(self.payload_bucket, grantee, delete=self.delete_payloads, queue_key=self._queue_key())

    def _grant_key(self, grantee: iam.IGrantable, *actions: str) -> None:
        # Not the key's grant_encrypt_decrypt (what sqs.Queue's grants use): it adds kms:ReEncrypt* and
        # kms:GenerateDataKey*, wildcards SQS never uses.
        key = self._queue_key()
        if key is not None:
            key.grant(grantee, *actions)

    def _queue_key(self) -> kms.IKey | None:
        """The source queue's KMS key (``None``: SQS-managed); a declared job queue knows it without a round trip."""
        return self.queue.encryption_master_key

    # --- the consumer's settings, from the same declaration -----------------------------------------------------
    def consumer_contract(self) -> ConsumerContract:
        """The ``sqslease`` settings a consumer of this queue runs with: the real ``LeaseSettings``, validated.

        The lease length is the queue's visibility timeout, and leases are extended up to
        ``max_processing_time``; the queue and DLQ URLs are CloudFormation references resolved at deploy time.
        """
        contract = self._contract
        if contract is None:
            vt_s = self.visibility_timeout_seconds
            contract = self._contract = ConsumerContract.of(
                job_type=self.job_type,
                queue_url=self.queue.queue_url,
                dead_letter_queue_url=self.dead_letter_queue.queue_url,
                visibility_timeout_s=vt_s,
                visibility_timeout_token=None if vt_s is not None else str(self.visibility_timeout.to_seconds()),
                lease_extension=self.lease_extension,
                max_processing_time_s=self.max_processing_time_seconds,
                max_batching_window_s=self.max_batching_window_seconds,
                max_receive_count=self.known_max_receive_count,
                stack=registry_of(self).facts.name,
                delete_payloads=self.delete_payloads,
            )
            if self.idempotency_table is not None:
                retention = self.idempotency_retention_seconds or SQS_MAX_RETENTION_S
                contract = self._contract = contract.with_idempotency(self.idempotency_table.table_name, retention)
        return contract

    def consumer_settings(self) -> dict[str, str]:
        """:meth:`consumer_contract` as ``LeaseSettings`` field -> value, with ``queue_url``."""
        return self.consumer_contract().settings()

    def consumer_environment(self) -> dict[str, str]:
        """:meth:`consumer_settings` as the ``SQSLEASE_*`` environment variables ``sqslease`` reads."""
        return self.consumer_contract().environment()

    def worker_command(
        self, handler: str, concurrency: int = DEFAULT_WORKER_CONCURRENCY, shutdown_grace: Duration | None = None
    ) -> list[str]:
        """The container command of an ECS consumer: ``python -m sqslease.worker`` with this declaration's
        settings as options.

        :param handler: the per-message function, ``package.module:function``.
        :param concurrency: handlers running at once in one task. Default: 4.
        :param shutdown_grace: time running handlers get after SIGTERM. Default: the worker's,
            ``sqslease.rules.DEFAULT_SHUTDOWN_GRACE_S``.
        """
        grace_s = DEFAULT_SHUTDOWN_GRACE_S if shutdown_grace is None else shutdown_grace.to_seconds(integral=False)
        return self.consumer_contract().worker_command(handler, concurrency, grace_s)

    # --- bring your own consumer ---------------------------------------------------------------------------------
    def add_lambda_consumer(
        self,
        function: lambda_.Function,
        *,
        batch_size: int = DEFAULT_LAMBDA_BATCH_SIZE,
        max_batching_window: Duration | None = None,
        max_concurrency: int | None = None,
        add_layer: bool = True,
        hooks: Sequence[str] | None = None,
        idempotency_key: str | None = None,
    ) -> ConsumerAlarms:
        """Bind an existing function as this job type's consumer.

        Checks the function's timeout with the rule the queue was declared with (the queue's visibility timeout
        must be at least ``6 x timeout + max_batching_window``, or ``timeout + max_batching_window + 10 s`` with
        lease extension; a timeout of at least 2 s, above a declared ``processing_p99``), adds the SQS event
        source with partial batch failures, grants consumption, the consumer environment and the ``sqslease``
        layer, alarms and a dashboard. The function's handler should use
        ``sqslease.lambda_adapter.sqs_batch_handler``.

        :param batch_size: records per invocation. Default: 10.
        :param max_batching_window: the event source's batching window. Default: none.
        :param max_concurrency: cap on concurrent invocations, 2-1000. Default: none.
        :param add_layer: add the stack's ``sqslease`` layer, which serves python3.14 only (a function on another
            runtime is refused, naming the fix; with False it ships ``sqslease`` in its code). Default: True.
        :param hooks: ``sqslease`` hooks called before and after each message: import paths,
            ``package.module:name``, in the function's code or a layer, given to it as ``SQSLEASE_HOOKS``; as
            ``LambdaJob``'s ``hooks``. Default: none.
        :param idempotency_key: what makes two messages the same job, with ``idempotency`` on: the import path,
            ``package.module:function``, of ``key(body, message) -> str``, given to the function as
            ``SQSLEASE_IDEMPOTENCY_KEY``; as ``LambdaJob``'s ``idempotency_key``. Default: none (the ``MessageId``).
        """
        return bind_lambda_consumer(
            consumer_scope(self, function, "add_lambda_consumer"),
            self,
            function,
            batch_size=batch_size,
            max_batching_window=max_batching_window,
            max_concurrency=max_concurrency,
            add_layer=add_layer,
            hooks=hooks,
            idempotency_key=idempotency_key,
        )

    def add_ecs_consumer(
        self,
        service: ecs.BaseService,
        *,
        min_tasks: int = ECS_MIN_TASKS,
        max_tasks: int = ECS_MAX_TASKS,
        target_backlog_per_task: int = DEFAULT_WORKER_CONCURRENCY,
        hooks: Sequence[str] | None = None,
        idempotency_key: str | None = None,
    ) -> ConsumerAlarms:
        """Bind an existing ECS service as this job type's consumer: grants (consume, task scale-in protection),
        scaling on backlog per task, alarms and a dashboard. Its container should run
        :meth:`worker_command`'s command.

        :param min_tasks: tasks when idle. Default: 0.
        :param max_tasks: tasks at most. Default: 10.
        :param target_backlog_per_task: outstanding messages per task the scaling aims at. Default: 4.
        :param hooks: ``sqslease`` hooks called before and after each message: import paths,
            ``package.module:name``, in the image, given to the task definition's default container (the worker)
            as ``SQSLEASE_HOOKS``; as ``EcsJob``'s ``hooks``. Default: none.
        :param idempotency_key: what makes two messages the same job, with ``idempotency`` on: the import path,
            ``package.module:function``, of ``key(body, message) -> str``, given to the worker as
            ``SQSLEASE_IDEMPOTENCY_KEY``; as ``EcsJob``'s ``idempotency_key``. Default: none (the ``MessageId``).
        """
        return bind_ecs_consumer(
            consumer_scope(self, service, "add_ecs_consumer"),
            self,
            service,
            min_tasks=min_tasks,
            max_tasks=max_tasks,
            target_backlog_per_task=target_backlog_per_task,
            hooks=hooks,
            idempotency_key=idempotency_key,
        )


def seconds_or_none(duration: Duration) -> float | None:
    """A ``Duration``'s seconds; ``None`` for an unresolved token."""
    seconds = duration.to_seconds(integral=False)
    if is_token(seconds):
        return None
    return int(seconds) if float(seconds).is_integer() else float(seconds)
