"""Recommendations from one job type's summary: measured p99, visibility timeout, retries, what-if.

Pure Python: the VT rule is ``sqslease.rules`` (the same one the stacks apply), never a copy.
"""

from __future__ import annotations

import math
from typing import Any

from jobstats.histogram import Summary
from sqslease.rules import SQS_MAX_RECEIVE_COUNT, exceeds_sqs_limit, visibility_timeout_for_p99

#: Below this many messages a p99 rests on fewer than 10 observations above it: no recommendation.
DEFAULT_MIN_SAMPLES = 1_000
MIN_RECOMMENDED_RECEIVES = 3
#: The smallest p99 recommended (s): the shared rule takes only positive p99s, and 1 ms gives its 10 s floor.
MIN_RECOMMENDED_P99_S = 0.001


def recommend(summary: Summary, min_samples: int = DEFAULT_MIN_SAMPLES) -> dict[str, Any]:
    """Recommended ``processing_p99_s``, ``visibility_timeout_s`` and ``max_receive_count`` with reasons.

    When there are too few samples the recommendation fields are ``None`` and ``refused`` says why. A p99 of
    0 ms (a job that takes no measurable time) is recommended as 1 ms, the floor VT follows, and ``note``
    says so.
    """
    if summary.count < min_samples:
        return {
            "recommended_processing_p99_s": None,
            "recommended_visibility_timeout_s": None,
            "recommended_max_receive_count": None,
            "refused": f"only {summary.count} messages ({_needed(min_samples)}): collect more logs or widen --since",
        }
    measured_p99_s = math.ceil(summary.percentile(0.99)) / 1000  # whole milliseconds, rounded up
    p99_s = max(measured_p99_s, MIN_RECOMMENDED_P99_S)
    vt_s = visibility_timeout_for_p99(p99_s)
    receives_p99 = summary.success_receive_count_percentile(0.99) or 1
    result: dict[str, Any] = {
        "recommended_processing_p99_s": p99_s,
        "recommended_visibility_timeout_s": vt_s,
        # Enough deliveries that 99 % of the messages that do succeed get there before the DLQ, plus one.
        "recommended_max_receive_count": int(
            min(max(receives_p99 + 1, MIN_RECOMMENDED_RECEIVES), SQS_MAX_RECEIVE_COUNT)
        ),
        "refused": None,
    }
    if measured_p99_s < MIN_RECOMMENDED_P99_S:
        result["note"] = (
            "the measured p99 is 0 ms: recommended as 1 ms, the smallest p99 the visibility-timeout rule takes, "
            f"which gives its {vt_s} s floor"
        )
    if exceeds_sqs_limit(vt_s):
        result["warning"] = (
            "the measured p99 needs a visibility timeout over 12 h: use an ECS consumer with lease extension"
        )
    return result


def what_if(summary: Summary, candidate_vts_s: tuple[float, ...]) -> list[dict]:
    """For each candidate VT: the share of messages that would overrun it without a heartbeat (each one a
    duplicate delivery) and the expected delay before a crashed worker's message is retried.

    The crash delay assumes a crash at a uniformly random point of processing: VT minus half the mean
    processing time (the message reappears VT after its receipt).
    """
    count = summary.count or 1
    mean_s = summary.mean_ms / 1000
    return [
        {
            "visibility_timeout_s": vt,
            "overrun_share": summary.overrun_count(vt) / count,
            "expected_crash_retry_delay_s": round(max(vt - mean_s / 2, 0.0), 3),
        }
        for vt in sorted(candidate_vts_s)
    ]


def _needed(min_samples: int) -> str:
    """Why ``min_samples`` messages: the observations above the p99 it guarantees, when there are any."""
    above_p99 = min_samples // 100
    if above_p99 >= 1:
        return f"at least {min_samples} are needed for a p99 resting on {above_p99} or more observations"
    return f"at least {min_samples} are needed (--min-samples)"
