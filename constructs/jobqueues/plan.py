"""Plan, then build: a pure function turns a job type's declaration into every final value its queues get.

The rules of :mod:`jobqueues.declaration` check the declaration; :func:`plan_job_queue` then settles each value:
a number (defaults applied, whole seconds where SQS takes them), or the token as given (:class:`Given`), plus
the derived rule, the names, and every error and warning. ``JobQueue`` builds from a plan and reads nothing
else, so a plan can be inspected (or tested) without the CDK.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jobqueues import defaults
from jobqueues.consumer_rules import ConsumerCheck
from jobqueues.declaration import CheckResult, QueueDeclaration, check_declaration, in_flight_threshold
from jobqueues.declaration_warnings import DeclarationWarning
from jobqueues.payload_rules import payload_expiration_days
from jobqueues.queue_declaration import fmt
from sqslease.rules import DerivedVisibilityTimeout

T = TypeVar("T")


@dataclass(frozen=True)
class Given:
    """A value given as an unresolved token (a ``CfnParameter``, an import): passed to CloudFormation as given,
    never checked at synth."""

    value: Any


@dataclass(frozen=True)
class AlarmPlan:
    """The queue alarms' thresholds, final.

    :param in_flight_threshold: messages in flight that raise the alarm.
    :param in_flight_quota: the quota it is a share of (for the description).
    :param in_flight_fraction: that share.
    :param oldest_message_age_s: seconds the oldest message may wait.
    :param dlq_depth: messages in the DLQ that raise the alarm.
    :param receives: how the DLQ alarm's description counts receives (``max_receive_count`` when a token).
    :param max_queue_time_s: seconds the p99 queue time may reach (``max_queue_time``); ``None``: no alarm.
    :param max_time_to_drain_s: seconds the backlog may take to drain (``max_time_to_drain``, an alarm on the
        consumer); ``None``: no alarm.
    :param quiet_group_age_s: seconds a fair queue's quiet groups' oldest message may wait
        (:func:`jobqueues.defaults.quiet_group_age_s`); ``None``: not a fair queue, no alarm.
    """

    in_flight_threshold: int
    in_flight_quota: int
    in_flight_fraction: float
    oldest_message_age_s: float
    dlq_depth: int
    receives: str
    max_queue_time_s: float | None = None
    max_time_to_drain_s: float | None = None
    quiet_group_age_s: float | None = None


@dataclass(frozen=True)
class QueuePlan:
    """Every final value of one job type's queue + DLQ pair. Durations in seconds.

    :param job_type: the job type name.
    :param visibility_timeout: the source queue's visibility timeout, whole seconds, or a token as given.
    :param visibility_timeout_rule: how it was chosen (``"explicit visibility_timeout"`` or the derived rule).
    :param derived: the derived visibility timeout and its rule; ``None`` when there was nothing to derive from.
    :param retention_period: the source queue's retention.
    :param dlq_retention_period: the DLQ's retention.
    :param max_receive_count: receives before a message moves to the DLQ.
    :param queue_name: the source queue's physical name; ``None``: CloudFormation names it.
    :param dead_letter_queue_name: the DLQ's physical name; ``None``: CloudFormation names it.
    :param processing_p99: the declared p99 of one message; ``None``: not declared.
    :param max_processing_time: the longest one message may take; ``None``: not declared.
    :param lambda_timeout: the consuming function's timeout; ``None``: not declared.
    :param max_batching_window: the Lambda event source's batching window (0: none).
    :param alarms: the queue alarms' thresholds; ``None`` when ``alarms.enabled`` is False.
    :param delivery_delay: the source queue's delivery delay, whole seconds, or a token as given.
    :param max_message_size: the largest message the source queue accepts, in bytes, or a token as given.
    :param deduplication_scope: the ``sqs.DeduplicationScope`` member's name, both queues; ``None``: SQS's.
    :param fifo_throughput_limit: the ``sqs.FifoThroughputLimit`` member's name, both queues; ``None``: SQS's.
    :param removal_policy: the source queue's ``RemovalPolicy`` member's name.
    :param dlq_removal_policy: the DLQ's ``RemovalPolicy`` member's name.
    :param encryption_key: the ``kms.IKey`` of both queues, as given; ``None``: SQS-managed encryption.
    :param alarm_topic: the ``sns.ITopic`` alarms notify, as given; ``None``: none.
    :param idempotency: where the consumer keeps idempotency records: ``True`` (the stack's table), a table as
        given, or ``None`` (off).
    :param fair: a fair queue: its message groups are tenants (docs/fair-queues.md).
    :param payload_bucket: where payloads larger than the queue takes are kept: ``True`` (a bucket of the job
        type's), a bucket as given, or ``None`` (none).
    :param delete_payloads: the consumer deletes a payload's object after its message.
    :param payload_expiration_days: days after which a payload object expires
        (:func:`jobqueues.payload_rules.payload_expiration_days`).
    :param errors: every problem of the declaration, each with its fix; a plan with errors is never built.
    :param warnings: findings that deploy but deserve a look, each with an id to acknowledge it by.
    """

    job_type: str
    visibility_timeout: float | Given | None
    visibility_timeout_rule: str
    derived: DerivedVisibilityTimeout | None
    retention_period: float | Given
    dlq_retention_period: float | Given
    max_receive_count: int | Given
    fifo: bool
    content_based_deduplication: bool
    queue_name: str | None
    dead_letter_queue_name: str | None
    lease_extension: bool
    processing_p99: float | None
    max_processing_time: float | None
    lambda_timeout: float | None
    max_batching_window: float
    alarms: AlarmPlan | None
    delivery_delay: float | Given = defaults.DELIVERY_DELAY_S
    max_message_size: int | Given = defaults.MAX_MESSAGE_SIZE
    deduplication_scope: str | None = None
    fifo_throughput_limit: str | None = None
    removal_policy: str = defaults.REMOVAL_POLICY
    dlq_removal_policy: str = defaults.DLQ_REMOVAL_POLICY
    encryption_key: Any = None
    alarm_topic: Any = None
    idempotency: Any = None
    fair: bool = False
    payload_bucket: Any = None
    delete_payloads: bool = True
    payload_expiration_days: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[DeclarationWarning] = field(default_factory=list)

    @property
    def visibility_timeout_s(self) -> float | None:
        """The visibility timeout in seconds; ``None`` for a token."""
        return self.visibility_timeout if isinstance(self.visibility_timeout, float | int) else None


def plan_job_queue(
    d: QueueDeclaration,
    *,
    consumer: ConsumerCheck | None = None,
    alarms_enabled: bool = True,
    resources: Mapping[str, Any] | None = None,
) -> QueuePlan:
    """The plan of declaration ``d``: its rules checked (:func:`jobqueues.declaration.check_declaration`), each
    value settled.

    :param consumer: a consumer construct's own findings, listed with the queue's. Default: none.
    :param alarms_enabled: plan the queue alarms. Default: True.
    :param resources: construct props passed through as given: ``encryption_key``, ``alarm_topic``, ``idempotency``
        (a table; ``True`` when absent and the declaration has ``idempotency``), ``payload_bucket`` (likewise).
        Default: none.
    """
    result = check_declaration(d)
    consumer = consumer or ConsumerCheck()
    errors = result.errors + consumer.errors + _alarm_input_errors(d, alarms_enabled)
    alarms = _plan_alarms(d, result, errors) if alarms_enabled else None
    resources = resources or {}
    explicit_vt = d.visibility_timeout is not None or "visibility_timeout" in d.tokens
    return QueuePlan(
        job_type=d.job_type,
        visibility_timeout=_token_or(d, "visibility_timeout", result.visibility_timeout_s),
        visibility_timeout_rule=(
            "explicit visibility_timeout"
            if explicit_vt or result.visibility_timeout is None
            else result.visibility_timeout.rule
        ),
        derived=result.visibility_timeout,
        retention_period=_given(d, "retention_period", result.retention_s),
        dlq_retention_period=_given(d, "dlq_retention_period", result.dlq_retention_s),
        max_receive_count=_token_or(d, "max_receive_count", result.max_receive_count),
        fifo=d.fifo,
        content_based_deduplication=d.content_based_deduplication,
        queue_name=_given_name(d, result.queue_name),
        dead_letter_queue_name=result.dead_letter_queue_name,
        lease_extension=d.lease_extension,
        processing_p99=d.processing_p99,
        max_processing_time=d.max_processing_time,
        lambda_timeout=d.lambda_timeout,
        max_batching_window=d.max_batching_window or defaults.MAX_BATCHING_WINDOW_S,
        alarms=alarms,
        delivery_delay=_given(d, "delivery_delay", result.delivery_delay_s),
        max_message_size=_token_or(d, "max_message_size", result.max_message_size),
        deduplication_scope=d.deduplication_scope,
        fifo_throughput_limit=d.fifo_throughput_limit,
        removal_policy=d.removal_policy or defaults.REMOVAL_POLICY,
        dlq_removal_policy=d.dlq_removal_policy or defaults.DLQ_REMOVAL_POLICY,
        encryption_key=resources.get("encryption_key"),
        alarm_topic=resources.get("alarm_topic") if alarms_enabled else None,
        idempotency=(resources.get("idempotency") or True) if d.idempotency else None,
        fair=d.fair,
        **_payloads(d, result, resources),
        errors=errors,
        warnings=result.warnings + consumer.warnings,
    )


def _payloads(d: QueueDeclaration, result: CheckResult, resources: Mapping[str, Any]) -> dict[str, Any]:
    """The plan's payload values: the bucket (``True`` when none is given), deletion, and the objects' expiry, from
    the retention periods the queues get (SQS's longest for a token)."""
    return {
        "payload_bucket": (resources.get("payload_bucket") or True) if d.payload_bucket else None,
        "delete_payloads": d.delete_payloads is not False,
        "payload_expiration_days": payload_expiration_days(
            None if "retention_period" in d.tokens else result.retention_s,
            None if "dlq_retention_period" in d.tokens else result.dlq_retention_s,
        ),
    }


#: The props that declare an alarm of their own, and that alarm.
_ALARM_BOUNDS = {"max_queue_time": "queue-time alarm", "max_time_to_drain": "time-to-drain alarm"}


def _alarm_input_errors(d: QueueDeclaration, alarms_enabled: bool) -> list[str]:
    """Alarm thresholds computed at synth from a token, or an alarm-declaring prop with the alarms off."""
    declared = {p: getattr(d, p) is not None or p in d.tokens for p in _ALARM_BOUNDS}
    if not alarms_enabled:
        return [
            f"{p} declares a {what}, but alarms.enabled is False: remove {p} or turn the alarms on"
            for p, what in _ALARM_BOUNDS.items()
            if declared[p]
        ]
    errors = [
        f"{d.prop_names.get(p, p)} is an unresolved token: the in-flight alarm threshold is computed at synth "
        "from it; pass a number, or turn the alarms off with alarms.enabled=False"
        for p in ("in_flight_quota", "in_flight_fraction")
        if p in d.tokens
    ]
    errors += [
        f"{p} is an unresolved token: the {what} threshold is computed at synth from it; pass a Duration such as "
        "Duration.minutes(5)"
        for p, what in _ALARM_BOUNDS.items()
        if p in d.tokens
    ]
    return errors


def _plan_alarms(d: QueueDeclaration, result: CheckResult, errors: list[str]) -> AlarmPlan:
    """The queue alarms' thresholds; a default oldest-message-age threshold its delay would always reach is an
    error, appended to ``errors``."""
    quota = defaults.IN_FLIGHT_QUOTA if d.in_flight_quota is None else d.in_flight_quota
    fraction = defaults.IN_FLIGHT_FRACTION if d.in_flight_fraction is None else d.in_flight_fraction
    age = d.oldest_message_age
    vt_s = result.visibility_timeout_s
    if age is None:
        known = vt_s is not None and not d.tokens.keys() & {"max_receive_count", "retention_period"}
        delay = 0 if "delivery_delay" in d.tokens else result.delivery_delay_s
        age = (
            defaults.oldest_message_age_s(vt_s, result.retention_s, result.max_receive_count, delay)
            if known and vt_s is not None
            else defaults.OLDEST_MESSAGE_AGE_MIN_S
        )
        if delay and age <= delay < result.retention_s:
            errors.append(
                f"delivery_delay {fmt(delay)} is at least half of retention_period {fmt(result.retention_s)}, the "
                "most the default oldest-message-age alarm threshold may be, so the alarm would fire on every "
                "message (a message's age includes its delay): raise retention_period above twice "
                "delivery_delay, or pass alarms.oldest_message_age"
            )
    return AlarmPlan(
        in_flight_threshold=in_flight_threshold(quota, fraction),
        in_flight_quota=quota,
        in_flight_fraction=fraction,
        oldest_message_age_s=age,
        dlq_depth=defaults.DLQ_DEPTH if d.dlq_depth is None else d.dlq_depth,
        receives="max_receive_count" if "max_receive_count" in d.tokens else str(result.max_receive_count),
        max_queue_time_s=d.max_queue_time,
        max_time_to_drain_s=d.max_time_to_drain,
        quiet_group_age_s=defaults.quiet_group_age_s(d.max_queue_time, age) if d.fair else None,
    )


def _token_or(d: QueueDeclaration, prop: str, value: T) -> T | Given:
    """The token given for ``prop``, else ``value``."""
    return Given(d.tokens[prop]) if prop in d.tokens else value


def _given(d: QueueDeclaration, prop: str, seconds: float) -> float | Given:
    """The token given for ``prop``, else ``seconds`` rounded up to whole seconds."""
    return _token_or(d, prop, float(math.ceil(seconds)))


def _given_name(d: QueueDeclaration, planned: str | None) -> str | None:
    # A token queue name is a string token: CloudFormation gets it as given.
    token = d.tokens.get("queue_name")
    return str(token) if token is not None else planned
