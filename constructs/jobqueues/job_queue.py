"""``JobQueue``: one job type's queue + DLQ pair with a derived visibility timeout, alarms and metrics; and
``JobQueue.from_queue_attributes``, a job queue made elsewhere, adopted with the same lease facts."""

from __future__ import annotations

from dataclasses import replace
from typing import Unpack, cast

import jsii
from aws_cdk import Annotations, CfnElement, Duration
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IValidation

from jobqueues.alarms import JobQueueAlarms, create_queue_alarms, notify
from jobqueues.errors import JobQueueError, declaration_error, declaring_line
from jobqueues.fair_queue_monitoring import quiet_group_age_alarm
from jobqueues.fleet_dashboard import add_to_fleet
from jobqueues.idempotency_table import table_of
from jobqueues.imported_job_queue import ImportedJobQueue
from jobqueues.job_queue_base import JobQueueBase
from jobqueues.marker import mark_job_queue, payload_bucket_reference
from jobqueues.metrics import consumer_period
from jobqueues.payload_bucket import bucket_of
from jobqueues.plan import AlarmPlan, Given, QueuePlan
from jobqueues.planning import claim_names, plan_from_props
from jobqueues.props import JobQueueProps
from jobqueues.queue_pair import build_queue_pair, planned_duration
from jobqueues.registry import StackRegistry, registry_of
from sqslease.rules import SQS_MAX_RETENTION_S, format_duration


class JobQueue(JobQueueBase):
    """An SQS queue and its dead-letter queue for one job type.

    The visibility timeout is derived, never guessed: ``max(2 x processing_p99, 10 s)``, or for a Lambda
    consumer ``6 x lambda_timeout + max_batching_window`` (``lambda_timeout + max_batching_window + 10 s`` with
    ``lease_extension=True``); with both, the larger. Every declaration is validated at synth; one
    ``JobQueueError`` lists all problems with their fix. The props are :class:`jobqueues.props.JobQueueProps`
    (each documented there with its default).

    Example::

        JobQueue(self, "VideoTranscode", processing_p99=Duration.minutes(4))   # VT 8 min
        JobQueue(self, "EmailSend", processing_p99=Duration.millis(383))       # VT 10 s
        JobQueue(self, "Thumbnails", lambda_timeout=Duration.seconds(30),
                 max_batching_window=Duration.seconds(5))                      # VT 185 s

    :param scope: parent construct.
    :param job_type: construct id and job type name, unique per deployment target (stage, account, region);
        it names the queues, metrics and duration profiles.
    :param plan: build from this plan (:func:`jobqueues.plan.plan_job_queue`) instead of props; the job type is
        the plan's and ``job_type`` is then only the construct id. Default: planned from the props.
    :param claimed_by: the construct that declared this job queue as part of itself (a ``LambdaJob`` or ``EcsJob``
        building its own queue from its plan), and has claimed the plan's job type and queue names as its own
        (:func:`jobqueues.planning.claim_names`). Default: none (the job queue claims them).
    """

    owns_queues = True

    def __init__(
        self,
        scope: Construct,
        job_type: str,
        *,
        plan: QueuePlan | None = None,
        claimed_by: Construct | None = None,
        **props: Unpack[JobQueueProps],
    ) -> None:
        super().__init__(scope, job_type)
        registry = registry_of(self)
        if plan is None:
            plan = plan_from_props(self, "JobQueue", job_type, props, registry)
        elif props:
            raise JobQueueError(f"JobQueue {self.node.path}: pass a plan or props, not both (got {sorted(props)})")
        if claimed_by is None:
            # Its errors, and its names against the deployment target, whether planned here or apart.
            claim_names("JobQueue", self, registry, plan)
        elif plan.errors or registry.names.declarer(registry.facts, plan.job_type) is not claimed_by:
            raise JobQueueError(
                f"JobQueue {self.node.path}: claimed_by={claimed_by.node.path} has not claimed job type "
                f"{plan.job_type!r} (or its plan has errors): leave claimed_by out, the job queue claims its names"
            )
        self._build(plan, registry)

    def _build(self, plan: QueuePlan, registry: StackRegistry) -> None:
        for warning in plan.warnings:
            Annotations.of(self).add_warning_v2(warning.id, warning.message)
        self._set_facts(plan, registry)
        self._build_queues(plan, registry)
        #: The queue alarms, or ``None`` when ``alarms.enabled`` is False.
        self.alarms: JobQueueAlarms | None = None
        if plan.alarms is not None:
            self.alarms = self._build_alarms(plan, plan.alarms)
        self.alarm_topic = plan.alarm_topic
        self._monitor(plan)
        #: The table of the consumer's idempotency records; ``None`` without ``idempotency``.
        self.idempotency_table = table_of(self, plan.idempotency, plan.encryption_key)
        self.idempotency_retention_seconds = _record_retention(plan)
        #: The bucket of payloads larger than the queue takes (``payload_bucket``); ``None``: none.
        self.payload_bucket = bucket_of(self, plan.payload_bucket, plan.encryption_key, plan.payload_expiration_days)
        self.delete_payloads = plan.delete_payloads
        self._mark(registry)
        registry.count_job_type()

    def _build_alarms(self, plan: QueuePlan, alarms: AlarmPlan) -> JobQueueAlarms:
        """The queue alarms, and a fair queue's quiet-group alarm, at the planned thresholds."""
        self.max_queue_time_seconds = alarms.max_queue_time_s
        queue_time_p99 = None
        if self.max_queue_time_seconds is not None:
            # Read from the EMF lines of the team's sqslease consumer, whether or not this stack declares one.
            queue_time_p99 = self.metric_queue_time("p99", consumer_period(self))
        built = create_queue_alarms(
            self, plan.job_type, self.queue, self.dead_letter_queue, alarms, plan.alarm_topic, queue_time_p99
        )
        self.quiet_group_age_seconds = alarms.quiet_group_age_s
        if alarms.quiet_group_age_s is None:
            return built
        quiet = quiet_group_age_alarm(self, plan.job_type, self.queue, alarms.quiet_group_age_s)
        notify(plan.alarm_topic, [quiet])
        return replace(built, quiet_group_age=quiet)

    def _monitor(self, plan: QueuePlan) -> None:
        """On the stack's fleet view; with ``max_time_to_drain``, a consumer is due (its alarm is the consumer's)."""
        add_to_fleet(self, plan.alarms.oldest_message_age_s if plan.alarms else None)
        self.max_time_to_drain_seconds = plan.alarms.max_time_to_drain_s if plan.alarms else None
        if self.max_time_to_drain_seconds is not None:
            self.node.add_validation(_ConsumerDue(self, declaring_line()))

    def _set_facts(self, plan: QueuePlan, registry: StackRegistry) -> None:
        """The plan's values the job queue exposes (:class:`jobqueues.interface.IJobQueue`)."""
        #: The plan the queues were built from: every final value, the rule and the findings.
        self.plan = plan
        self.job_type = plan.job_type
        self.visibility_timeout = planned_duration(plan.visibility_timeout, registry)
        #: How the visibility timeout was chosen, for docs and diagnostics.
        self.visibility_timeout_rule: str = plan.visibility_timeout_rule
        self.visibility_timeout_seconds = plan.visibility_timeout_s
        self.lease_extension = plan.lease_extension
        self.max_processing_time_seconds = plan.max_processing_time
        self.processing_p99_seconds = plan.processing_p99
        self.lambda_timeout_seconds = plan.lambda_timeout
        self.max_batching_window_seconds = plan.max_batching_window
        self.fifo = plan.fifo
        self.fair = plan.fair
        self.delivery_delay_seconds = 0 if isinstance(plan.delivery_delay, Given) else plan.delivery_delay
        #: Deliveries before a message moves to the DLQ (a token as given).
        self.max_receive_count = (
            plan.max_receive_count.value if isinstance(plan.max_receive_count, Given) else plan.max_receive_count
        )
        self.known_max_receive_count = None if isinstance(plan.max_receive_count, Given) else plan.max_receive_count

    def _build_queues(self, plan: QueuePlan, registry: StackRegistry) -> None:
        vt, receives = self.visibility_timeout, self.max_receive_count
        queue, dead_letter_queue = build_queue_pair(self, plan, registry, vt, receives)
        #: The dead-letter queue. Its redrive-allow policy admits only the source queue. SQS's own maximum message
        #: size (the region's largest): a message sqslease dead-letters carries up to four more attributes.
        self.dead_letter_queue: sqs.Queue = dead_letter_queue
        #: The source queue consumers receive from.
        self.queue: sqs.Queue = queue

    def _mark(self, registry: StackRegistry) -> None:
        """The queue marker of the source queue, its queues named by logical ids computed in Python
        (:meth:`jobqueues.registry.StackRegistry.logical_id`): the kernel's answers were most of a job type's cost.
        The queues' resources are looked up only if the kernel is asked (once a stack)."""

        def resource() -> CfnElement:
            return self.queue.node.default_child  # type: ignore[return-value]

        def dead_letter_resource() -> CfnElement:
            return self.dead_letter_queue.node.default_child  # type: ignore[return-value]

        queue_id = registry.logical_id(self.path_below_stack("Queue", "Resource"), resource)
        dlq_id = registry.logical_id(self.path_below_stack("DeadLetterQueue", "Resource"), dead_letter_resource)
        bucket = payload_bucket_reference(self, registry.stack)
        mark_job_queue(self, registry, self.construct_path, {"logical_id": queue_id}, {"logical_id": dlq_id}, bucket)

    def _queue_key(self) -> kms.IKey | None:
        return cast(kms.IKey | None, self.plan.encryption_key)

    @staticmethod
    def from_queue_attributes(
        scope: Construct,
        id: str,
        *,
        job_type: str,
        queue: sqs.IQueue,
        dead_letter_queue: sqs.IQueue,
        visibility_timeout: Duration,
        lease_extension: bool = False,
        processing_p99: Duration | None = None,
        max_processing_time: Duration | None = None,
        lambda_timeout: Duration | None = None,
        max_batching_window: Duration | None = None,
        alarm_topic: sns.ITopic | None = None,
    ) -> ImportedJobQueue:
        """A job queue made elsewhere (another stack, another tool), adopted as a job type: consumers
        (:meth:`add_lambda_consumer`, :meth:`add_ecs_consumer`, :meth:`worker_command`), grants, metrics,
        consumer alarms and a dashboard, held to the facts given here. Nothing is created for the queues
        themselves: their settings and alarms stay with their owner. So do the queue options (delivery delay,
        message size, FIFO throughput mode, removal policies), which are not taken here: no consumer setting
        depends on them, and ``jobqueues send`` reads the queue's own size limit.

        :param scope: parent construct.
        :param id: construct id.
        :param job_type: the job type name (metrics, dashboards, profiles), unique per deployment target.
        :param queue: the source queue, e.g. ``sqs.Queue.from_queue_arn(...)``; a FIFO queue's name ends in
            ``.fifo``.
        :param dead_letter_queue: its dead-letter queue (the consumer sends non-retryable failures there).
        :param visibility_timeout: the source queue's visibility timeout as deployed: the lease a consumer
            keeps. Must satisfy the rule of the facts below (checked as for a declared queue).
        :param lease_extension: the consumer extends its leases.
        :param processing_p99: the measured p99 of one message; with it the VT must be at least
            ``max(2 x p99, 10 s)`` (without lease extension).
        :param max_processing_time: the longest one message may take.
        :param lambda_timeout: the consuming function's timeout, if the VT is meant for one.
        :param max_batching_window: the Lambda event source's batching window.
        :param alarm_topic: where the consumer alarms notify.
        """
        return ImportedJobQueue(
            scope,
            id,
            job_type=job_type,
            queue=queue,
            dead_letter_queue=dead_letter_queue,
            visibility_timeout=visibility_timeout,
            lease_extension=lease_extension,
            processing_p99=processing_p99,
            max_processing_time=max_processing_time,
            lambda_timeout=lambda_timeout,
            max_batching_window=max_batching_window,
            alarm_topic=alarm_topic,
        )


@jsii.implements(IValidation)
class _ConsumerDue:
    """``max_time_to_drain`` declares an alarm on the consumer: a job queue that never gets one fails the synth.
    Only the synth can tell (a consumer may be bound after the declaration), and a validation's error reaches the
    user as the CDK's, not as a ``JobQueueError``: its text is a ``JobQueueError``'s, naming the line that declared
    the job queue (``declared_at``, ``FILE:LINE``; ``None``: not known)."""

    def __init__(self, job_queue: JobQueue, declared_at: str | None) -> None:
        self._job_queue = job_queue
        self._declared_at = declared_at

    def validate(self) -> list[str]:
        job_queue = self._job_queue
        if job_queue.bound_consumer is not None:
            return []
        problem = (
            f"max_time_to_drain {format_duration(job_queue.max_time_to_drain_seconds or 0)} declares a "
            f"time-to-drain alarm on the consumer, but job type {job_queue.job_type!r} has no consumer in this "
            "app: bind one (add_lambda_consumer, add_ecs_consumer) or remove max_time_to_drain"
        )
        text = declaration_error("JobQueue", job_queue.construct_path, [problem], self._declared_at)
        return [f"{JobQueueError.__name__}: {text}"]


def _record_retention(plan: QueuePlan) -> float:
    """How long a COMPLETED record must outlive its message: the longer retention of the pair (a duplicate may be
    dead-lettered, then redriven), or SQS's 14-day maximum when either is a token."""
    retention, dlq_retention = plan.retention_period, plan.dlq_retention_period
    if isinstance(retention, Given) or isinstance(dlq_retention, Given):
        return SQS_MAX_RETENTION_S
    return max(retention, dlq_retention)
