"""A job type's queue declaration in plain seconds, and its validation.

Pure Python (no aws_cdk) so every rule can be tested without a synth. The
``JobQueue`` construct converts its ``Duration`` props to seconds (``None`` for
values not given or unresolved tokens, which are skipped) and calls
:func:`check_declaration`; it raises one error listing every problem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqslease.rules import (
    LAMBDA_MAX_BATCHING_WINDOW_S,
    LAMBDA_MAX_TIMEOUT_S,
    SQS_MAX_RECEIVE_COUNT,
    SQS_MAX_RETENTION_S,
    SQS_MAX_VISIBILITY_TIMEOUT_S,
    SQS_MIN_RETENTION_S,
    DerivedVisibilityTimeout,
    derive_visibility_timeout,
    format_duration,
)

QUEUE_NAME_MAX_LENGTH = 80
DLQ_SUFFIX = "-dlq"
FIFO_SUFFIX = ".fifo"
_QUEUE_NAME_CHARS = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class QueueDeclaration:
    """Everything the user declared for one job type, durations in seconds.

    ``None`` means "not declared" (or an unresolved token, which is not checked).
    """

    job_type: str
    processing_p99_s: float | None = None
    lambda_timeout_s: float | None = None
    max_batching_window_s: float | None = None
    visibility_timeout_s: float | None = None
    max_processing_time_s: float | None = None
    lease_extension: bool = False
    retention_s: float | None = 4 * 86_400
    dlq_retention_s: float | None = 14 * 86_400
    max_receive_count: int | None = 5
    fifo: bool = False
    content_based_deduplication: bool = False
    queue_name: str | None = None
    dead_letter_queue_name: str | None = None
    in_flight_quota: int | None = None
    in_flight_alarm_fraction: float | None = None
    oldest_message_age_threshold_s: float | None = None
    dlq_depth_threshold: int | None = None


@dataclass
class CheckResult:
    """Outcome of :func:`check_declaration`."""

    visibility_timeout: DerivedVisibilityTimeout | None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_declaration(d: QueueDeclaration) -> CheckResult:
    """Validate a declaration and derive its visibility timeout.

    Returns every error (each says what to change) and every warning; the
    visibility timeout is ``None`` when it cannot be derived.
    """
    errors: list[str] = []
    warnings: list[str] = []
    fmt = format_duration

    # --- inputs of the derivation ------------------------------------------------
    p99 = d.processing_p99_s
    if p99 is not None and p99 <= 0:
        errors.append(f"processing_p99 must be positive (got {fmt(p99)}): declare the measured p99 handler time")
        p99 = None
    timeout = d.lambda_timeout_s
    if timeout is not None and not 0 < timeout <= LAMBDA_MAX_TIMEOUT_S:
        errors.append(
            f"lambda_timeout must be between 1 s and 15 min (got {fmt(timeout)}): "
            "Lambda cannot run longer; use an ECS consumer with lease extension for longer jobs"
        )
        timeout = None
    window = d.max_batching_window_s
    if window is not None and not 0 <= window <= LAMBDA_MAX_BATCHING_WINDOW_S:
        errors.append(f"max_batching_window must be between 0 s and 5 min (got {fmt(window)})")
        window = None
    if window is not None and d.lambda_timeout_s is None:
        errors.append("max_batching_window only applies to a Lambda consumer: declare lambda_timeout as well")

    derived: DerivedVisibilityTimeout | None = None
    if p99 is not None or timeout is not None:
        derived = derive_visibility_timeout(
            processing_p99_s=p99, lambda_timeout_s=timeout, max_batching_window_s=window or 0
        )
        if derived.seconds > SQS_MAX_VISIBILITY_TIMEOUT_S:
            errors.append(
                f"{derived.rule} gives a visibility timeout of {fmt(derived.seconds)}; SQS allows at most 12 h: "
                "split the job or run it on an ECS consumer with lease extension "
                "(lease_extension=True with a shorter visibility_timeout)"
            )
    elif (
        d.processing_p99_s is None
        and d.lambda_timeout_s is None
        and not (d.lease_extension and d.visibility_timeout_s is not None)
    ):
        errors.append(
            "no basis for the visibility timeout: declare processing_p99 (measured handler p99), "
            "or lambda_timeout for a Lambda consumer, or visibility_timeout with lease_extension=True"
        )

    # --- explicit visibility timeout ---------------------------------------------------
    vt = d.visibility_timeout_s
    if vt is not None:
        if not 0 <= vt <= SQS_MAX_VISIBILITY_TIMEOUT_S:
            errors.append(f"visibility_timeout must be between 0 s and 12 h (got {fmt(vt)})")
        elif derived is not None and vt < derived.seconds and not d.lease_extension:
            errors.append(
                f"visibility_timeout {fmt(vt)} is below the derived minimum {fmt(derived.seconds)} "
                f"({derived.rule}): remove visibility_timeout, raise it to at least {fmt(derived.seconds)}, "
                "or set lease_extension=True if the consumer extends its leases"
            )
        if timeout is not None and vt < timeout:
            errors.append(
                f"visibility_timeout {fmt(vt)} is below lambda_timeout {fmt(timeout)}: Lambda rejects such an "
                "event source mapping; raise visibility_timeout to at least the function timeout"
            )
    effective_vt = vt if vt is not None and 0 <= vt <= SQS_MAX_VISIBILITY_TIMEOUT_S else None
    if effective_vt is None and derived is not None and derived.seconds <= SQS_MAX_VISIBILITY_TIMEOUT_S:
        effective_vt = derived.seconds

    # --- declared maximum processing time ----------------------------------------------
    mpt = d.max_processing_time_s
    if mpt is not None:
        if mpt <= 0:
            errors.append(f"max_processing_time must be positive (got {fmt(mpt)})")
        elif mpt > SQS_MAX_VISIBILITY_TIMEOUT_S:
            errors.append(
                f"max_processing_time {fmt(mpt)} exceeds 12 h, the longest SQS lets a received message stay "
                "invisible, even with lease extension: split the job into steps of under 12 h"
            )
        elif effective_vt is not None and mpt > effective_vt and not d.lease_extension:
            errors.append(
                f"max_processing_time {fmt(mpt)} exceeds the visibility timeout {fmt(effective_vt)}: long jobs "
                "would be delivered twice; set lease_extension=True or raise visibility_timeout"
            )

    # --- retries and retention -----------------------------------------------------
    mrc = d.max_receive_count
    if mrc is not None and not 1 <= mrc <= SQS_MAX_RECEIVE_COUNT:
        errors.append(f"max_receive_count must be between 1 and 1000 (got {mrc}); the default is 5")
        mrc = None
    retention = d.retention_s
    if retention is not None and not SQS_MIN_RETENTION_S <= retention <= SQS_MAX_RETENTION_S:
        errors.append(f"retention_period must be between 1 min and 14 days (got {fmt(retention)})")
        retention = None
    dlq_retention = d.dlq_retention_s
    if dlq_retention is not None and not SQS_MIN_RETENTION_S <= dlq_retention <= SQS_MAX_RETENTION_S:
        errors.append(f"dlq_retention_period must be between 1 min and 14 days (got {fmt(dlq_retention)})")
        dlq_retention = None
    if retention is not None and dlq_retention is not None and dlq_retention <= retention:
        errors.append(
            f"dlq_retention_period {fmt(dlq_retention)} must be longer than retention_period {fmt(retention)}: "
            "a message keeps its original enqueue time in the DLQ and would expire there first"
        )
    if mrc is not None and retention is not None and effective_vt is not None and mrc * effective_vt > retention:
        warnings.append(
            f"max_receive_count {mrc} x visibility_timeout {fmt(effective_vt)} = {fmt(mrc * effective_vt)} "
            f"exceeds retention_period {fmt(retention)}: messages can expire before reaching the DLQ; "
            "lower max_receive_count or raise retention_period"
        )

    # --- FIFO and names ------------------------------------------------------------------
    if d.content_based_deduplication and not d.fifo:
        errors.append("content_based_deduplication needs fifo=True")
    for label, name in (("queue_name", d.queue_name), ("dead_letter_queue_name", d.dead_letter_queue_name)):
        if name is None:
            continue
        errors.extend(_check_queue_name(label, name, d.fifo))

    # --- alarms --------------------------------------------------------------------
    if d.in_flight_quota is not None and d.in_flight_quota <= 0:
        errors.append(f"in_flight_quota must be positive (got {d.in_flight_quota}); SQS's is 120,000")
    if d.in_flight_alarm_fraction is not None and not 0 < d.in_flight_alarm_fraction <= 1:
        errors.append(
            f"in_flight_alarm_fraction must be in (0, 1] (got {d.in_flight_alarm_fraction}); the default is 0.8"
        )
    age = d.oldest_message_age_threshold_s
    if age is not None:
        if age <= 0:
            errors.append(f"oldest_message_age threshold must be positive (got {fmt(age)})")
        elif retention is not None and age >= retention:
            errors.append(
                f"oldest_message_age threshold {fmt(age)} is not below retention_period {fmt(retention)}: "
                "messages would expire before the alarm fires"
            )
    if d.dlq_depth_threshold is not None and d.dlq_depth_threshold < 1:
        errors.append(f"dlq_depth threshold must be at least 1 message (got {d.dlq_depth_threshold})")

    return CheckResult(visibility_timeout=derived, errors=errors, warnings=warnings)


def _check_queue_name(label: str, name: str, fifo: bool) -> list[str]:
    problems = []
    stem = name[: -len(FIFO_SUFFIX)] if name.endswith(FIFO_SUFFIX) else name
    if fifo and not name.endswith(FIFO_SUFFIX):
        problems.append(f"{label} {name!r} must end in '.fifo' for a FIFO job queue")
    if not fifo and name.endswith(FIFO_SUFFIX):
        problems.append(f"{label} {name!r} ends in '.fifo' but fifo=False: set fifo=True or rename the queue")
    if len(name) > QUEUE_NAME_MAX_LENGTH:
        problems.append(
            f"{label} {name!r} is {len(name)} characters; SQS allows {QUEUE_NAME_MAX_LENGTH} "
            "(including '.fifo'): pass a shorter queue_name"
        )
    if not _QUEUE_NAME_CHARS.match(stem):
        problems.append(f"{label} {name!r} may only contain letters, digits, '-' and '_'")
    return problems


def default_queue_names(prefix: str, job_type: str, fifo: bool) -> tuple[str, str]:
    """Physical names ``<prefix>-<job_type>`` and ``...-dlq`` (plus ``.fifo``).

    The names are fixed at synth so the DLQ's redrive-allow policy can name its
    source queue's ARN without a circular reference.
    """
    suffix = FIFO_SUFFIX if fifo else ""
    base = f"{prefix}-{job_type}"
    return f"{base}{suffix}", f"{base}{DLQ_SUFFIX}{suffix}"
