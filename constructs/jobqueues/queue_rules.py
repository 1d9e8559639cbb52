"""The queue rules of a declaration: retries and retention, FIFO and the queue names, the alarm thresholds."""

from __future__ import annotations

import math
import re

from jobqueues import defaults
from jobqueues.declaration_warnings import FIFO_RETRIES_EXCEED_LAMBDA_TIMEOUT, RETRIES_OUTLIVE_RETENTION, SINGLE_RECEIVE
from jobqueues.defaults import CONSUMER_PERIOD_S
from jobqueues.queue_declaration import RuleContext, fmt, in_flight_threshold
from sqslease.retry import retries_backoff_s
from sqslease.rules import (
    LAMBDA_MAX_TIMEOUT_S,
    SQS_MAX_RECEIVE_COUNT,
    SQS_MAX_RETENTION_S,
    SQS_MIN_RETENTION_S,
    lambda_deadline_margin,
)
from sqslease.settings import LeaseSettings

QUEUE_NAME_MAX_LENGTH = 80
DLQ_SUFFIX = "-dlq"
FIFO_SUFFIX = ".fifo"
_QUEUE_NAME_CHARS = re.compile(r"^[A-Za-z0-9_-]+$")


def retries_and_retention(c: RuleContext) -> None:
    d, r = c.d, c.result
    if d.max_receive_count is not None:
        if 1 <= d.max_receive_count <= SQS_MAX_RECEIVE_COUNT:
            r.max_receive_count = d.max_receive_count
        else:
            c.error(f"max_receive_count must be between 1 and 1000 (got {d.max_receive_count}); the default is 5")
    retention_ok = dlq_ok = True
    for prop, value in (("retention_period", d.retention_period), ("dlq_retention_period", d.dlq_retention_period)):
        if value is not None and not SQS_MIN_RETENTION_S <= value <= SQS_MAX_RETENTION_S:
            c.error(f"{prop} must be between 1 min and 14 days (got {fmt(value)})")
            retention_ok, dlq_ok = (False, dlq_ok) if prop == "retention_period" else (retention_ok, False)
    if d.retention_period is not None and retention_ok:
        r.retention_s = math.ceil(d.retention_period)
    if d.dlq_retention_period is not None and dlq_ok:
        r.dlq_retention_s = math.ceil(d.dlq_retention_period)
    known = retention_ok and dlq_ok and not {"retention_period", "dlq_retention_period"} & d.tokens.keys()
    if known and r.dlq_retention_s <= r.retention_s:
        why = "a message keeps its original enqueue time in the DLQ and would expire there first"
        if d.dlq_retention_period is None:
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
    # A message's retention counts from when it was sent: its delivery delay included.
    delay = 0 if "delivery_delay" in d.tokens else r.delivery_delay_s
    if "max_receive_count" not in d.tokens and c.vt is not None and delay + r.max_receive_count * c.vt > r.retention_s:
        waited = f"delivery_delay {fmt(delay)} + " if delay else ""
        c.warn(
            RETRIES_OUTLIVE_RETENTION,
            f"{waited}max_receive_count {r.max_receive_count} x visibility_timeout {fmt(c.vt)} = "
            f"{fmt(delay + r.max_receive_count * c.vt)} exceeds retention_period {fmt(r.retention_s)}: messages can "
            "expire before reaching the DLQ; lower max_receive_count"
            + (" or delivery_delay" if delay else "")
            + " or raise retention_period",
        )


def fifo_lambda_retries(c: RuleContext) -> None:
    """FIFO with a Lambda consumer: a failed record is retried within its invocation only while its back-off fits
    (``sqslease.invocation_retry``); warn when the retries of ``max_receive_count`` do not fit in one."""
    d, r = c.d, c.result
    if not d.fifo or c.timeout is None or "max_receive_count" in d.tokens:
        return
    if lambda_retries_fit(r.max_receive_count, c.timeout, c.p99):
        return
    n = r.max_receive_count
    absorbed = max(k for k in range(1, n + 1) if k == 1 or lambda_retries_fit(k, c.timeout, c.p99))
    timeout = next(
        (t for t in range(math.ceil(c.timeout) + 1, LAMBDA_MAX_TIMEOUT_S + 1) if lambda_retries_fit(n, t, c.p99)), None
    )
    runs = f" and {n} runs of {c.name('processing_p99')} {fmt(c.p99)}" if c.p99 else ""
    room = c.timeout - lambda_deadline_margin(c.timeout)
    fixes = [f"max_receive_count {absorbed} absorbs its retries in one invocation"] if absorbed > 1 else []
    fixes += [f"{c.name('lambda_timeout')} {fmt(timeout)} absorbs max_receive_count {n}'s"] if timeout else []
    c.warn(
        FIFO_RETRIES_EXCEED_LAMBDA_TIMEOUT,
        "fifo=True with a Lambda consumer: a failed record is retried within its invocation while its back-off "
        f"fits. The {n - 1} retries of max_receive_count {n} wait up to {fmt(retries_backoff_s(n))}{runs}, more "
        f"than the {fmt(room)} {c.name('lambda_timeout')} {fmt(c.timeout)} leaves before its deadline margin: a "
        "retry that does not fit releases the later records of the failed record's group, each release costing "
        "them a receive, so a record that fails every time leaves them fewer attempts of their own"
        + (". " + "; or ".join(fixes) if fixes else ""),
    )


def lambda_retries_fit(max_receive_count: int, timeout_s: float, processing_p99_s: float | None) -> bool:
    """Whether a FIFO record's retries (each back-off at its longest, with the consumer's default back-off) and
    its ``max_receive_count`` runs of ``processing_p99_s`` fit in one invocation of ``timeout_s``, before its
    deadline margin (``sqslease.rules.lambda_deadline_margin``)."""
    backoff = retries_backoff_s(max_receive_count, LeaseSettings.backoff_base, LeaseSettings.backoff_max)
    return backoff + max_receive_count * (processing_p99_s or 0) < timeout_s - lambda_deadline_margin(timeout_s)


def fifo_and_names(c: RuleContext) -> None:
    d, r = c.d, c.result
    if d.content_based_deduplication and not d.fifo:
        c.error(
            "content_based_deduplication=True needs fifo=True: declare fifo=True, or leave "
            "content_based_deduplication unset"
        )
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


def alarm_thresholds(c: RuleContext) -> None:
    d, n = c.d, c.name
    quota = defaults.IN_FLIGHT_QUOTA if d.in_flight_quota is None else d.in_flight_quota
    fraction = defaults.IN_FLIGHT_FRACTION if d.in_flight_fraction is None else d.in_flight_fraction
    quota_ok = quota > 0 or "in_flight_quota" in d.tokens
    if not quota_ok:
        c.error(f"{n('in_flight_quota')} must be positive (got {quota}); SQS's is 120,000")
    fraction_ok = 0 < fraction <= 1
    if not fraction_ok:
        c.error(f"{n('in_flight_fraction')} must be in (0, 1] (got {fraction:g}); the default is 0.8")
    if quota_ok and fraction_ok and not {"in_flight_quota", "in_flight_fraction"} & d.tokens.keys():
        if in_flight_threshold(quota, fraction) < 1:
            c.error(
                f"{n('in_flight_fraction')} {fraction:g} x {n('in_flight_quota')} {quota:,} gives an in-flight "
                "alarm threshold of 0 messages, so the alarm would always fire: raise either"
            )
    age = d.oldest_message_age
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


def queue_time_slo(c: RuleContext) -> None:
    d, r = c.d, c.result
    slo = d.max_queue_time
    if slo is None:
        return
    if slo <= 0:
        c.error(
            f"max_queue_time must be positive (got {fmt(slo)}): declare the p99 wait the team promises, e.g. "
            "Duration.minutes(5), or leave it out for no queue-time alarm"
        )
    elif "retention_period" not in d.tokens and slo > r.retention_s:
        c.error(
            f"max_queue_time {fmt(slo)} exceeds retention_period {fmt(r.retention_s)}: a message expires before it "
            "waits that long, so the alarm could never fire; lower max_queue_time or raise retention_period"
        )


def time_to_drain_bound(c: RuleContext) -> None:
    d, r = c.d, c.result
    bound = d.max_time_to_drain
    if bound is None:
        return
    if bound <= 0:
        c.error(
            f"max_time_to_drain must be positive (got {fmt(bound)}): declare how long the backlog may take to "
            "drain, e.g. Duration.minutes(30), or leave it out for no time-to-drain alarm"
        )
    elif bound < CONSUMER_PERIOD_S:
        c.error(
            f"max_time_to_drain {fmt(bound)} is below the {fmt(CONSUMER_PERIOD_S)} the deletion rate is measured "
            f"over: raise it to at least {fmt(CONSUMER_PERIOD_S)}"
        )
    elif "retention_period" not in d.tokens and bound > r.retention_s:
        c.error(
            f"max_time_to_drain {fmt(bound)} exceeds retention_period {fmt(r.retention_s)}: messages expire before "
            "the backlog drains, so the alarm would fire too late; lower max_time_to_drain or raise retention_period"
        )


def resolve_visibility_timeout(c: RuleContext) -> None:
    c.result.visibility_timeout_s = c.vt
