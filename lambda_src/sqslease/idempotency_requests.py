"""DynamoDB requests with the discipline of SQS lease requests, for :mod:`sqslease.idempotency_store`.

Each request has ``LeaseSettings.lease_request_timeout`` for connect and read and no botocore retries
(:func:`store_client`); throttling, 5xx answers, timeouts and dropped connections are retried here, paced by
:func:`sqslease.retry.extension_retry_delay` (throttling: at least a heartbeat interval, doubling), only while the
deadline (a lease's expiry) leaves more than a request timeout. Errors no retry can fix raise
:class:`FatalStoreError`.
"""

from __future__ import annotations

import collections
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar

from sqslease.idempotency import KEY_ATTRIBUTE
from sqslease.retry import FatalSqsError, error_code, extension_retry_delay
from sqslease.settings import LeaseSettings

logger = logging.getLogger("sqslease")

T = TypeVar("T")

THROTTLING = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "ThrottlingError",  # a transaction's cancellation reasons
        "ProvisionedThroughputExceeded",
    }
)
#: Errors no retry can fix: the role, the table (missing, wrong key schema) or its KMS key.
FATAL = frozenset(
    {
        "AccessDeniedException",
        "ResourceNotFoundException",
        "ValidationException",
        "UnrecognizedClientException",
        "MissingAuthenticationTokenException",
        "KMSAccessDeniedException",
        "NoCredentialsError",
    }
)
CONDITION_FAILED = "ConditionalCheckFailedException"
TRANSACTION_CANCELED = "TransactionCanceledException"

METHODS = {
    "PutItem": "put_item",
    "GetItem": "get_item",
    "UpdateItem": "update_item",
    "DeleteItem": "delete_item",
    "TransactWriteItems": "transact_write_items",
}


class FatalStoreError(FatalSqsError):
    """A DynamoDB error that retrying cannot fix. A :class:`FatalSqsError`, so a consumer stops on it as on SQS's."""


class Retry(Exception):
    """A fault worth another attempt; ``pause``: back off first (not for a race that a retry at once resolves)."""

    def __init__(self, code: str, message: str, pause: bool = True) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.pause = pause
        self.throttled = code in THROTTLING or "throttl" in code.lower()


class Refused(Exception):
    """A condition failed (``ConditionalCheckFailedException``, ``TransactionCanceledException``): ``error``."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class Unavailable:
    """No answer before the deadline: ``reason`` is the last fault."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


#: A deadline in epoch seconds, or a function giving it when asked: a lease the heartbeat may extend meanwhile.
Deadline: TypeAlias = float | Callable[[], float]


def latest(deadline: Deadline) -> Callable[[], float]:
    """``deadline`` as a function: asked at each attempt, so that an extended lease gives its retries more time."""
    if callable(deadline):
        return deadline
    return lambda: deadline


def store_client(settings: LeaseSettings, concurrency: int = 1, session: Any = None, **client_kwargs: Any) -> Any:
    """A DynamoDB client like :func:`sqslease.clients.lease_client`: ``lease_request_timeout``, no botocore retries,
    a connection for each request in flight (heartbeat's and handlers')."""
    import boto3
    from botocore.config import Config

    timeout = settings.lease_request_timeout
    config = Config(
        connect_timeout=timeout,
        read_timeout=timeout,
        retries={"mode": "standard", "total_max_attempts": 1},
        max_pool_connections=settings.max_requests_in_flight + concurrency,
    )
    return (session or boto3.session.Session()).client("dynamodb", config=config, **client_kwargs)


class Requests:
    """Sends one consumer's DynamoDB requests and counts them (``counts``, by operation). Thread-safe.

    :param client: a boto3 DynamoDB client (:func:`store_client`).
    :param settings: request timeout and retry pacing.
    :param clock: epoch seconds. :param sleep: between retries. :param rng: the retry jitter.
    """

    def __init__(
        self,
        client: Any,
        settings: LeaseSettings,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], object] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.clock = clock
        self.sleep = sleep
        self.rng = rng or random.Random()
        self.request_timeout = settings.lease_request_timeout
        self.counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def retrying(
        self, operation: str, pk: str, deadline: Deadline, attempt: Callable[[float], T], first_always: bool
    ) -> T | Unavailable:
        """``attempt(now)`` until it returns, retrying faults while ``deadline`` (asked before each attempt) leaves
        more than a request timeout."""
        tries = 0
        reason = "less than a request timeout of the lease was left"
        end = latest(deadline)
        while True:
            now = self.clock()
            slack = end() - now
            if slack <= self.request_timeout and not (first_always and tries == 0):
                logger.error("%s of idempotency record %s gave up (%s)", operation, pk, reason)
                return Unavailable(reason)
            tries += 1
            try:
                return attempt(now)
            except Retry as fault:
                reason = str(fault)
                if fault.pause:
                    logger.info("%s of idempotency record %s failed (%s); retrying", operation, pk, fault)
                    interval = self.settings.heartbeat_interval
                    delay = extension_retry_delay(
                        tries, fault.throttled, interval, max(slack, 0.0), self.request_timeout, self.rng
                    )
                    self.sleep(delay)

    def call(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request. Raises :class:`Refused` (a condition failed), :class:`Retry` (throttling, 5xx, a
        timeout, a dropped connection) or :class:`FatalStoreError`."""
        from botocore.exceptions import BotoCoreError, ClientError

        with self._lock:
            self.counts[operation] += 1
        method = getattr(self.client, METHODS[operation])
        try:
            answer: dict[str, Any] = method(**request)
            return answer
        except (ClientError, BotoCoreError) as error:
            code, message = error_code(error)
            if code in (CONDITION_FAILED, TRANSACTION_CANCELED):
                raise Refused(error) from None
            if code in FATAL:
                raise FatalStoreError(operation, code, message) from error
            raise Retry(code, message) from error

    def item_in_the_way(self, table: str, pk: str, error: BaseException) -> dict[str, Any] | None:
        """The item a condition failed on: from the error (``ALL_OLD``), else read (strongly consistent)."""
        response = getattr(error, "response", {})
        if "Item" in response:
            return dict(response["Item"])
        answer = self.call("GetItem", {"TableName": table, "Key": {KEY_ATTRIBUTE: {"S": pk}}, "ConsistentRead": True})
        item: dict[str, Any] | None = answer.get("Item")
        return item
