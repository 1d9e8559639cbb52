"""Retry rules: backoff delays and how SQS error codes are classified. Pure functions."""

from __future__ import annotations

import random
from enum import StrEnum

from sqslease.rules import SQS_MAX_VISIBILITY_TIMEOUT_S

THROTTLING_CODES = frozenset(
    {"RequestThrottled", "ThrottlingException", "Throttling", "OverLimit", "KmsThrottled", "RequestLimitExceeded"}
)
TRANSIENT_CODES = frozenset({"InternalError", "InternalFailure", "ServiceUnavailable", "503", "500"})
INVALID_HANDLE_CODES = frozenset(
    {"ReceiptHandleIsInvalid", "InvalidReceiptHandle", "MessageNotInflight", "InvalidParameterValue.ReceiptHandle"}
)


class EntryOutcome(StrEnum):
    """What a failed batch entry (or request) means for its lease."""

    LOST = "lost"  # the receipt handle is no longer valid
    LIMIT = "limit"  # the 12 h total visibility limit: stop extending
    RETRY = "retry"  # throttling or a transient fault: retry within the lease's slack


def classify_error(code: str, message: str = "") -> EntryOutcome:
    """Classify an SQS error code/message from a batch entry or a whole request."""
    text = f"{code} {message}".lower()
    if code in INVALID_HANDLE_CODES or ("receipt handle" in text and ("invalid" in text or "expired" in text)):
        return EntryOutcome.LOST
    if "not in flight" in text or "message does not exist" in text:
        return EntryOutcome.LOST
    if "beyond the limit" in text or "43200" in text or "12 hours" in text:
        return EntryOutcome.LIMIT
    return EntryOutcome.RETRY


def error_code(error: BaseException) -> tuple[str, str]:
    """``(code, message)`` of a botocore ``ClientError``; the exception's type and text for anything else."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        err = response.get("Error", {})
        return str(err.get("Code", "")), str(err.get("Message", ""))
    return type(error).__name__, str(error)


def backoff_delay(receive_count: int, base: float = 2, cap: float = 900, rng: random.Random | None = None) -> int:
    """Visibility timeout (whole seconds) before a failed message is retried.

    Exponential in the receive count with "full jitter" (uniform between half and all of
    ``base x 2^(receive_count - 1)``), capped at ``cap`` and at the 12 h SQS limit; at least 1 s.
    """
    rng = rng or random
    exponent = min(max(receive_count - 1, 0), 32)
    ceiling = min(base * 2**exponent, cap, SQS_MAX_VISIBILITY_TIMEOUT_S)
    return max(1, int(rng.uniform(ceiling / 2, ceiling)))
