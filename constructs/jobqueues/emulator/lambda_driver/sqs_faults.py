"""What the local event source does with a failed SQS request, as Lambda's pollers do: which failures it outlives,
how long it waits before receiving again, and the one log line that describes a failure."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

#: Seconds the poller waits after a failed receive; doubled for each failure in a row, up to
#: :data:`POLL_RETRY_MAX_S`.
POLL_RETRY_BASE_S = 0.1
POLL_RETRY_MAX_S = 5.0
#: What an SQS request raises when it fails (an error answer, a timeout, a lost connection).
SQS_FAILURES = (ClientError, BotoCoreError)


def poll_retry_delay_s(failures: int) -> float:
    """Seconds before the poller receives again after ``failures`` failed receives in a row (1, 2, ...):
    :data:`POLL_RETRY_BASE_S` doubled per failure, at most :data:`POLL_RETRY_MAX_S`."""
    return float(min(POLL_RETRY_MAX_S, POLL_RETRY_BASE_S * 2.0 ** (failures - 1)))


def describe(error: BaseException) -> str:
    """A failed request on one line: the AWS error code and message, or the exception's type and text."""
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        return f"{details.get('Code', 'error')}: {details.get('Message', '')}".strip().rstrip(":")
    return " ".join(f"{type(error).__name__}: {error}".split())
