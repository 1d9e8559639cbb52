"""Idempotency records tied to leases: the schema, keys, results and outcomes. No I/O (see
:mod:`sqslease.idempotency_store` for the DynamoDB requests).

One item per key in a DynamoDB table whose partition key is ``pk`` (a string) and whose TTL attribute is ``ttl``:

- ``pk``: ``"<job type>#<key>"``. The job-type prefix is what an IAM policy's ``dynamodb:LeadingKeys`` condition
  (``ForAllValues:StringLike`` on :func:`leading_keys_pattern`) matches, so one table can serve several job types
  with each consumer's role confined to its own records. A job type must not contain ``#``.
- ``status``: ``IN_PROGRESS`` while a consumer holds the key, ``COMPLETED`` after its handler succeeded.
- ``owner``: the holder's token (random, one per :meth:`~sqslease.idempotency_store.IdempotencyStore.begin`):
  only the holder extends, completes or deletes the record, so a late, lapsed owner never touches a successor's.
- ``expires_at``: epoch seconds (three decimals) on the writer's clock. IN_PROGRESS: the holder's lease (the
  message's visibility timeout), moved by each heartbeat extension. COMPLETED: the queue's retention period plus
  a margin. A record is void once ``expires_at`` has passed; every condition checks it with the caller's clock,
  because DynamoDB's TTL deletion is lazy (it can lag by days) and is never relied on.
- ``ttl``: whole epoch seconds for DynamoDB's TTL deletion (cleanup only): ``expires_at``, rounded up, plus an
  hour for an IN_PROGRESS record.
- ``result``: optional, the handler's result as JSON text, at most ``max_result_bytes``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqslease.config import SETTINGS
from sqslease.idempotency_settings import MAX_RESULT_LIMIT_BYTES
from sqslease.idempotency_settings import IdempotencySettings as IdempotencySettings  # where it was first defined
from sqslease.message import Message

KEY_ATTRIBUTE = "pk"
TTL_ATTRIBUTE = "ttl"
KEY_SEPARATOR = "#"
#: DynamoDB's limit on a partition key value (UTF-8 bytes).
MAX_PARTITION_KEY_BYTES = 2048
#: Actions per TransactWriteItems request (DynamoDB's limit): the extension batch size.
TRANSACTION_MAX_ITEMS = 100
#: An IN_PROGRESS record's TTL lies this long after its expiry: its deletion is cleanup, never a state change.
IN_PROGRESS_TTL_MARGIN_S = 3_600


class RecordStatus(StrEnum):
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"


def create_table_request(table: str) -> dict[str, Any]:
    """``create_table`` arguments of a table for these records (on-demand capacity). Enable TTL on
    :data:`TTL_ATTRIBUTE` besides (``update_time_to_live``): cleanup only, correctness never depends on it."""
    return {
        "TableName": table,
        "AttributeDefinitions": [{"AttributeName": KEY_ATTRIBUTE, "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": KEY_ATTRIBUTE, "KeyType": "HASH"}],
        "BillingMode": "PAY_PER_REQUEST",
    }


# -- keys -------------------------------------------------------------------------------------------------------
#: ``key(body, message) -> str``: what makes two messages the same job.
KeyFunction = Callable[[str, Message], str]


class IdempotencyKeyError(ValueError):
    """A key function raised, or returned something that is no usable key. The message is not run."""


def message_id_key(body: str, message: Message) -> str:
    """The default key: the ``MessageId``, which covers redeliveries (not a producer's retries: new ids)."""
    return message.message_id


def compute_key(key: KeyFunction, body: str, message: Message) -> str:
    """``key(body, message)``, checked: a non-empty string. Raises :class:`IdempotencyKeyError` otherwise."""
    name = getattr(key, "__qualname__", None) or repr(key)
    try:
        value = key(body, message)
    except Exception as error:
        raise IdempotencyKeyError(f"idempotency key function {name} raised {error!r}") from error
    if not isinstance(value, str) or not value:
        raise IdempotencyKeyError(
            f"idempotency key function {name} returned {value!r}: return a non-empty str (e.g. str(order_id))"
        )
    return value


def record_key(job_type: str, key: str) -> str:
    """The partition key ``"<job type>#<key>"``. Raises ``ValueError`` for a job type with ``#`` or a key over
    DynamoDB's 2,048 bytes."""
    if KEY_SEPARATOR in job_type or not job_type:
        raise ValueError(f"job_type {job_type!r} cannot prefix idempotency keys: it must be non-empty, without '#'")
    pk = f"{job_type}{KEY_SEPARATOR}{key}"
    if len(pk.encode()) > MAX_PARTITION_KEY_BYTES:
        raise IdempotencyKeyError(
            f"idempotency key of {len(key.encode())} bytes is too long: job type, '#' and key must fit "
            f"DynamoDB's {MAX_PARTITION_KEY_BYTES} bytes; hash a long key (hashlib.sha256(...).hexdigest())"
        )
    return pk


def leading_keys_pattern(job_type: str) -> str:
    """The ``dynamodb:LeadingKeys`` value (``ForAllValues:StringLike``) that confines a role to one job type."""
    return record_key(job_type, "*")


# -- results ----------------------------------------------------------------------------------------------------
class ResultTooLargeError(ValueError):
    """A result over ``max_result_bytes``: nothing is stored and the record stays IN_PROGRESS."""


def encode_result(result: Any, limit: int) -> str | None:
    """``result`` as compact JSON text, ``None`` for ``None``. Raises :class:`ResultTooLargeError` past ``limit``
    bytes (UTF-8) and ``TypeError`` for what JSON cannot hold."""
    if result is None:
        return None
    try:
        text = json.dumps(result, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise TypeError(f"idempotency result is not JSON-serializable: {error}") from error
    size = len(text.encode())
    if size > limit:
        raise ResultTooLargeError(
            f"idempotency result of {size} bytes exceeds max_result_bytes ({limit} bytes): store a reference "
            f"(an S3 key) instead, or raise {SETTINGS['idempotency_max_result_bytes'].variable} (at most "
            f"{MAX_RESULT_LIMIT_BYTES})"
        )
    return text


def decode_result(text: str | None) -> Any:
    return None if text is None else json.loads(text)


# -- times ------------------------------------------------------------------------------------------------------
def lease_expiry_epoch(lease_deadline: float, monotonic_now: float, epoch_now: float) -> float:
    """A lease's deadline (on the monotonic clock, as ``Lease.deadline``) in epoch seconds, for ``expires_at``."""
    return epoch_now + (lease_deadline - monotonic_now)


def completed_expiry(now: float, settings: IdempotencySettings) -> float:
    """``expires_at`` of a record completed at ``now`` (epoch seconds): retention plus margin later."""
    return now + settings.retention_period + settings.ttl_margin


def ttl_of(expires_at: float, status: RecordStatus) -> int:
    """The ``ttl`` attribute (whole epoch seconds) of a record that is void from ``expires_at``."""
    margin = IN_PROGRESS_TTL_MARGIN_S if status is RecordStatus.IN_PROGRESS else 0
    return math.ceil(expires_at) + margin


def epoch_text(seconds: float) -> str:
    """A DynamoDB number of epoch seconds, to the millisecond."""
    return f"{seconds:.3f}"


# -- outcomes ---------------------------------------------------------------------------------------------------
class BeginStatus(StrEnum):
    """What :meth:`~sqslease.idempotency_store.IdempotencyStore.begin` found, and what the consumer does."""

    RUN = "run"  # the record is ours (new, or taken over from a lapsed holder): run the handler
    IN_PROGRESS_ELSEWHERE = "in_progress_elsewhere"  # a live holder: don't run, leave the message to its lease
    COMPLETED = "completed"  # done before: don't run, delete the message (Outcome "duplicate")
    UNAVAILABLE = "unavailable"  # no record could be written within the lease's slack: don't run, let it lapse


@dataclass(eq=False)
class Hold:
    """A consumer's hold on a record: the key, its owner token and the expiry last written (epoch seconds).

    ``lost`` turns True when the record was found not to be ours (taken over, or void) by an extension.
    """

    pk: str
    token: str
    expires_at: float
    lost: bool = False


@dataclass(frozen=True)
class Begin:
    """The answer to ``begin``: ``hold`` for RUN, ``result`` for COMPLETED (``None`` when none was stored),
    ``expires_at`` (epoch seconds) for IN_PROGRESS_ELSEWHERE: when the other holder's record lapses unless
    extended; ``error`` for UNAVAILABLE: the last fault."""

    status: BeginStatus
    hold: Hold | None = None
    result: Any = None
    expires_at: float | None = None
    error: str | None = None


class ExtendOutcome(StrEnum):
    EXTENDED = "extended"
    LOST = "lost"  # not ours any more (taken over, completed, deleted) or void: never extended again
    UNAVAILABLE = "unavailable"  # faults until too little slack was left; the record lapses at its expiry


class SettleOutcome(StrEnum):
    """What ``complete`` and ``fail`` did."""

    DONE = "done"
    LOST = "lost"  # the record is another holder's (ours lapsed and was taken over): left untouched
    UNAVAILABLE = "unavailable"  # faults until the deadline; the record lapses at its expiry
