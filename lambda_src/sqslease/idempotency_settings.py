"""Where a consumer's idempotency records live and how long they last (:class:`IdempotencySettings`), validated
when built; the consumer is told them with the rest of its configuration (:mod:`sqslease.config`)."""

from __future__ import annotations

from dataclasses import dataclass

from sqslease.rules import SQS_MAX_RETENTION_S

#: SQS's default message retention (4 days), in seconds.
DEFAULT_RETENTION_PERIOD_S = 345_600
DEFAULT_TTL_MARGIN_S = 86_400
DEFAULT_MAX_RESULT_BYTES = 4_096
#: A result limit may not exceed this: it keeps the item well under DynamoDB's 400 KB.
MAX_RESULT_LIMIT_BYTES = 262_144
#: How a ``ValueError`` of :class:`IdempotencySettings` begins; the problems follow, separated by ``"; "``.
INVALID_IDEMPOTENCY_SETTINGS = "invalid sqslease idempotency settings: "


@dataclass(frozen=True)
class IdempotencySettings:
    """Where the records live and how long they last. Each field is a setting of the consumer's configuration,
    ``idempotency_<field>`` (:mod:`sqslease.config`).

    Request timeouts and retry pacing are the lease settings' (``LeaseSettings.lease_request_timeout``,
    ``heartbeat_interval``): a DynamoDB fault is handled like an SQS one.

    :param table: the DynamoDB table's name. Default ``None``: idempotency off.
    :param retention_period: the queue's message retention, in seconds: a COMPLETED record outlives any redelivery
        of its message. Default 345,600 (4 days, SQS's default).
    :param ttl_margin: seconds a COMPLETED record is kept beyond ``retention_period``. Default 86,400 (1 day).
    :param max_result_bytes: largest result stored with a COMPLETED record, in bytes of UTF-8 JSON (at most
        262,144). Default 4,096.
    """

    table: str | None = None
    retention_period: float = DEFAULT_RETENTION_PERIOD_S
    ttl_margin: float = DEFAULT_TTL_MARGIN_S
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES

    def __post_init__(self) -> None:
        problems = []
        if not 60 <= self.retention_period <= SQS_MAX_RETENTION_S:
            problems.append(f"retention_period must be 60-1209600 s (SQS's range), got {self.retention_period}")
        if self.ttl_margin < 0:
            problems.append(f"ttl_margin must not be negative, got {self.ttl_margin}")
        if not 0 <= self.max_result_bytes <= MAX_RESULT_LIMIT_BYTES:
            problems.append(f"max_result_bytes must be 0-{MAX_RESULT_LIMIT_BYTES}, got {self.max_result_bytes}")
        if problems:
            raise ValueError(INVALID_IDEMPOTENCY_SETTINGS + "; ".join(problems))
