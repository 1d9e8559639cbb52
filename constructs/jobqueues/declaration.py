"""A job type's queue declaration in plain seconds, and its validation as a rule table.

Pure Python (no aws_cdk) so every rule runs and is tested without the CDK's Node kernel. The constructs turn
their props into a :class:`QueueDeclaration` (:mod:`jobqueues.inputs` checks types and converts ``Duration``
props to seconds) and call :func:`check_declaration`; one ``JobQueueError`` then lists every problem.

Unresolved tokens (a ``CfnParameter``, an imported value) are not known at synth: they are never checked, and
a visibility timeout is never derived from one. An explicit ``visibility_timeout`` token is used as given.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from jobqueues import defaults
from jobqueues.consumer_rules import check_lambda_timing
from jobqueues.declaration_warnings import RETRIES_OUTLIVE_RETENTION, SINGLE_RECEIVE, DeclarationWarning
from sqslease.rules import (
    DEFAULT_HEARTBEAT_INTERVAL_S,
    LAMBDA_MAX_BATCHING_WINDOW_S,
    LAMBDA_MAX_TIMEOUT_S,
    SQS_MAX_RECEIVE_COUNT,
    SQS_MAX_RETENTION_S,
    SQS_MAX_VISIBILITY_TIMEOUT_S,
    SQS_MIN_RETENTION_S,
    DerivedVisibilityTimeout,
    consumer_extension_threshold,
    derive_visibility_timeout,
    format_duration,
    lambda_visibility_timeout,
    lease_timing_problems,
)

QUEUE_NAME_MAX_LENGTH = 80
DLQ_SUFFIX = "-dlq"
FIFO_SUFFIX = ".fifo"
_QUEUE_NAME_CHARS = re.compile(r"^[A-Za-z0-9_-]+$")

fmt = format_duration


@dataclass(frozen=True)
class QueueDeclaration:
    """Everything the user declared for one job type, durations in seconds.

    ``None`` means "not declared": the default of :mod:`jobqueues.defaults` applies. Props given as unresolved
    tokens are ``None`` here and named in ``tokens``.

    :param job_type: the job type name (the construct id).
    :param name_prefix: prefix of the default queue names (the stack name). Default: no default names.
    :param tokens: props given as unresolved tokens, by their name in this class.
    :param prop_names: how the user spelled each prop, for messages (e.g. ``lambda_timeout`` is ``timeout``
        on a ``LambdaJob``, ``in_flight_fraction`` is ``alarms.in_flight_fraction``). Default: these names.
    """

    job_type: str
    processing_p99_s: float | None = None
    lambda_timeout_s: float | None = None
    max_batching_window_s: float | None = None
    visibility_timeout_s: float | None = None
    max_processing_time_s: float | None = None
    lease_extension: bool = False
    retention_s: float | None = None
    dlq_retention_s: float | None = None
    max_receive_count: int | None = None
    fifo: bool = False
    content_based_deduplication: bool = False
    queue_name: str | None = None
    name_prefix: str | None = None
    in_flight_quota: int | None = None
    in_flight_fraction: float | None = None
    oldest_message_age_s: float | None = None
    dlq_depth: int | None = None
    tokens: frozenset[str] = frozenset()
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
    errors: list[str] = field(default_factory=list)
    warnings: list[DeclarationWarning] = field(default_factory=list)


@dataclass
class _Context:
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


def check_declaration(d: QueueDeclaration) -> CheckResult:
    """Validate a declaration and derive its visibility timeout and queue names.

    Returns every error (each names the prop, the value and what to change) and every warning.
    """
    context = _Context(d, CheckResult(visibility_timeout=None))
    for rule in RULES:
        rule(context)
    return context.result


# --- the rules, in order: each may resolve values the later ones read ------------------------------------


def _derivation_inputs(c: _Context) -> None:
    d, n = c.d, c.name
    if d.processing_p99_s is not None:
        if d.processing_p99_s <= 0:
            c.error(
                f"{n('processing_p99')} must be positive (got {fmt(d.processing_p99_s)}): "
                "declare the measured p99 handler time of one message"
            )
        elif d.processing_p99_s > SQS_MAX_VISIBILITY_TIMEOUT_S:
            c.error(
                f"{n('processing_p99')} {fmt(d.processing_p99_s)} is over 12 h, the longest SQS lets a received "
                "message stay invisible even with lease extension: split the job into steps of under 12 h"
            )
        else:
            c.p99 = d.processing_p99_s
    if d.lambda_timeout_s is not None:
        if not 0 < d.lambda_timeout_s <= LAMBDA_MAX_TIMEOUT_S:
            c.error(
                f"{n('lambda_timeout')} must be between 1 s and 15 min (got {fmt(d.lambda_timeout_s)}): Lambda "
                "cannot run longer; use an ECS consumer with lease extension for longer jobs"
            )
        else:
            c.timeout = d.lambda_timeout_s
    window = d.max_batching_window_s
    if window is not None:
        if not 0 <= window <= LAMBDA_MAX_BATCHING_WINDOW_S:
            c.error(f"{n('max_batching_window')} must be between 0 s and 5 min (got {fmt(window)})")
        elif d.lambda_timeout_s is None and "lambda_timeout_s" not in d.tokens:
            c.error(
                f"{n('max_batching_window')} only applies to a Lambda consumer: declare {n('lambda_timeout')} as well"
            )
        else:
            c.window = window
        if d.fifo and window > 0:
            c.error(
                f"{n('max_batching_window')} {fmt(window)} is not supported for FIFO queues (Lambda's SQS event "
                f"source rejects it): remove {n('max_batching_window')} or set fifo=False"
            )


def _derived_visibility_timeout(c: _Context) -> None:
    d, n = c.d, c.name
    leased_vt = d.lease_extension and (d.visibility_timeout_s is not None or "visibility_timeout_s" in d.tokens)
    if c.p99 is not None or c.timeout is not None:
        derived = derive_visibility_timeout(
            processing_p99_s=c.p99,
            lambda_timeout_s=c.timeout,
            max_batching_window_s=c.window or 0,
            lease_extension=d.lease_extension,
        )
        c.result.visibility_timeout = derived
        # With lease extension and an explicit VT, the derived VT is no queue setting: the 12 h limit is then
        # on total processing time (max_processing_time), checked below.
        if derived.seconds > SQS_MAX_VISIBILITY_TIMEOUT_S and not leased_vt:
            c.error(
                f"{derived.rule} gives a visibility timeout of {fmt(derived.seconds)}; SQS allows at most 12 h: "
                "split the job or run it on an ECS consumer with lease extension (lease_extension=True, a "
                "shorter visibility_timeout and max_processing_time of at most 12 h)"
            )
        return
    unknown = [p for p in ("processing_p99_s", "lambda_timeout_s") if p in d.tokens]
    explicit_vt = d.visibility_timeout_s is not None or "visibility_timeout_s" in d.tokens
    if unknown and not explicit_vt:
        names = " and ".join(n(p.removesuffix("_s")) for p in unknown)
        c.error(
            f"{names} is an unresolved token (e.g. a CfnParameter): a visibility timeout cannot be derived from "
            "a value unknown at synth; pass visibility_timeout explicitly, or a Duration known at synth"
        )
    elif not unknown and not leased_vt and d.processing_p99_s is None and d.lambda_timeout_s is None:
        c.error(
            f"no basis for the visibility timeout: declare {n('processing_p99')} (measured handler p99), "
            f"or {n('lambda_timeout')} for a Lambda consumer, or visibility_timeout with lease_extension=True"
        )


def _explicit_visibility_timeout(c: _Context) -> None:
    d, n = c.d, c.name
    vt = d.visibility_timeout_s
    derived = c.result.visibility_timeout
    if vt is None:
        if derived is not None and derived.seconds <= SQS_MAX_VISIBILITY_TIMEOUT_S:
            c.vt = derived.seconds
        return
    if not 0 <= vt <= SQS_MAX_VISIBILITY_TIMEOUT_S:
        c.error(f"visibility_timeout must be between 0 s and 12 h (got {fmt(vt)})")
        return
    vt = math.ceil(vt)  # SQS takes whole seconds
    c.vt = vt
    if derived is not None and vt < derived.seconds and not d.lease_extension:
        c.error(
            f"visibility_timeout {fmt(vt)} is below the derived minimum {fmt(derived.seconds)} "
            f"({derived.rule}): remove visibility_timeout, raise it to at least {fmt(derived.seconds)}, "
            "or set lease_extension=True if the consumer extends its leases"
        )
    if c.timeout is not None and vt < c.timeout:
        c.error(
            f"visibility_timeout {fmt(vt)} is below {n('lambda_timeout')} {fmt(c.timeout)}: Lambda rejects "
            "such an event source mapping; raise visibility_timeout to at least the function timeout"
        )
    elif c.timeout is not None and d.lease_extension:
        # The rule add_lambda_consumer applies to the function too.
        least = lambda_visibility_timeout(c.timeout, c.window or 0, lease_extension=True)
        if vt < least.seconds:
            c.error(
                f"visibility_timeout {fmt(vt)} is below the {fmt(least.seconds)} a Lambda consumer needs "
                f"({least.rule}): raise visibility_timeout to at least {fmt(least.seconds)}"
            )


def _lambda_timing(c: _Context) -> None:
    if c.timeout is not None:
        for problem in check_lambda_timing(
            c.timeout, processing_p99_s=c.p99, timeout_name=c.name("lambda_timeout"), p99_name=c.name("processing_p99")
        ):
            c.error(problem)


def _consumer_lease(c: _Context) -> None:
    if c.vt is None:
        return
    # The settings a consumer gets (consumer_settings) must be ones sqslease accepts: one rule for both.
    heartbeat = c.d.lease_extension
    problems = consumer_lease_problems(c.vt, heartbeat=heartbeat)
    if problems:
        shortest = next(s for s in range(1, 61) if not consumer_lease_problems(s, heartbeat=heartbeat))
        c.error(
            f"a lease of visibility_timeout {fmt(c.vt)} cannot be kept by sqslease ({problems[0]}): raise "
            f"visibility_timeout to at least {fmt(shortest)}" + (", or set lease_extension=False" if heartbeat else "")
        )


def consumer_lease_problems(vt_s: float, *, heartbeat: bool) -> list[str]:
    """Why ``sqslease`` would refuse the lease settings a consumer of a ``vt_s`` queue gets; empty when none."""
    threshold = consumer_extension_threshold(vt_s, heartbeat=heartbeat)
    return lease_timing_problems(vt_s, threshold, DEFAULT_HEARTBEAT_INTERVAL_S, heartbeat=heartbeat)


def _max_processing_time(c: _Context) -> None:
    d, n = c.d, c.name
    mpt = d.max_processing_time_s
    if mpt is None:
        return
    if mpt <= 0:
        c.error(f"{n('max_processing_time')} must be positive (got {fmt(mpt)})")
    elif mpt > SQS_MAX_VISIBILITY_TIMEOUT_S:
        c.error(
            f"{n('max_processing_time')} {fmt(mpt)} exceeds 12 h, the longest SQS lets a received message stay "
            "invisible, even with lease extension: split the job into steps of under 12 h"
        )
    elif c.vt is not None and mpt > c.vt and not d.lease_extension:
        c.error(
            f"{n('max_processing_time')} {fmt(mpt)} exceeds the visibility timeout {fmt(c.vt)}: long jobs "
            "would be delivered twice; set lease_extension=True or raise visibility_timeout"
        )
    elif c.p99 is not None and mpt < c.p99:
        c.error(
            f"{n('max_processing_time')} {fmt(mpt)} is below {n('processing_p99')} {fmt(c.p99)}: the longest a "
            "message may take cannot be shorter than the p99; raise it or lower the p99"
        )


def _retries_and_retention(c: _Context) -> None:
    d, r = c.d, c.result
    if d.max_receive_count is not None:
        if 1 <= d.max_receive_count <= SQS_MAX_RECEIVE_COUNT:
            r.max_receive_count = d.max_receive_count
        else:
            c.error(f"max_receive_count must be between 1 and 1000 (got {d.max_receive_count}); the default is 5")
    retention_ok = dlq_ok = True
    for prop, value in (("retention_period", d.retention_s), ("dlq_retention_period", d.dlq_retention_s)):
        if value is not None and not SQS_MIN_RETENTION_S <= value <= SQS_MAX_RETENTION_S:
            c.error(f"{prop} must be between 1 min and 14 days (got {fmt(value)})")
            retention_ok, dlq_ok = (False, dlq_ok) if prop == "retention_period" else (retention_ok, False)
    if d.retention_s is not None and retention_ok:
        r.retention_s = math.ceil(d.retention_s)
    if d.dlq_retention_s is not None and dlq_ok:
        r.dlq_retention_s = math.ceil(d.dlq_retention_s)
    known = retention_ok and dlq_ok and not {"retention_s", "dlq_retention_s"} & d.tokens
    if known and r.dlq_retention_s <= r.retention_s:
        why = "a message keeps its original enqueue time in the DLQ and would expire there first"
        if d.dlq_retention_s is None:
            c.error(
                f"retention_period {fmt(r.retention_s)} leaves no time in the dead-letter queue, whose retention "
                f"is {fmt(r.dlq_retention_s)} (the SQS maximum) and must be longer ({why}): lower "
                "retention_period, e.g. to Duration.days(7)"
            )
        else:
            c.error(
                f"dlq_retention_period {fmt(r.dlq_retention_s)} must be longer than retention_period "
                f"{fmt(r.retention_s)} ({why}): raise dlq_retention_period or lower retention_period"
            )
    if "max_receive_count" not in d.tokens and r.max_receive_count < 2:
        c.warn(
            SINGLE_RECEIVE,
            f"max_receive_count {r.max_receive_count}: a message that a stopping consumer (a deployment, a "
            "scale-in) received but did not start has used its only receive and moves to the DLQ without "
            "having run; raise max_receive_count to at least 2",
        )
    if "max_receive_count" not in d.tokens and c.vt is not None and r.max_receive_count * c.vt > r.retention_s:
        c.warn(
            RETRIES_OUTLIVE_RETENTION,
            f"max_receive_count {r.max_receive_count} x visibility_timeout {fmt(c.vt)} = "
            f"{fmt(r.max_receive_count * c.vt)} exceeds retention_period {fmt(r.retention_s)}: messages can "
            "expire before reaching the DLQ; lower max_receive_count or raise retention_period",
        )


def _fifo_and_names(c: _Context) -> None:
    d, r = c.d, c.result
    if d.content_based_deduplication and not d.fifo:
        c.error("content_based_deduplication=True needs fifo=True")
    suffix = FIFO_SUFFIX if d.fifo else ""
    if d.queue_name is not None:
        problems = _queue_name_problems(d.queue_name, d.fifo)
        for problem in problems:
            c.error(f"queue_name {d.queue_name!r} {problem}")
        if problems:
            return
        stem = d.queue_name.removesuffix(FIFO_SUFFIX)
        r.queue_name, r.dead_letter_queue_name = d.queue_name, f"{stem}{DLQ_SUFFIX}{suffix}"
        if len(r.dead_letter_queue_name) > QUEUE_NAME_MAX_LENGTH:
            room = QUEUE_NAME_MAX_LENGTH - len(DLQ_SUFFIX)
            c.error(
                f"queue_name {d.queue_name!r} makes the dead-letter queue name {r.dead_letter_queue_name!r} "
                f"({len(r.dead_letter_queue_name)} characters, SQS allows {QUEUE_NAME_MAX_LENGTH}): pass a "
                f"queue_name of at most {room} characters"
            )
        return
    if "queue_name" in d.tokens or d.name_prefix is None:
        return
    if not _QUEUE_NAME_CHARS.match(d.job_type):
        c.error(
            f"job type {d.job_type!r} may only contain letters, digits, '-' and '_' (it names the queues, "
            "metrics and profiles): rename the job type"
        )
        return
    base = f"{d.name_prefix}-{d.job_type}"
    r.queue_name, r.dead_letter_queue_name = f"{base}{suffix}", f"{base}{DLQ_SUFFIX}{suffix}"
    if len(r.dead_letter_queue_name) > QUEUE_NAME_MAX_LENGTH:
        c.error(
            f"the default queue names '<stack name>-<job type>' make {r.dead_letter_queue_name!r} "
            f"({len(r.dead_letter_queue_name)} characters, SQS allows {QUEUE_NAME_MAX_LENGTH}): pass a shorter "
            "queue_name, or shorten the job type or stack name"
        )


def _queue_name_problems(name: str, fifo: bool) -> list[str]:
    problems = []
    if fifo and not name.endswith(FIFO_SUFFIX):
        problems.append("must end in '.fifo' for a FIFO job queue")
    if not fifo and name.endswith(FIFO_SUFFIX):
        problems.append("ends in '.fifo' but fifo=False: set fifo=True or rename the queue")
    if len(name) > QUEUE_NAME_MAX_LENGTH:
        problems.append(
            f"is {len(name)} characters; SQS allows {QUEUE_NAME_MAX_LENGTH} (including '.fifo'): "
            "pass a shorter queue_name"
        )
    if not _QUEUE_NAME_CHARS.match(name.removesuffix(FIFO_SUFFIX)):
        problems.append("may only contain letters, digits, '-' and '_' (and a final '.fifo')")
    return problems


def _alarm_thresholds(c: _Context) -> None:
    d, n = c.d, c.name
    quota = defaults.IN_FLIGHT_QUOTA if d.in_flight_quota is None else d.in_flight_quota
    fraction = defaults.IN_FLIGHT_FRACTION if d.in_flight_fraction is None else d.in_flight_fraction
    quota_ok = quota > 0 or "in_flight_quota" in d.tokens
    if not quota_ok:
        c.error(f"{n('in_flight_quota')} must be positive (got {quota}); SQS's is 120,000")
    fraction_ok = 0 < fraction <= 1
    if not fraction_ok:
        c.error(f"{n('in_flight_fraction')} must be in (0, 1] (got {fraction:g}); the default is 0.8")
    if quota_ok and fraction_ok and not {"in_flight_quota", "in_flight_fraction"} & d.tokens:
        if in_flight_threshold(quota, fraction) < 1:
            c.error(
                f"{n('in_flight_fraction')} {fraction:g} x {n('in_flight_quota')} {quota:,} gives an in-flight "
                "alarm threshold of 0 messages, so the alarm would always fire: raise either"
            )
    age = d.oldest_message_age_s
    if age is not None:
        if age <= 0:
            c.error(f"{n('oldest_message_age')} must be positive (got {fmt(age)})")
        elif age >= c.result.retention_s:
            c.error(
                f"{n('oldest_message_age')} {fmt(age)} is not below retention_period {fmt(c.result.retention_s)}: "
                "messages would expire before the alarm fires; lower it"
            )
    if d.dlq_depth is not None and d.dlq_depth < 1:
        c.error(f"{n('dlq_depth')} must be at least 1 message (got {d.dlq_depth})")


def _resolve_visibility_timeout(c: _Context) -> None:
    c.result.visibility_timeout_s = c.vt


def in_flight_threshold(quota: int, fraction: float) -> int:
    """The in-flight alarm threshold: ``fraction`` of ``quota``, whole messages rounded down."""
    return math.floor(quota * fraction)


RULES: tuple[Callable[[_Context], None], ...] = (
    _derivation_inputs,
    _lambda_timing,
    _derived_visibility_timeout,
    _explicit_visibility_timeout,
    _consumer_lease,
    _max_processing_time,
    _retries_and_retention,
    _fifo_and_names,
    _alarm_thresholds,
    _resolve_visibility_timeout,
)
