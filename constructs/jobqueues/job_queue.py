"""``JobQueue``: one job type's queue + DLQ pair with a derived visibility timeout, alarms and metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack

from aws_cdk import Annotations, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from jobqueues import defaults, metrics
from jobqueues.alarms import JobQueueAlarmProps, JobQueueAlarms, create_queue_alarms
from jobqueues.consumer_alarms import ConsumerAlarms
from jobqueues.consumer_rules import ConsumerCheck
from jobqueues.declaration import QueueDeclaration, check_declaration, in_flight_threshold
from jobqueues.errors import JobQueueError
from jobqueues.inputs import PropReader, whole_seconds_duration
from jobqueues.names import name_conflicts, register_names, stack_facts
from jobqueues.props import JobQueueProps
from jobqueues.stack_limits import RESOURCES_PER_JOB_QUEUE, count_resources
from sqslease.rules import DEFAULT_EXTENSION_THRESHOLD_S, DEFAULT_HEARTBEAT_INTERVAL_S, consumer_extension_threshold

_ALARM_FIELDS = ("in_flight_quota", "in_flight_fraction", "oldest_message_age", "dlq_depth", "topic", "enabled")
_LAMBDA_WHOLE_SECONDS = "a Lambda function timeout"
_WINDOW_WHOLE_SECONDS = "the event source's MaximumBatchingWindowInSeconds"


class JobQueue(Construct):
    """An SQS queue and its dead-letter queue for one job type.

    The visibility timeout is derived, never guessed: ``max(2 x processing_p99, 10 s)``, or for a Lambda
    consumer ``6 x lambda_timeout + max_batching_window`` (``lambda_timeout + max_batching_window + 10 s`` with
    ``lease_extension=True``); with both, the larger. Every declaration is
    validated at synth; one ``JobQueueError`` lists all problems with their fix. The props are
    :class:`jobqueues.props.JobQueueProps` (each documented there with its default).

    Example::

        JobQueue(self, "VideoTranscode", processing_p99=Duration.minutes(4))   # VT 8 min
        JobQueue(self, "EmailSend", processing_p99=Duration.millis(383))       # VT 10 s
        JobQueue(self, "Thumbnails", lambda_timeout=Duration.seconds(30),
                 max_batching_window=Duration.seconds(5))                      # VT 185 s

    :param scope: parent construct.
    :param job_type: construct id and job type name, unique per deployment target (stage, account, region);
        it names the queues, metrics and duration profiles.
    """

    def __init__(self, scope: Construct, job_type: str, **props: Unpack[JobQueueProps]) -> None:
        super().__init__(scope, job_type)
        self._declare(scope, job_type, props, JobQueueProps.__annotations__, owner=("JobQueue", self))

    def _declare(
        self,
        scope: Construct,
        job_type: str,
        props: Mapping[str, Any],
        known: Mapping[str, Any],
        *,
        owner: tuple[str, Construct],
        prop_names: Mapping[str, str] | None = None,
        consumer: ConsumerCheck | None = None,
    ) -> None:
        """Check the props, create the queues and alarms.

        ``owner`` (the kind and the construct the user declared) and ``prop_names`` word the errors; a consumer
        construct passes its own findings in ``consumer`` so that one error lists every problem of the declaration.
        """
        prop_names = prop_names or {}
        consumer = consumer or ConsumerCheck()
        stack = scope if isinstance(scope, Stack) else Stack.of(self)
        facts = stack_facts(stack)
        read = PropReader(props, known, labels=prop_names)
        alarm_props = read.instance("alarms", JobQueueAlarmProps, "JobQueueAlarmProps(...)") or JobQueueAlarmProps()
        alarm_read = PropReader({k: getattr(alarm_props, k) for k in _ALARM_FIELDS}, _ALARM_FIELDS, "alarms.")
        declaration = QueueDeclaration(
            job_type=job_type,
            processing_p99_s=read.duration_s("processing_p99"),
            lambda_timeout_s=read.whole_seconds("lambda_timeout", _LAMBDA_WHOLE_SECONDS),
            max_batching_window_s=read.whole_seconds("max_batching_window", _WINDOW_WHOLE_SECONDS),
            visibility_timeout_s=read.duration_s("visibility_timeout"),
            max_processing_time_s=read.duration_s("max_processing_time"),
            lease_extension=read.boolean("lease_extension", False),
            retention_s=read.duration_s("retention_period"),
            dlq_retention_s=read.duration_s("dlq_retention_period"),
            max_receive_count=read.integer("max_receive_count", 3),
            fifo=read.boolean("fifo", False),
            content_based_deduplication=read.boolean("content_based_deduplication", False),
            queue_name=read.string("queue_name"),
            name_prefix=facts.name,
            in_flight_quota=alarm_read.integer("in_flight_quota", 120_000),
            in_flight_fraction=alarm_read.number("in_flight_fraction", 0.8),
            oldest_message_age_s=alarm_read.duration_s("oldest_message_age"),
            dlq_depth=alarm_read.integer("dlq_depth", 1),
            tokens=frozenset(
                {_DECLARATION_FIELDS.get(p, p) for p in read.tokens}
                | {_DECLARATION_FIELDS.get(p, p) for p in alarm_read.tokens}
            ),
            prop_names={
                **{k: f"alarms.{k}" for k in ("in_flight_quota", "in_flight_fraction", "oldest_message_age")},
                "dlq_depth": "alarms.dlq_depth",
                **prop_names,
            },
        )
        encryption_key = read.having("encryption_key", "key_arn", "a kms.IKey, e.g. kms.Key(self, 'Key')")
        topic = alarm_read.having("topic", "topic_arn", "an sns.ITopic, e.g. sns.Topic(self, 'Alarms')")
        alarms_enabled = alarm_read.boolean("enabled", True)
        if read.errors or alarm_read.errors:
            # Type errors first: a rule would only repeat them with less precision.
            self._fail(owner, read.errors + alarm_read.errors + consumer.errors)
        result = check_declaration(declaration)
        errors = result.errors + consumer.errors
        names = [
            (role, name)
            for role, name in (("queue", result.queue_name), ("dead-letter queue", result.dead_letter_queue_name))
            if name is not None
        ]
        errors += name_conflicts(facts, owner[1], job_type, names)
        if errors:
            self._fail(owner, errors)
        register_names(facts, owner[1], job_type, names)
        for warning in result.warnings + consumer.warnings:
            Annotations.of(self).add_warning_v2(warning.id, warning.message)

        explicit_vt = props.get("visibility_timeout")
        vt_s = result.visibility_timeout_s
        vt = _whole_seconds(explicit_vt, declaration.visibility_timeout_s, vt_s)

        #: The job type name.
        self.job_type = job_type
        #: The visibility timeout the source queue is created with.
        self.visibility_timeout: Duration = vt
        #: How the visibility timeout was chosen, for docs and diagnostics.
        self.visibility_timeout_rule: str = (
            "explicit visibility_timeout"
            if explicit_vt is not None or result.visibility_timeout is None
            else result.visibility_timeout.rule
        )
        #: The visibility timeout in seconds; ``None`` when it is an unresolved token.
        self.visibility_timeout_seconds: float | None = vt_s
        #: True when the consumer is declared to extend its leases.
        self.lease_extension: bool = declaration.lease_extension
        #: The longest one message may take, in seconds; ``None`` when not declared.
        self.max_processing_time_seconds: float | None = declaration.max_processing_time_s
        #: The declared p99 handler time, in seconds; ``None`` when not declared.
        self.processing_p99_seconds: float | None = declaration.processing_p99_s
        #: The declared Lambda function timeout, in seconds; ``None`` when not declared.
        self.lambda_timeout_seconds: float | None = declaration.lambda_timeout_s
        #: The event source's batching window, in seconds (Lambda consumers).
        self.max_batching_window_seconds: float = declaration.max_batching_window_s or 0
        #: Whether both queues are FIFO.
        self.fifo: bool = declaration.fifo
        max_receive_count = props.get("max_receive_count", defaults.MAX_RECEIVE_COUNT)
        self.max_receive_count = max_receive_count

        encryption = sqs.QueueEncryption.KMS if encryption_key else sqs.QueueEncryption.SQS_MANAGED
        fifo = declaration.fifo or None
        queue_name = props.get("queue_name") if result.queue_name is None else result.queue_name
        #: The dead-letter queue. Its redrive-allow policy admits only the source queue.
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            queue_name=result.dead_letter_queue_name,
            fifo=fifo,
            retention_period=_whole_seconds(
                props.get("dlq_retention_period"), declaration.dlq_retention_s, result.dlq_retention_s
            ),
            encryption=encryption,
            encryption_master_key=encryption_key,
            enforce_ssl=True,
        )
        #: The source queue consumers receive from.
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=queue_name,
            fifo=fifo,
            content_based_deduplication=declaration.content_based_deduplication or None,
            visibility_timeout=vt,
            retention_period=_whole_seconds(props.get("retention_period"), declaration.retention_s, result.retention_s),
            encryption=encryption,
            encryption_master_key=encryption_key,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=max_receive_count, queue=self.dead_letter_queue),
        )
        if queue_name is not None:
            # By ARN built from the fixed name: a reference to the source queue would be circular (the source's
            # redrive policy already references the DLQ).
            source_arn = stack.format_arn(service="sqs", resource=queue_name)
            cfn_dlq: sqs.CfnQueue = self.dead_letter_queue.node.default_child  # type: ignore[assignment]
            cfn_dlq.redrive_allow_policy = {"redrivePermission": "byQueue", "sourceQueueArns": [source_arn]}

        #: The queue alarms, or ``None`` when ``alarms.enabled`` is False.
        self.alarms: JobQueueAlarms | None = None
        if alarms_enabled:
            age_s = declaration.oldest_message_age_s
            if age_s is None:
                age_s = (
                    defaults.oldest_message_age_s(vt_s, result.retention_s, result.max_receive_count)
                    if vt_s is not None and not declaration.tokens & {"max_receive_count", "retention_s"}
                    else defaults.OLDEST_MESSAGE_AGE_MIN_S
                )
            self.alarms = create_queue_alarms(
                self,
                job_type,
                self.queue,
                self.dead_letter_queue,
                in_flight_threshold=in_flight_threshold(alarm_props.in_flight_quota, alarm_props.in_flight_fraction),
                props=alarm_props,
                oldest_message_age_s=age_s,
                receives="max_receive_count" if "max_receive_count" in read.tokens else str(max_receive_count),
            )
        #: Where alarm notifications go (``alarms.topic``); consumers send theirs there too.
        self.alarm_topic = topic if alarms_enabled else None
        count_resources(stack, RESOURCES_PER_JOB_QUEUE if alarms_enabled else 4)

    @staticmethod
    def _fail(owner: tuple[str, Construct], errors: list[str]) -> None:
        kind, construct = owner
        raise JobQueueError(
            f"{kind} {construct.node.path} cannot be deployed:\n" + "\n".join(f"  - {e}" for e in errors)
        )

    # --- grants ------------------------------------------------------------------------------------------------
    def grant_send_messages(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let a producer send messages to the job queue, and with a KMS key ``kms:GenerateDataKey`` and
        ``kms:Decrypt`` on it (what SQS needs to encrypt a message), nothing more."""
        grant = self.queue.grant(grantee, *_SEND_ACTIONS)
        self._grant_key(grantee, "kms:GenerateDataKey", "kms:Decrypt")
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

    def _grant_key(self, grantee: iam.IGrantable, *actions: str) -> None:
        # Not the key's grant_encrypt_decrypt (what sqs.Queue's grants use): it adds kms:ReEncrypt* and
        # kms:GenerateDataKey*, wildcards SQS never uses.
        key = self.queue.encryption_master_key
        if key is not None:
            key.grant(grantee, *actions)

    # --- bring your own consumer ---------------------------------------------------------------------------------
    def add_lambda_consumer(
        self,
        function: lambda_.Function,
        *,
        batch_size: int = 10,
        max_batching_window: Duration | None = None,
        max_concurrency: int | None = None,
        add_layer: bool = True,
    ) -> ConsumerAlarms:
        """Bind an existing function as this job type's consumer.

        Checks the function's timeout with the rule the queue was declared with (the queue's visibility timeout
        must be at least ``6 x timeout + max_batching_window``, or ``timeout + max_batching_window + 10 s`` with
        lease extension; a timeout of at least 2 s, above a declared ``processing_p99``), adds the SQS event
        source with partial batch failures,
        grants consumption, the consumer environment and the ``sqslease`` layer, alarms and a dashboard. The
        function's handler should use ``sqslease.lambda_adapter.sqs_batch_handler``.

        :param batch_size: records per invocation. Default: 10.
        :param max_batching_window: the event source's batching window. Default: none.
        :param max_concurrency: cap on concurrent invocations, 2-1000. Default: none.
        :param add_layer: add the stack's ``sqslease`` layer. Default: True.
        """
        from jobqueues.lambda_job import bind_lambda_consumer

        return bind_lambda_consumer(
            Construct(self, "Consumer"),
            self,
            function,
            batch_size=batch_size,
            max_batching_window=max_batching_window,
            max_concurrency=max_concurrency,
            add_layer=add_layer,
        )

    def add_ecs_consumer(
        self, service: ecs.BaseService, *, min_tasks: int = 0, max_tasks: int = 10, target_backlog_per_task: int = 4
    ) -> ConsumerAlarms:
        """Bind an existing ECS service as this job type's consumer: grants (consume, task scale-in protection),
        scaling on backlog per task, alarms and a dashboard. Its container should run
        :meth:`worker_command`'s command.

        :param min_tasks: tasks when idle. Default: 0.
        :param max_tasks: tasks at most. Default: 10.
        :param target_backlog_per_task: outstanding messages per task the scaling aims at. Default: 4.
        """
        from jobqueues.ecs_job import bind_ecs_consumer

        return bind_ecs_consumer(
            Construct(self, "Consumer"),
            self,
            service,
            min_tasks=min_tasks,
            max_tasks=max_tasks,
            target_backlog_per_task=target_backlog_per_task,
        )

    def worker_command(self, handler: str, concurrency: int = 4, shutdown_grace: Duration | None = None) -> list[str]:
        """The container command of an ECS consumer: ``python -m sqslease.worker`` with this declaration's
        settings as options.

        :param handler: the per-message function, ``package.module:function``.
        :param concurrency: handlers running at once in one task. Default: 4.
        :param shutdown_grace: time running handlers get after SIGTERM. Default: 25 s.
        """
        from jobqueues.consumer_rules import DEFAULT_SHUTDOWN_GRACE_S
        from jobqueues.ecs_job import worker_command

        grace_s = DEFAULT_SHUTDOWN_GRACE_S if shutdown_grace is None else shutdown_grace.to_seconds(integral=False)
        return worker_command(self, handler, concurrency, grace_s)

    # --- the consumer's settings, from the same declaration -----------------------------------------------------
    def consumer_settings(self) -> dict[str, str]:
        """The ``sqslease`` settings (``LeaseSettings`` field -> value) a consumer of this queue runs with.

        The lease length is the queue's visibility timeout, and leases are extended up to
        ``max_processing_time``; the queue and DLQ URLs are CloudFormation references resolved at deploy time.
        """
        settings = {
            "queue_url": self.queue.queue_url,
            "dead_letter_queue_url": self.dead_letter_queue.queue_url,
            "job_type": self.job_type,
            "heartbeat": "true" if self.lease_extension else "false",
            "visibility_timeout": _number(self.visibility_timeout_seconds)
            if self.visibility_timeout_seconds is not None
            else str(self.visibility_timeout.to_seconds()),
            "extension_threshold": _number(
                consumer_extension_threshold(self.visibility_timeout_seconds, heartbeat=self.lease_extension)
                if self.visibility_timeout_seconds is not None
                else DEFAULT_EXTENSION_THRESHOLD_S
            ),
            "heartbeat_interval": _number(DEFAULT_HEARTBEAT_INTERVAL_S),
        }
        if self.max_batching_window_seconds:
            settings["max_batching_window"] = _number(self.max_batching_window_seconds)
        if self.lease_extension and self.max_processing_time_seconds is not None:
            settings["max_total_lease"] = _number(self.max_processing_time_seconds)
        return settings

    def consumer_environment(self) -> dict[str, str]:
        """:meth:`consumer_settings` as the ``SQSLEASE_*`` environment variables ``sqslease`` reads."""
        return {f"SQSLEASE_{name.upper()}": value for name, value in self.consumer_settings().items()}

    # --- metrics -----------------------------------------------------------------------------------------------
    def metric_visible(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Messages waiting to be received (Maximum). Default period: 1 minute."""
        return self.queue.metric_approximate_number_of_messages_visible(statistic="Maximum", period=period)

    def metric_in_flight(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Messages received and not yet deleted (Maximum), against the 120,000 quota. Default period: 1 minute."""
        return self.queue.metric_approximate_number_of_messages_not_visible(statistic="Maximum", period=period)

    def metric_backlog(self, period: Duration | None = None) -> cloudwatch.MathExpression:
        """Outstanding work: visible + in flight. Default period: 1 minute."""
        return metrics.backlog(self.queue, period)

    def metric_oldest_message_age(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Age of the oldest message on the source queue, in seconds (Maximum). Default period: 1 minute."""
        return self.queue.metric_approximate_age_of_oldest_message(statistic="Maximum", period=period)

    def metric_deleted(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Messages deleted, that is finished (Sum). Default period: 1 minute."""
        return self.queue.metric_number_of_messages_deleted(statistic="Sum", period=period)

    def metric_dead_letter_queue_depth(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Messages in the DLQ (Maximum). Default period: 1 minute."""
        return self.dead_letter_queue.metric_approximate_number_of_messages_visible(statistic="Maximum", period=period)

    def metric_processing_time(self, statistic: str = "p99", period: Duration | None = None) -> cloudwatch.Metric:
        """Handler time of one message in milliseconds, from ``sqslease``'s EMF lines. Default: p99, 1 minute."""
        return metrics.emf_metric(self.job_type, "ProcessingTime", statistic, period)

    def metric_extensions(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Lease extensions (Sum), from ``sqslease``'s EMF lines. Default period: 1 minute."""
        return metrics.emf_metric(self.job_type, "Extensions", "Sum", period)

    def metric_leases_lost(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Leases lost while the handler ran (Sum): the message may run twice. Default period: 1 minute."""
        return metrics.emf_metric(self.job_type, "LeaseLost", "Sum", period)


# What sqs.Queue.grant_send_messages grants on the queue itself.
_SEND_ACTIONS = ("sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl")

# Prop name -> QueueDeclaration field, for the props whose names differ.
_DECLARATION_FIELDS = {
    "processing_p99": "processing_p99_s",
    "lambda_timeout": "lambda_timeout_s",
    "max_batching_window": "max_batching_window_s",
    "visibility_timeout": "visibility_timeout_s",
    "max_processing_time": "max_processing_time_s",
    "retention_period": "retention_s",
    "dlq_retention_period": "dlq_retention_s",
    "oldest_message_age": "oldest_message_age_s",
}


def _whole_seconds(given: Duration | None, given_s: float | None, seconds: float | None) -> Duration:
    """The ``Duration`` a queue gets: the prop as given when it is a token or whole seconds already (no
    round-trip to the CDK's Node kernel), else ``seconds``, the value rounded up to whole seconds."""
    if given is not None and (given_s is None or given_s.is_integer()):
        return given
    assert seconds is not None  # check_declaration resolved it
    return whole_seconds_duration(seconds)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
