"""Visibility-timeout rules: the one implementation, shared by stacks, runtime and jobstats.

Pure functions on seconds. This module imports nothing from AWS so that the CDK
constructs (`jobqueues`), the consumer runtime (`sqslease`) and the Spark job
(`jobstats`) all derive the same numbers from the same declaration.

Sources: SQS allows a visibility timeout of 0 s to 12 h; the usual guidance is
"about 2 x the p99 processing time, at least 10 s"; AWS Lambda recommends a
queue visibility timeout of at least 6 x the function timeout plus the maximum
batching window, and requires at least the function timeout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SQS_MAX_VISIBILITY_TIMEOUT_S = 43_200  # 12 h: also the total time a message can stay received
#: A consumer stops extending a lease this long after its receive: SQS's 12 h less a minute for the last extension.
DEFAULT_MAX_TOTAL_LEASE_S = SQS_MAX_VISIBILITY_TIMEOUT_S - 60
SQS_MIN_RETENTION_S = 60
SQS_MAX_RETENTION_S = 1_209_600  # 14 days
SQS_MAX_RECEIVE_COUNT = 1_000
SQS_IN_FLIGHT_QUOTA = 120_000  # standard and FIFO queues
SQS_MAX_BATCH_ENTRIES = 10
LAMBDA_MAX_TIMEOUT_S = 900
LAMBDA_MAX_BATCHING_WINDOW_S = 300

P99_MULTIPLIER = 2
MIN_VISIBILITY_TIMEOUT_FROM_P99_S = 10
LAMBDA_TIMEOUT_MULTIPLIER = 6
#: With lease extension, the lease the event source's poller took must still cover the invocation's start after
#: the batching window: a cold start's init phase (at most 10 s for an on-demand function) and the renewal.
LAMBDA_START_ALLOWANCE_S = 10
LAMBDA_DEFAULT_TIMEOUT_S = 3  # a function without a timeout of its own

#: The Lambda adapter stops starting records when less than its deadline margin is left: ``deadline_margin``
#: (5 s by default), at most this share of the time the invocation started with ...
DEFAULT_DEADLINE_MARGIN_S = 5
LAMBDA_DEADLINE_MARGIN_FRACTION = 0.25
#: ... and a margin shorter than this leaves no room to release the unstarted records and answer: a function
#: timeout whose margin would be shorter cannot be served (2 s is the shortest).
MIN_LAMBDA_DEADLINE_MARGIN_S = 0.5
#: A record running on the invocation's own thread that is still running with less than this share of the deadline
#: margin left is hung (:func:`lambda_hang_margin`).
LAMBDA_HANG_MARGIN_FRACTION = 0.5

DEFAULT_EXTENSION_THRESHOLD_S = 5
DEFAULT_HEARTBEAT_INTERVAL_S = 1
#: A lease request's timeout is at most this (see :func:`default_request_timeout`).
MAX_LEASE_REQUEST_TIMEOUT_S = 2

# Consumer defaults, one place each: the worker, the Lambda adapter and the constructs all read these.
#: Handlers running at once in one worker (an ECS task).
DEFAULT_WORKER_CONCURRENCY = 4
#: Records per Lambda invocation (the event source's BatchSize; SQS's own default).
DEFAULT_LAMBDA_BATCH_SIZE = 10
#: After SIGTERM, how long running handlers may finish before their messages are released (ECS stopTimeout
#: is this + 5 s, at most 120 s).
DEFAULT_SHUTDOWN_GRACE_S = 25
#: Seconds an ``async def`` handler cancelled at its ``max_processing_time`` may take to end (it may catch the
#: cancellation, or block its loop); one still running then is hung, like a thread that ran past its time.
ASYNC_CANCEL_GRACE_S = 5
#: Exit status of a consumer's process that ends because a handler ran past ``max_processing_time`` and did not
#: end: the worker after its drain, a Lambda execution environment after its invocation (the thread ends with it).
HUNG_EXIT_CODE = 3


def visibility_timeout_for_p99(processing_p99_s: float) -> int:
    """VT for a job whose p99 processing time is ``processing_p99_s`` seconds.

    ``max(2 x p99, 10 s)``, rounded up to whole seconds (SQS takes integers).
    """
    if processing_p99_s <= 0:
        raise ValueError(f"processing_p99 must be positive, got {processing_p99_s} s")
    return max(math.ceil(P99_MULTIPLIER * processing_p99_s), MIN_VISIBILITY_TIMEOUT_FROM_P99_S)


def visibility_timeout_for_lambda(
    function_timeout_s: float, max_batching_window_s: float = 0, *, lease_extension: bool = False
) -> int:
    """The shortest VT of a queue consumed by a Lambda function, whole seconds.

    ``6 x timeout + batching window`` (AWS's guidance: the event source holds a received batch through its
    batching window and while it retries throttled invocations, time no handler runs). With lease extension
    ``timeout + batching window + 10 s``: the adapter renews every record's lease as the invocation starts and
    heartbeats it, so the poller's own lease need only cover the window, the start (``LAMBDA_START_ALLOWANCE_S``)
    and, should the renewal fail, the invocation itself. A throttled batch may then reappear before it runs.
    """
    if function_timeout_s <= 0:
        raise ValueError(f"lambda_timeout must be positive, got {function_timeout_s} s")
    if max_batching_window_s < 0:
        raise ValueError(f"max_batching_window must not be negative, got {max_batching_window_s} s")
    if lease_extension:
        return math.ceil(function_timeout_s + max_batching_window_s + LAMBDA_START_ALLOWANCE_S)
    return math.ceil(LAMBDA_TIMEOUT_MULTIPLIER * function_timeout_s + max_batching_window_s)


def lambda_deadline_margin(remaining_at_start_s: float, deadline_margin_s: float = DEFAULT_DEADLINE_MARGIN_S) -> float:
    """Seconds before its end an invocation stops starting records: ``deadline_margin_s``, at most a quarter of
    ``remaining_at_start_s`` (the time the invocation started with), so a 3 s function keeps 0.75 s."""
    return min(deadline_margin_s, LAMBDA_DEADLINE_MARGIN_FRACTION * remaining_at_start_s)


def lambda_hang_margin(deadline_margin_s: float) -> float:
    """Seconds before its end an invocation gives up on a record that runs on its own thread (no
    ``max_processing_time``): half its deadline margin (``deadline_margin_s``, from :func:`lambda_deadline_margin`),
    so 0.5 s for a 4 s function. A record ending before then, even inside the margin, leaves the invocation time to
    answer; one still running then would be killed with the environment at the timeout, without a trace, so it is
    timed out and the environment ended while the other half of the margin is left to settle the batch."""
    return LAMBDA_HANG_MARGIN_FRACTION * deadline_margin_s


def shortest_lambda_timeout_s() -> int:
    """The shortest function timeout (whole seconds) whose deadline margin leaves room to release and answer."""
    return math.ceil(MIN_LAMBDA_DEADLINE_MARGIN_S / LAMBDA_DEADLINE_MARGIN_FRACTION)


def lambda_timeout_for_p99(processing_p99_s: float) -> int | None:
    """The shortest whole-second function timeout in which a record of ``processing_p99_s`` seconds, started
    first, still ends before the deadline margin; ``None`` beyond Lambda's 15 min."""
    start = max(shortest_lambda_timeout_s(), math.ceil(processing_p99_s))
    return next(
        (t for t in range(start, LAMBDA_MAX_TIMEOUT_S + 1) if t - lambda_deadline_margin(t) >= processing_p99_s),
        None,
    )


@dataclass(frozen=True)
class DerivedVisibilityTimeout:
    """A derived visibility timeout and the rule that produced it."""

    seconds: int
    rule: str  # human-readable, e.g. "2 x processing_p99 (240 s)"


def lambda_visibility_timeout(
    function_timeout_s: float, max_batching_window_s: float = 0, *, lease_extension: bool = False
) -> DerivedVisibilityTimeout:
    """:func:`visibility_timeout_for_lambda` with its rule in words: the one rule a queue and its Lambda
    consumer both apply."""
    seconds = visibility_timeout_for_lambda(function_timeout_s, max_batching_window_s, lease_extension=lease_extension)
    timeout, window = format_duration(function_timeout_s), format_duration(max_batching_window_s)
    if lease_extension:
        rule = f"lambda_timeout ({timeout}) + max_batching_window ({window}) + 10 s, with lease extension"
    else:
        rule = f"6 x lambda_timeout ({timeout}) + max_batching_window ({window})"
    return DerivedVisibilityTimeout(seconds, rule)


def derive_visibility_timeout(
    *,
    processing_p99_s: float | None = None,
    lambda_timeout_s: float | None = None,
    max_batching_window_s: float = 0,
    lease_extension: bool = False,
) -> DerivedVisibilityTimeout:
    """Derive the queue VT from what is declared; when both are declared the larger wins.

    ``lease_extension`` applies the Lambda rule with lease extension (see :func:`visibility_timeout_for_lambda`).

    Raises ``ValueError`` when neither a p99 nor a Lambda timeout is given, or a value is out
    of range for its rule. The 12 h SQS ceiling is *not* enforced here (see
    :func:`exceeds_sqs_limit`) so callers can report it alongside other problems.
    """
    candidates: list[DerivedVisibilityTimeout] = []
    if processing_p99_s is not None:
        vt = visibility_timeout_for_p99(processing_p99_s)
        candidates.append(
            DerivedVisibilityTimeout(vt, f"max(2 x processing_p99 ({format_duration(processing_p99_s)}), 10 s)")
        )
    if lambda_timeout_s is not None:
        candidates.append(
            lambda_visibility_timeout(lambda_timeout_s, max_batching_window_s, lease_extension=lease_extension)
        )
    if not candidates:
        raise ValueError("declare processing_p99 or lambda_timeout to derive a visibility timeout")
    return max(candidates, key=lambda c: c.seconds)


def lease_timing_problems(
    visibility_timeout_s: float, extension_threshold_s: float, heartbeat_interval_s: float, *, heartbeat: bool = True
) -> list[str]:
    """Why a consumer could not keep leases of ``visibility_timeout_s`` alive; empty when it can.

    One rule for both sides: ``LeaseSettings`` refuses these settings at run time, and the ``jobqueues``
    constructs refuse a declaration that would hand a consumer such settings at synth. A lease is extended
    when it is within ``extension_threshold_s`` of expiry, checked every ``heartbeat_interval_s``, so the
    threshold must leave room for at least one tick before the lease runs out.
    """
    problems = []
    if not 0 < visibility_timeout_s <= SQS_MAX_VISIBILITY_TIMEOUT_S:
        problems.append(f"visibility_timeout must be in (0, 43200] s, got {format_duration(visibility_timeout_s)}")
        return problems
    if not 0 <= extension_threshold_s < visibility_timeout_s:
        problems.append(
            f"extension_threshold ({format_duration(extension_threshold_s)}) must be below visibility_timeout "
            f"({format_duration(visibility_timeout_s)})"
        )
    elif heartbeat and heartbeat_interval_s <= 0:
        problems.append(f"heartbeat_interval must be positive, got {heartbeat_interval_s}")
    elif heartbeat and heartbeat_interval_s >= visibility_timeout_s - extension_threshold_s:
        problems.append(
            f"heartbeat_interval ({format_duration(heartbeat_interval_s)}) must be shorter than visibility_timeout "
            f"minus extension_threshold ({format_duration(visibility_timeout_s - extension_threshold_s)}), "
            "or leases lapse between ticks"
        )
    return problems


def default_request_timeout(
    extension_threshold_s: float, heartbeat_interval_s: float, *, heartbeat: bool = True
) -> float:
    """The default connect and read timeout of a lease request (extend, delete, release), in seconds.

    A tick takes a lease with between ``extension_threshold_s`` and ``extension_threshold_s - heartbeat_interval_s``
    left (it may fall due just after a tick). Half of the least of it: a request held until its timeout and then
    its retry, with a whole timeout of its own, both fit before the lease ends, so a retry answered in time was
    applied in time. At most :data:`MAX_LEASE_REQUEST_TIMEOUT_S`. Without the heartbeat (or with a tick no shorter
    than the threshold, when nothing fits) half the threshold.
    """
    slack = (
        extension_threshold_s - heartbeat_interval_s
        if heartbeat and heartbeat_interval_s < extension_threshold_s
        else extension_threshold_s
    )
    return min(MAX_LEASE_REQUEST_TIMEOUT_S, slack / 2)


def total_lease_problems(
    max_total_lease_s: float, max_processing_time_s: float | None, visibility_timeout_s: float
) -> list[str]:
    """Why a lease capped at ``max_total_lease_s`` from its receive cannot be held while its handler may run;
    empty when it can.

    A handler may run ``max_processing_time_s`` from its start, and its lease must outlast that by the time to
    settle it (one ``visibility_timeout_s``, the lease its last extension asked for). The cap counts from the
    receive, so it must cover at least both: a smaller one lets the message become visible, and run again, while
    its handler still runs. The worker also never starts a message whose cap can no longer cover them (its wait in
    the prefetch counts).
    """
    if max_processing_time_s is None or max_total_lease_s >= max_processing_time_s + visibility_timeout_s:
        return []
    needed = max_processing_time_s + visibility_timeout_s
    fix = (
        f"raise max_total_lease to at least {format_duration(needed)} (at most 12 h) or leave it at its default"
        if needed <= SQS_MAX_VISIBILITY_TIMEOUT_S
        else "lower max_processing_time (12 h less the visibility timeout and a minute at most)"
    )
    cap, limit, lease = (format_duration(s) for s in (max_total_lease_s, max_processing_time_s, visibility_timeout_s))
    return [
        f"max_total_lease ({cap}) must cover max_processing_time ({limit}) plus visibility_timeout ({lease}), "
        f"or the lease lapses while the handler may still run: {fix}"
    ]


def consumer_extension_threshold(visibility_timeout_s: float, *, heartbeat: bool) -> float:
    """The extension threshold, in seconds, a construct hands a consumer of a ``visibility_timeout_s`` lease.

    With the heartbeat, 5 s (``LeaseSettings``' default): a lease too short for it is refused at synth by
    :func:`lease_timing_problems`. Without it nothing is extended and the threshold only sizes the lease
    requests' timeout, so a lease of 5 s or less gets half its length, which ``LeaseSettings`` accepts.
    """
    if heartbeat or visibility_timeout_s > DEFAULT_EXTENSION_THRESHOLD_S:
        return DEFAULT_EXTENSION_THRESHOLD_S
    return visibility_timeout_s / 2


def exceeds_sqs_limit(visibility_timeout_s: float) -> bool:
    """True when a VT is beyond the 12 h (43,200 s) SQS maximum."""
    return visibility_timeout_s > SQS_MAX_VISIBILITY_TIMEOUT_S


def format_duration(seconds: float) -> str:
    """Short human form used in messages: ``45 s``, ``4 min``, ``7 h``, ``14 days``."""
    if seconds >= 86_400 and seconds % 86_400 == 0:
        days = int(seconds // 86_400)
        return f"{days} day" if days == 1 else f"{days} days"
    if seconds >= 3_600 and seconds % 3_600 == 0:
        return f"{int(seconds // 3_600)} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)} min"
    if float(seconds).is_integer():
        return f"{int(seconds)} s"
    return f"{seconds:g} s"
