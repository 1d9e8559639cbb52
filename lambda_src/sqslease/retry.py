"""Retry rules: backoff delays and how SQS errors are classified. Pure functions."""

from __future__ import annotations

import random
from enum import StrEnum

from sqslease.rules import SQS_MAX_VISIBILITY_TIMEOUT_S

THROTTLING_CODES = frozenset(
    {
        "RequestThrottled",
        "ThrottlingException",
        "Throttling",
        "OverLimit",
        "KmsThrottled",
        "KMS.ThrottlingException",
        "RequestLimitExceeded",
        "SlowDown",
    }
)
TRANSIENT_CODES = frozenset({"InternalError", "InternalFailure", "ServiceUnavailable", "503", "500"})
INVALID_HANDLE_CODES = frozenset(
    {"ReceiptHandleIsInvalid", "InvalidReceiptHandle", "MessageNotInflight", "InvalidParameterValue.ReceiptHandle"}
)
#: Errors no retry can fix: the role, the queue or its KMS key is wrong. SQS's JSON protocol sends the
#: query-compatible code (``Code``, e.g. ``AWS.SimpleQueueService.NonExistentQueue``) and the modelled one
#: (``QueryErrorCode``, e.g. ``QueueDoesNotExist``); both spellings are here.
FATAL_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "QueueDoesNotExist",
        "AWS.SimpleQueueService.NonExistentQueue",
        "NonExistentQueue",
        "KmsAccessDenied",
        "KmsDisabled",
        "KmsInvalidKeyUsage",
        "KmsInvalidState",
        "KmsNotFound",
        "KmsOptInRequired",
        "KMS.AccessDeniedException",
        "KMS.DisabledException",
        "KMS.InvalidKeyUsageException",
        "KMS.KMSInvalidStateException",
        "KMS.NotFoundException",
        "KMS.OptInRequired",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "InvalidSecurity",
        "NoCredentialsError",
        "UnsupportedOperation",
    }
)


class EntryOutcome(StrEnum):
    """What a failed batch entry (or request) means for its lease."""

    LOST = "lost"  # the receipt handle is no longer valid
    LIMIT = "limit"  # the 12 h total visibility limit: stop extending
    RETRY = "retry"  # throttling or a transient fault: retry within the lease's slack
    FATAL = "fatal"  # permissions, a missing queue, an unusable KMS key: stop the consumer


class FatalSqsError(RuntimeError):
    """An SQS error that retrying cannot fix (see :data:`FATAL_CODES`). The consumer must stop."""

    def __init__(self, operation: str, code: str, message: str) -> None:
        super().__init__(f"{operation} failed with {code}: {message}")
        self.operation = operation
        self.code = code


def classify_error(code: str, message: str = "") -> EntryOutcome:
    """Classify an SQS error code/message from a batch entry or a whole request."""
    if code in FATAL_CODES:
        return EntryOutcome.FATAL
    text = f"{code} {message}".lower()
    if code in INVALID_HANDLE_CODES or ("receipt handle" in text and ("invalid" in text or "expired" in text)):
        return EntryOutcome.LOST
    if "not in flight" in text or "message does not exist" in text:
        return EntryOutcome.LOST
    if "beyond the limit" in text or "43200" in text or "12 hours" in text:
        return EntryOutcome.LIMIT
    return EntryOutcome.RETRY


def error_code(error: BaseException) -> tuple[str, str]:
    """``(code, message)`` of a botocore ``ClientError``; the exception's type and text for anything else.

    For SQS's JSON protocol the code is the modelled one (``QueueDoesNotExist``, ``RequestThrottled``) when
    the response carried it (``QueryErrorCode``), else the wire code.
    """
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        err = response.get("Error", {})
        code = str(err.get("QueryErrorCode") or err.get("Code", ""))
        return code, str(err.get("Message", ""))
    return type(error).__name__, str(error)


def classify_exception(error: BaseException) -> tuple[EntryOutcome, str, str]:
    """``(outcome, code, message)`` for an exception raised by a whole SQS request.

    Connection errors and read timeouts are RETRY: the request may or may not have been applied.
    """
    code, message = error_code(error)
    response = getattr(error, "response", None)
    wire_code = str(response.get("Error", {}).get("Code", "")) if isinstance(response, dict) else ""
    outcome = classify_error(code, message)
    if outcome is not EntryOutcome.FATAL and wire_code in FATAL_CODES:
        outcome = EntryOutcome.FATAL
    return outcome, code, message


#: Exceptions raised before a request went out (botocore's names): it cannot have been applied.
NOT_SENT_ERRORS = frozenset({"ConnectTimeoutError", "EndpointConnectionError"})
#: Exceptions raised once a request's whole timeout ran out (botocore's names): it already waited, so its retry
#: goes out at once (the default request timeout leaves room for exactly that: ``rules.default_request_timeout``).
TIMEOUT_ERRORS = frozenset({"ConnectTimeoutError", "ReadTimeoutError"})


def may_have_landed(error: BaseException) -> bool:
    """Whether SQS may have applied a request that raised ``error``.

    A 4xx answer (throttling, a bad request) means SQS refused it, and a connection never made means it was
    never sent. A read timeout, a dropped connection or a 5xx answer can come after SQS applied it.
    """
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return not (isinstance(status, int) and 400 <= status < 500)
    return type(error).__name__ not in NOT_SENT_ERRORS


def is_throttling(code: str) -> bool:
    return code in THROTTLING_CODES or "throttl" in code.lower()


def backoff_ceiling(receive_count: int, base: float = 2, cap: float = 900) -> float:
    """The longest back-off after a failed run ``receive_count``, in seconds: ``base x 2^(receive_count - 1)``,
    capped at ``cap`` and at the 12 h SQS limit."""
    exponent: int = min(max(receive_count - 1, 0), 32)
    ceiling: float = base * 2**exponent
    return min(ceiling, cap, SQS_MAX_VISIBILITY_TIMEOUT_S)


def backoff_delay(receive_count: int, base: float = 2, cap: float = 900, rng: random.Random | None = None) -> int:
    """Visibility timeout (whole seconds) before a failed message is retried.

    Exponential in the receive count with "equal jitter" (uniform between half and all of
    :func:`backoff_ceiling`); at least 1 s.
    """
    uniform = (rng or random).uniform
    ceiling = backoff_ceiling(receive_count, base, cap)
    return max(1, int(uniform(ceiling / 2, ceiling)))


def retries_backoff_s(max_receive_count: int, base: float = 2, cap: float = 900) -> int:
    """The longest the retries of a message that fails every time wait in all, in seconds: the back-offs after its
    runs 1 to ``max_receive_count - 1``, each the most :func:`backoff_delay` gives (a FIFO consumer retrying in
    process waits them out, :mod:`sqslease.fifo_retry`)."""
    return sum(max(1, int(backoff_ceiling(run, base, cap))) for run in range(1, max_receive_count))


def extension_retry_delay(
    attempt: int,
    throttled: bool,
    interval: float,
    slack: float,
    request_timeout: float,
    rng: random.Random | None = None,
) -> float:
    """Seconds before retrying a failed extension, in seconds. ``attempt`` counts from 1.

    Throttled: at least one heartbeat ``interval``, doubling per attempt (``interval x 2^(attempt-1)`` times
    uniform(1, 1.25): jitter only ever slows down). Other faults: 0.05 s doubling, up to ``interval``.
    Either way never beyond half of what is left once a request of ``request_timeout`` fits before the
    lease runs out (``slack`` seconds away), so retries get denser, not sparser, as a lease nears expiry; but a
    throttled retry never comes sooner than ``interval`` unless less than two intervals of slack remain.
    """
    uniform = (rng or random).uniform
    exponent = min(attempt - 1, 16)
    base = interval * 2**exponent if throttled else min(interval, 0.05 * 2**exponent)
    delay: float = base * uniform(1.0, 1.25)
    floor = min(interval, slack / 2) if throttled else 0.01
    return min(max(floor, 0.01, min(delay, (slack - request_timeout) / 2)), slack / 2)
