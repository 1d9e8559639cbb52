"""The visibility-timeout rules, table-driven from the reference numbers."""

import pytest

from sqslease.rules import (
    SQS_MAX_VISIBILITY_TIMEOUT_S,
    default_request_timeout,
    derive_visibility_timeout,
    exceeds_sqs_limit,
    format_duration,
    visibility_timeout_for_lambda,
    visibility_timeout_for_p99,
)


@pytest.mark.parametrize(
    ("p99_s", "expected_vt_s"),
    [
        (240, 480),  # reference: video transcoding p99 4 min -> VT 8 min
        (3, 10),  # reference: email p99 3 s -> VT 10 s (comfortable buffer)
        (5, 10),  # 2 x 5 s = 10 s exactly
        (5.2, 11),  # whole seconds, rounded up
        (0.1, 10),  # the 10 s floor
        (21_600, 43_200),  # 6 h p99 -> exactly the 12 h SQS maximum
    ],
)
def test_vt_from_p99(p99_s: float, expected_vt_s: int) -> None:
    assert visibility_timeout_for_p99(p99_s) == expected_vt_s


@pytest.mark.parametrize(
    ("timeout_s", "window_s", "expected_vt_s"),
    [
        (30, 5, 185),  # reference example: 6 x 30 + 5
        (30, 0, 180),
        (900, 300, 5_700),  # Lambda maxima
        (2.5, 0, 15),
    ],
)
def test_vt_for_lambda(timeout_s: float, window_s: float, expected_vt_s: int) -> None:
    assert visibility_timeout_for_lambda(timeout_s, window_s) == expected_vt_s


def test_both_declared_takes_the_larger() -> None:
    lam = derive_visibility_timeout(processing_p99_s=20, lambda_timeout_s=30, max_batching_window_s=5)
    assert lam.seconds == 185 and "lambda_timeout" in lam.rule
    p99 = derive_visibility_timeout(processing_p99_s=200, lambda_timeout_s=30)
    assert p99.seconds == 400 and "processing_p99" in p99.rule


@pytest.mark.parametrize("bad", [0, -1])
def test_non_positive_p99_is_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="processing_p99 must be positive"):
        visibility_timeout_for_p99(bad)


def test_nothing_declared_is_rejected() -> None:
    with pytest.raises(ValueError, match="declare processing_p99 or lambda_timeout"):
        derive_visibility_timeout()


def test_twelve_hour_limit() -> None:
    assert not exceeds_sqs_limit(SQS_MAX_VISIBILITY_TIMEOUT_S)
    assert exceeds_sqs_limit(SQS_MAX_VISIBILITY_TIMEOUT_S + 1)
    assert exceeds_sqs_limit(visibility_timeout_for_p99(7 * 3600))


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(45, "45 s"), (240, "4 min"), (25_200, "7 h"), (86_400, "1 day"), (1_209_600, "14 days"), (2.5, "2.5 s")],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    ("threshold_s", "interval_s", "heartbeat", "timeout_s"),
    [
        (5, 1, True, 2),  # the defaults: a tick leaves a lease 4 s at least, two requests of 2 s
        (1, 0.2, True, 0.4),  # 0.8 s at least: not half the threshold (0.5 s), or a retry outlives the lease
        (30, 1, True, 2),  # at most 2 s
        (1, 0.2, False, 0.5),  # no ticks: half the threshold
        (1, 1, True, 0.5),  # a tick as long as the threshold leaves no slack to share: half the threshold
    ],
)
def test_the_default_request_timeout_fits_a_held_request_and_its_retry_in_a_ticks_least_slack(
    threshold_s: float, interval_s: float, heartbeat: bool, timeout_s: float
) -> None:
    assert default_request_timeout(threshold_s, interval_s, heartbeat=heartbeat) == pytest.approx(timeout_s)
