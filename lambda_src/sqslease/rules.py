"""Visibility-timeout rules: the one implementation, shared by stacks, runtime and jobstats.

Pure functions on seconds. This module imports nothing from AWS so that the CDK
constructs (`jobqueues`), the consumer runtime (`sqslease`) and the Spark job
(`jobstats`) all derive the same numbers from the same declaration.

Sources: SQS allows a visibility timeout of 0 s to 12 h; the usual guidance is
"about 2 x the p99 processing time, at least 10 s"; AWS Lambda recommends a
queue visibility timeout of at least 6 x the function timeout plus the maximum
batching window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SQS_MAX_VISIBILITY_TIMEOUT_S = 43_200  # 12 h: also the total time a message can stay received
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

DEFAULT_EXTENSION_THRESHOLD_S = 5
DEFAULT_HEARTBEAT_INTERVAL_S = 1


def visibility_timeout_for_p99(processing_p99_s: float) -> int:
    """VT for a job whose p99 processing time is ``processing_p99_s`` seconds.

    ``max(2 x p99, 10 s)``, rounded up to whole seconds (SQS takes integers).
    """
    if processing_p99_s <= 0:
        raise ValueError(f"processing_p99 must be positive, got {processing_p99_s} s")
    return max(math.ceil(P99_MULTIPLIER * processing_p99_s), MIN_VISIBILITY_TIMEOUT_FROM_P99_S)


def visibility_timeout_for_lambda(function_timeout_s: float, max_batching_window_s: float = 0) -> int:
    """VT for a queue consumed by a Lambda function: ``6 x timeout + batching window``, whole seconds."""
    if function_timeout_s <= 0:
        raise ValueError(f"lambda_timeout must be positive, got {function_timeout_s} s")
    if max_batching_window_s < 0:
        raise ValueError(f"max_batching_window must not be negative, got {max_batching_window_s} s")
    return math.ceil(LAMBDA_TIMEOUT_MULTIPLIER * function_timeout_s + max_batching_window_s)


@dataclass(frozen=True)
class DerivedVisibilityTimeout:
    """A derived visibility timeout and the rule that produced it."""

    seconds: int
    rule: str  # human-readable, e.g. "2 x processing_p99 (240 s)"


def derive_visibility_timeout(
    *,
    processing_p99_s: float | None = None,
    lambda_timeout_s: float | None = None,
    max_batching_window_s: float = 0,
) -> DerivedVisibilityTimeout:
    """Derive the queue VT from what is declared; when both are declared the larger wins.

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
        vt = visibility_timeout_for_lambda(lambda_timeout_s, max_batching_window_s)
        candidates.append(
            DerivedVisibilityTimeout(
                vt,
                f"6 x lambda_timeout ({format_duration(lambda_timeout_s)}) + max_batching_window "
                f"({format_duration(max_batching_window_s)})",
            )
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


def default_extension_threshold(visibility_timeout_s: float) -> float:
    """The extension threshold a construct hands a consumer of a ``visibility_timeout_s`` lease.

    5 s (``LeaseSettings``' default) for leases of 30 s and more; a third of shorter leases, so that
    short leases still leave two thirds of their length between extensions.
    """
    return min(DEFAULT_EXTENSION_THRESHOLD_S, visibility_timeout_s / 3)


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
