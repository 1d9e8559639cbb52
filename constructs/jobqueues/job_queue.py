"""``JobQueue``: one job type's queue + DLQ pair with a derived visibility timeout and alarms."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import jsii
from aws_cdk import Annotations, Duration, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IValidation

from jobqueues.declaration import QueueDeclaration, check_declaration, default_queue_names
from sqslease.rules import SQS_IN_FLIGHT_QUOTA, format_duration

DEFAULT_RETENTION_S = 4 * 86_400
DEFAULT_DLQ_RETENTION_S = 14 * 86_400

#: Resources one ``JobQueue`` adds to its stack with all alarms on:
#: 2 queues, 2 TLS-only queue policies, 3 alarms.
RESOURCES_PER_JOB_QUEUE = 7
CLOUDFORMATION_MAX_RESOURCES = 500


class JobQueueError(ValueError):
    """A job type declaration that cannot be deployed; the message lists every problem and its fix."""


@dataclass(frozen=True)
class JobQueueAlarmProps:
    """Thresholds for the default alarms. Every field is optional.

    :param in_flight_quota: in-flight (received, not deleted) message quota. Default 120,000, the SQS
        quota for standard and FIFO queues. Long-polling consumers never see an OverLimit error, so the
        in-flight alarm is the only warning.
    :param in_flight_fraction: alarm when in-flight messages reach this share of the quota. Default 0.8.
    :param oldest_message_age: alarm when the oldest message on the source queue is older than this.
        Default: ``max_receive_count x visibility timeout`` (the longest a message should need to be
        tried and dead-lettered), at least 5 min and at most half the retention period.
    :param dlq_depth: alarm when the DLQ holds at least this many visible messages. Default 1.
    :param topic: SNS topic notified on ALARM and OK. Default none.
    :param enabled: set False to create no alarms. Default True.
    """

    in_flight_quota: int = SQS_IN_FLIGHT_QUOTA
    in_flight_fraction: float = 0.8
    oldest_message_age: Duration | None = None
    dlq_depth: int = 1
    topic: sns.ITopic | None = None
    enabled: bool = True


@dataclass(frozen=True)
class JobQueueAlarms:
    """The alarms of one job queue (``None`` where alarms are disabled)."""

    in_flight: cloudwatch.Alarm
    dlq_not_empty: cloudwatch.Alarm
    oldest_message_age: cloudwatch.Alarm


class JobQueue(Construct):
    """An SQS queue and its dead-letter queue for one job type.

    The visibility timeout is derived, never guessed: ``max(2 x processing_p99, 10 s)``, or for a
    Lambda consumer ``6 x lambda_timeout + max_batching_window``; with both, the larger. Every
    declaration is validated at synth; one ``JobQueueError`` lists all problems with their fix.

    Example::

        JobQueue(self, "VideoTranscode", processing_p99=Duration.minutes(4))   # VT 8 min
        JobQueue(self, "EmailSend", processing_p99=Duration.seconds(3))        # VT 10 s
        JobQueue(self, "Thumbnails", lambda_timeout=Duration.seconds(30),
                 max_batching_window=Duration.seconds(5))                      # VT 185 s

    :param scope: parent construct.
    :param job_type: construct id and job type name (unique in the app; used in queue names,
        metrics and duration profiles).
    :param processing_p99: measured p99 handler time of one message.
    :param lambda_timeout: timeout of the consuming Lambda function.
    :param max_batching_window: maximum batching window of the Lambda event source. Default 0.
    :param visibility_timeout: explicit VT; may not be below the derived one unless
        ``lease_extension`` is set, and never below ``lambda_timeout``.
    :param lease_extension: the consumer heartbeats its leases (``sqslease``), so the VT is a lease
        length rather than a worst-case bound. Default False.
    :param max_processing_time: longest a single message may take; at most 12 h.
    :param max_receive_count: deliveries before a message moves to the DLQ. Default 5.
    :param retention_period: source queue retention. Default 4 days.
    :param dlq_retention_period: DLQ retention, longer than the source's. Default 14 days.
    :param fifo: FIFO queues (both get ``.fifo`` names). Default False.
    :param content_based_deduplication: FIFO only. Default False.
    :param queue_name: physical name. Default ``<stack name>-<job_type>``; the DLQ adds ``-dlq``.
    :param encryption_key: KMS key for SSE. Default SQS-managed SSE.
    :param alarms: alarm thresholds and actions. Default :class:`JobQueueAlarmProps`.
    """

    def __init__(
        self,
        scope: Construct,
        job_type: str,
        *,
        processing_p99: Duration | None = None,
        lambda_timeout: Duration | None = None,
        max_batching_window: Duration | None = None,
        visibility_timeout: Duration | None = None,
        lease_extension: bool = False,
        max_processing_time: Duration | None = None,
        max_receive_count: int = 5,
        retention_period: Duration | None = None,
        dlq_retention_period: Duration | None = None,
        fifo: bool = False,
        content_based_deduplication: bool = False,
        queue_name: str | None = None,
        encryption_key: kms.IKey | None = None,
        alarms: JobQueueAlarmProps | None = None,
    ) -> None:
        super().__init__(scope, job_type)
        stack = scope if isinstance(scope, Stack) else Stack.of(self)
        stack_name = _stack_name(stack)
        alarm_props = alarms or JobQueueAlarmProps()
        # Defaults are kept as plain seconds so the common case costs no jsii round-trips.
        retention_s = DEFAULT_RETENTION_S if retention_period is None else _seconds(retention_period)
        dlq_retention_s = DEFAULT_DLQ_RETENTION_S if dlq_retention_period is None else _seconds(dlq_retention_period)

        name, dlq_name = default_queue_names(stack_name, job_type, fifo)
        if queue_name is not None:
            name = queue_name
            stem = queue_name[: -len(".fifo")] if queue_name.endswith(".fifo") else queue_name
            dlq_name = f"{stem}-dlq" + (".fifo" if fifo else "")

        declaration = QueueDeclaration(
            job_type=job_type,
            processing_p99_s=_seconds(processing_p99),
            lambda_timeout_s=_seconds(lambda_timeout),
            max_batching_window_s=_seconds(max_batching_window),
            visibility_timeout_s=_seconds(visibility_timeout),
            max_processing_time_s=_seconds(max_processing_time),
            lease_extension=lease_extension,
            retention_s=retention_s,
            dlq_retention_s=dlq_retention_s,
            max_receive_count=None if _is_token(max_receive_count) else max_receive_count,
            fifo=fifo,
            content_based_deduplication=content_based_deduplication,
            queue_name=None if _is_token(name) else name,
            dead_letter_queue_name=None if _is_token(dlq_name) else dlq_name,
            in_flight_quota=alarm_props.in_flight_quota,
            in_flight_alarm_fraction=alarm_props.in_flight_fraction,
            oldest_message_age_threshold_s=_seconds(alarm_props.oldest_message_age),
            dlq_depth_threshold=alarm_props.dlq_depth,
        )
        result = check_declaration(declaration)
        errors = list(result.errors)
        duplicate = _register_job_type(stack, self, job_type)
        if duplicate is not None:
            errors.append(
                f"job type {job_type!r} is already declared at {duplicate.node.path}: job type names must be "
                "unique in the app (they name queues, metrics and duration profiles); rename one of them"
            )
        if errors:
            raise JobQueueError(
                f"JobQueue {self.node.path} cannot be deployed:\n" + "\n".join(f"  - {e}" for e in errors)
            )
        for warning in result.warnings:
            Annotations.of(self).add_warning_v2("jobqueues:RetriesOutliveRetention", warning)

        vt_s = declaration.visibility_timeout_s
        if visibility_timeout is not None:
            vt = visibility_timeout
        else:
            assert result.visibility_timeout is not None  # guaranteed by check_declaration
            vt_s = result.visibility_timeout.seconds
            vt = Duration.seconds(vt_s)

        #: The job type name (the construct id).
        self.job_type = job_type
        #: The visibility timeout the source queue is created with.
        self.visibility_timeout: Duration = vt
        #: How the visibility timeout was chosen, for docs and diagnostics.
        self.visibility_timeout_rule: str = (
            "explicit visibility_timeout" if visibility_timeout is not None else result.visibility_timeout.rule
        )
        self._visibility_timeout_s = vt_s
        #: True when the consumer is declared to extend its leases.
        self.lease_extension = lease_extension
        self.max_receive_count = max_receive_count

        encryption = sqs.QueueEncryption.KMS if encryption_key else sqs.QueueEncryption.SQS_MANAGED
        #: The dead-letter queue. Its redrive-allow policy admits only the source queue.
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            queue_name=dlq_name,
            fifo=fifo or None,
            retention_period=dlq_retention_period or Duration.seconds(dlq_retention_s),
            encryption=encryption,
            encryption_master_key=encryption_key,
            enforce_ssl=True,
        )
        #: The source queue consumers receive from.
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=name,
            fifo=fifo or None,
            content_based_deduplication=content_based_deduplication or None,
            visibility_timeout=vt,
            retention_period=retention_period or Duration.seconds(retention_s),
            encryption=encryption,
            encryption_master_key=encryption_key,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=max_receive_count, queue=self.dead_letter_queue),
        )
        # By ARN built from the fixed name: a reference to the source queue would be circular
        # (the source's redrive policy already references the DLQ).
        source_arn = stack.format_arn(service="sqs", resource=name)
        cfn_dlq: sqs.CfnQueue = self.dead_letter_queue.node.default_child  # type: ignore[assignment]
        cfn_dlq.redrive_allow_policy = {"redrivePermission": "byQueue", "sourceQueueArns": [source_arn]}

        #: The default alarms, or ``None`` when ``alarms.enabled`` is False.
        self.alarms: JobQueueAlarms | None = None
        if alarm_props.enabled:
            self.alarms = self._create_alarms(alarm_props, vt_s, retention_s, max_receive_count)
        _count_resources(stack, RESOURCES_PER_JOB_QUEUE if alarm_props.enabled else 4)

    # ----------------------------------------------------------------------------------------------
    def grant_send_messages(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let a producer send messages to the job queue."""
        return self.queue.grant_send_messages(grantee)

    def grant_consume_messages(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let a consumer receive, extend (ChangeMessageVisibility), delete, and dead-letter messages.

        The consumer also gets ``sqs:SendMessage`` on the DLQ so that ``sqslease`` can move a message
        that failed with a non-retryable error straight to the DLQ.
        """
        grant = self.queue.grant_consume_messages(grantee)
        self.dead_letter_queue.grant_send_messages(grantee)
        return grant

    def consumer_environment(self) -> dict[str, str]:
        """``SQSLEASE_*`` environment variables for a consumer of this queue (``sqslease`` reads them).

        The lease length is the queue's visibility timeout, so consumer and queue come from one declaration;
        the queue and DLQ URLs are CloudFormation references resolved at deploy time.
        """
        env = {
            "SQSLEASE_QUEUE_URL": self.queue.queue_url,
            "SQSLEASE_DEAD_LETTER_QUEUE_URL": self.dead_letter_queue.queue_url,
            "SQSLEASE_JOB_TYPE": self.job_type,
            "SQSLEASE_HEARTBEAT": "true" if self.lease_extension else "false",
        }
        if self._visibility_timeout_s is not None:
            env["SQSLEASE_VISIBILITY_TIMEOUT"] = str(int(self._visibility_timeout_s))
        return env

    # ----------------------------------------------------------------------------------------------
    def _create_alarms(
        self, props: JobQueueAlarmProps, vt_s: float | None, retention_s: float | None, max_receive_count: int
    ) -> JobQueueAlarms:
        minute = _one_minute()
        in_flight_threshold = int(props.in_flight_quota * props.in_flight_fraction)
        in_flight = self.queue.metric_approximate_number_of_messages_not_visible(
            statistic="Maximum", period=minute
        ).create_alarm(
            self,
            "InFlightAlarm",
            threshold=in_flight_threshold,
            evaluation_periods=3,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=(
                f"{self.job_type}: {in_flight_threshold:,} in-flight messages, "
                f"{props.in_flight_fraction:.0%} of the {props.in_flight_quota:,} SQS quota. Long-polling "
                "consumers get no OverLimit error at the quota; they just stop receiving. Delete or release "
                "messages faster, or shard the job type over more queues."
            ),
        )
        dlq_not_empty = self.dead_letter_queue.metric_approximate_number_of_messages_visible(
            statistic="Maximum", period=minute
        ).create_alarm(
            self,
            "DeadLetterQueueAlarm",
            threshold=props.dlq_depth,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=(
                f"{self.job_type}: messages in the dead-letter queue after {max_receive_count} receives. "
                "Inspect them, fix the cause, then redrive."
            ),
        )
        age_threshold_s = _seconds(props.oldest_message_age)
        if age_threshold_s is None:
            age_threshold_s = (
                default_oldest_message_age_s(vt_s, retention_s, max_receive_count)
                if vt_s is not None and retention_s is not None and not _is_token(max_receive_count)
                else 300
            )
        oldest = self.queue.metric_approximate_age_of_oldest_message(statistic="Maximum", period=minute).create_alarm(
            self,
            "OldestMessageAgeAlarm",
            threshold=age_threshold_s,
            evaluation_periods=5,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=(
                f"{self.job_type}: the oldest message has waited {format_duration(age_threshold_s)} "
                "or more: consumers are not keeping up or are stuck."
            ),
        )
        alarms = JobQueueAlarms(in_flight=in_flight, dlq_not_empty=dlq_not_empty, oldest_message_age=oldest)
        if props.topic is not None:
            action = cw_actions.SnsAction(props.topic)
            for alarm in (in_flight, dlq_not_empty, oldest):
                alarm.add_alarm_action(action)
                alarm.add_ok_action(action)
        return alarms


def default_oldest_message_age_s(visibility_timeout_s: float, retention_s: float, max_receive_count: int) -> int:
    """Default threshold of the oldest-message-age alarm, in seconds.

    ``max_receive_count x VT`` is how long a message may legitimately stay on the source queue while
    it is retried; older than that means consumers are not keeping up. At least 5 min (metric noise)
    and at most half the retention period (time to act before messages expire).
    """
    return int(min(max(max_receive_count * visibility_timeout_s, 300), retention_s // 2))


def _seconds(duration: Duration | None) -> float | None:
    """Seconds of a duration, or None when not given or an unresolved token (which is not checked)."""
    if duration is None:
        return None
    seconds = duration.to_seconds()
    return None if _is_token(seconds) else seconds


def _is_token(value: object) -> bool:
    """Token check without a jsii round-trip for the common, plainly resolved values.

    Number tokens are encoded as huge negative doubles; string tokens contain ``${Token[``.
    """
    if isinstance(value, str):
        return "${Token[" in value
    if isinstance(value, float) and abs(value) > 1e288:
        return bool(Token.is_unresolved(value))
    return False


_minute: list[Duration] = []


def _one_minute() -> Duration:
    if not _minute:
        _minute.append(Duration.minutes(1))
    return _minute[0]


# Per-stack facts cached to spare jsii round-trips; keyed weakly so separate apps (tests) never mix.
_stack_facts: weakref.WeakKeyDictionary[Stack, tuple[str, Construct]] = weakref.WeakKeyDictionary()
# Job type names are unique per app (root construct); resources are counted per stack.
_job_types: weakref.WeakKeyDictionary[Construct, dict[str, JobQueue]] = weakref.WeakKeyDictionary()
_resource_counts: weakref.WeakKeyDictionary[Stack, list[int]] = weakref.WeakKeyDictionary()


def _stack_name(stack: Stack) -> str:
    facts = _stack_facts.get(stack)
    if facts is None:
        facts = _stack_facts[stack] = (stack.stack_name, stack.node.root)
    return facts[0]


def _register_job_type(stack: Stack, job_queue: JobQueue, job_type: str) -> JobQueue | None:
    """Record a job type in its app; return an earlier job queue with the same name."""
    seen = _job_types.setdefault(_stack_facts[stack][1], {})
    if job_type in seen:
        return seen[job_type]
    seen[job_type] = job_queue
    return None


def _count_resources(stack: Stack, added: int) -> None:
    counter = _resource_counts.get(stack)
    if counter is None:
        counter = _resource_counts[stack] = [0, 0]
        stack.node.add_validation(_StackResourceBudget(stack, counter))
    counter[0] += added
    counter[1] += 1


@jsii.implements(IValidation)
class _StackResourceBudget:
    """Fails synth with a job-type-level fix when a stack's job queues pass CloudFormation's 500 limit."""

    def __init__(self, stack: Stack, counter: list[int]) -> None:
        self._stack = stack
        self._counter = counter

    def validate(self) -> list[str]:
        resources, job_types = self._counter
        if resources <= CLOUDFORMATION_MAX_RESOURCES:
            return []
        per_stack = CLOUDFORMATION_MAX_RESOURCES // RESOURCES_PER_JOB_QUEUE
        return [
            f"stack {self._stack.stack_name} declares {job_types} job types = {resources} resources; CloudFormation "
            f"allows {CLOUDFORMATION_MAX_RESOURCES} per stack. Spread the job types over several stacks, at most "
            f"{per_stack} per stack with alarms on (jobqueues.JobQueueStacks does it for you)"
        ]
