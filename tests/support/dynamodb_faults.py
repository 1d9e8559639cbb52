"""Faults on a real DynamoDB client's HTTP requests (to moto_server), injected at botocore's ``before-send``.

:func:`inject` registers ``rule(operation) -> kind | None`` on a client. Kinds: ``throttle``
(ProvisionedThroughputExceededException, 400) and ``error500`` (InternalServerError): answered without reaching
the server, parsed by botocore from the bytes DynamoDB sends; ``timeout``: a connect timeout (never sent);
``hold``: sent to the server (it applies the request), then a read timeout: the answer is lost.
The client must not retry by itself (``sqslease.idempotency_store.store_client`` does not).
"""

from __future__ import annotations

import collections
import json
import threading
from collections.abc import Callable
from typing import Any

from jobqueues.emulator.chaos.dynamodb_errors import DYNAMODB_ERRORS

Rule = Callable[[str], "str | None"]


class _Raw:
    def __init__(self, payload: bytes) -> None:
        self.payload = payload

    def stream(self, **kwargs: Any) -> Any:
        yield self.payload


class Injected:
    """What :func:`inject` did: ``counts[(operation, kind or "ok")]``."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._lock = threading.Lock()

    def sent(self, operation: str) -> int:
        """Requests of ``operation`` the client tried to send (faulted ones included)."""
        with self._lock:
            return sum(n for (op, _), n in self.counts.items() if op == operation)


def inject(client: Any, rule: Rule) -> Injected:
    from botocore.awsrequest import AWSResponse
    from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError
    from botocore.httpsession import URLLib3Session

    injected = Injected(rule)
    session = URLLib3Session()

    def before_send(request: Any, **kwargs: Any) -> Any:
        operation = request.headers["X-Amz-Target"].decode().split(".", 1)[1]
        kind = rule(operation)
        with injected._lock:
            injected.counts[(operation, kind or "ok")] += 1
        if kind is None:
            return None
        if kind in DYNAMODB_ERRORS:
            status, error_type, message = DYNAMODB_ERRORS[kind]
            payload = json.dumps({"__type": error_type, "message": message}).encode()
            return AWSResponse(request.url, status, {"Content-Type": "application/x-amz-json-1.0"}, _Raw(payload))
        if kind == "timeout":
            raise ConnectTimeoutError(endpoint_url=request.url)
        if kind == "hold":
            session.send(request)  # applied by the server; the client never sees the answer
            raise ReadTimeoutError(endpoint_url=request.url)
        raise ValueError(f"unknown fault kind {kind!r}")

    client.meta.events.register("before-send.dynamodb", before_send)
    return injected
