"""A job type's declaration in plain seconds, the result of checking it, and what its rules share.

Pure Python (no aws_cdk), like every rule: the constructs turn their props into a :class:`QueueDeclaration`
(:mod:`jobqueues.planning`), :func:`jobqueues.declaration.check_declaration` runs the rules on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from jobqueues import defaults
from jobqueues.declaration_warnings import DeclarationWarning
from sqslease.rules import DerivedVisibilityTimeout, format_duration

fmt = format_duration


@dataclass(frozen=True)
class QueueDeclaration:
    """Everything the user declared for one job type, by prop name; durations in seconds.

    ``None`` means "not declared": the default of :mod:`jobqueues.defaults` applies. Props given as unresolved
    tokens are ``None`` here and kept in ``tokens`` as given.

    :param job_type: the job type name (the construct id).
    :param name_prefix: prefix of the default queue names (the stack name). Default: no default names.
    :param tokens: props given as unresolved tokens (a ``CfnParameter``, an import): prop name -> the value as
        given, which the queue then gets unchecked. Default: none.
    :param adopted: the queue exists (``JobQueue.from_queue_attributes``): its visibility timeout is a fact, which
        needs no basis to derive it from; it is still checked against the declared p99 and Lambda timeout.
        Default: False.
    :param ecs_consumer: declared by an ``EcsJob``: hints never suggest Lambda props. Default: False.
    :param max_message_size: bytes; ``deduplication_scope``, ``fifo_throughput_limit``, ``removal_policy`` and
        ``dlq_removal_policy`` are the names of the CDK enum members given (``"MESSAGE_GROUP"``, ``"RETAIN"``).
    :param idempotency: the consumer keeps idempotency records (the table is a construct, not declared here).
        Default: False.
    :param fair: a fair queue: its message groups are tenants (docs/fair-queues.md); a standard queue only.
        Default: False.
    :param payload_bucket: the job type keeps payloads larger than its queue takes in a bucket (the bucket is a
        construct, not declared here). Default: False.
    :param delete_payloads: ``delete_payloads`` as given (``None``: not given). Default: None.
    :param prop_names: how the user spelled each prop, for messages (e.g. ``lambda_timeout`` is ``timeout``
        on a ``LambdaJob``, ``in_flight_fraction`` is ``alarms.in_flight_fraction``). Default: these names.
    """

    job_type: str
    processing_p99: float | None = None
    lambda_timeout: float | None = None
    max_batching_window: float | None = None
    visibility_timeout: float | None = None
    max_processing_time: float | None = None
    lease_extension: bool = False
    retention_period: float | None = None
    dlq_retention_period: float | None = None
    max_receive_count: int | None = None
    fifo: bool = False
    content_based_deduplication: bool = False
    queue_name: str | None = None
    name_prefix: str | None = None
    delivery_delay: float | None = None
    max_message_size: int | None = None
    deduplication_scope: str | None = None
    fifo_throughput_limit: str | None = None
    removal_policy: str | None = None
    dlq_removal_policy: str | None = None
    in_flight_quota: int | None = None
    in_flight_fraction: float | None = None
    oldest_message_age: float | None = None
    dlq_depth: int | None = None
    max_queue_time: float | None = None
    max_time_to_drain: float | None = None
    idempotency: bool = False
    fair: bool = False
    payload_bucket: bool = False
    delete_payloads: bool | None = None
    tokens: Mapping[str, object] = field(default_factory=dict)
    adopted: bool = False
    ecs_consumer: bool = False
    prop_names: Mapping[str, str] = field(default_factory=dict)


@dataclass
class CheckResult:
    """Outcome of :func:`check_declaration`: the derived numbers, every error and every warning.

    :param visibility_timeout: the derived VT and its rule; ``None`` when nothing to derive from.
    :param visibility_timeout_s: the VT the queue gets (explicit or derived); ``None`` for a token.
    :param queue_name: the source queue's physical name; ``None`` for a token.
    :param dead_letter_queue_name: the DLQ's physical name; ``None`` for a token.
    """

    visibility_timeout: DerivedVisibilityTimeout | None
    visibility_timeout_s: float | None = None
    queue_name: str | None = None
    dead_letter_queue_name: str | None = None
    retention_s: float = defaults.RETENTION_S
    dlq_retention_s: float = defaults.DLQ_RETENTION_S
    max_receive_count: int = defaults.MAX_RECEIVE_COUNT
    delivery_delay_s: float = defaults.DELIVERY_DELAY_S
    max_message_size: int = defaults.MAX_MESSAGE_SIZE
    errors: list[str] = field(default_factory=list)
    warnings: list[DeclarationWarning] = field(default_factory=list)


@dataclass
class RuleContext:
    """What the rules read and write: the declaration, the values resolved so far, and the findings."""

    d: QueueDeclaration
    result: CheckResult
    p99: float | None = None
    timeout: float | None = None
    window: float | None = None
    vt: float | None = None

    def name(self, prop: str) -> str:
        return self.d.prop_names.get(prop, prop)

    def error(self, message: str) -> None:
        self.result.errors.append(message)

    def warn(self, warning_id: str, message: str) -> None:
        self.result.warnings.append(DeclarationWarning(warning_id, message))


def in_flight_threshold(quota: int, fraction: float) -> int:
    """The in-flight alarm threshold: ``fraction`` of ``quota``, whole messages rounded down."""
    return math.floor(quota * fraction)
