"""What the fault proxy saw the server do: every message it handed to a consumer, and every one it deleted."""

from __future__ import annotations

import collections
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jobqueues.emulator.deployments import queue_name

__all__ = ["MessageLedger", "Observations", "queue_name"]


@dataclass(frozen=True)
class Observations:
    """A snapshot of a :class:`MessageLedger`.

    ``received``: message id -> name of the queue that handed it out (first time); ``receives``: message id ->
    how many times the server handed it out; ``deleted``: ids the server confirmed deleted (by any consumer
    that talks through the proxy).
    """

    received: Mapping[str, str] = field(default_factory=dict)
    receives: Mapping[str, int] = field(default_factory=dict)
    deleted: frozenset[str] = frozenset()


class MessageLedger:
    """A :data:`~jobqueues.emulator.chaos.proxy.Observer`: reads the SQS exchanges the proxy forwarded.

    Records the server's answers, not the client's: a held ReceiveMessage whose client gave up still handed its
    messages out (they come back when their visibility timeout ends). Thread-safe (the proxy serves each
    connection on its own thread). Requests or answers it cannot read are skipped.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._received: dict[str, str] = {}
        self._receives: collections.Counter[str] = collections.Counter()
        self._handles: dict[str, str] = {}  # receipt handle -> message id
        self._deleted: set[str] = set()

    def __call__(self, operation: str, request_body: bytes, status: int, response_body: bytes) -> None:
        if status != 200 or operation not in ("ReceiveMessage", "DeleteMessage", "DeleteMessageBatch"):
            return
        request, response = _json(request_body), _json(response_body)
        with self._lock:
            if operation == "ReceiveMessage":
                queue = queue_name(str(request.get("QueueUrl", "")))
                for message in response.get("Messages", []):
                    message_id = message.get("MessageId")
                    if not message_id:
                        continue
                    self._received.setdefault(message_id, queue)
                    self._receives[message_id] += 1
                    if message.get("ReceiptHandle"):
                        self._handles[message["ReceiptHandle"]] = message_id
            elif operation == "DeleteMessage":
                self._delete(request.get("ReceiptHandle"))
            else:
                handles = {entry.get("Id"): entry.get("ReceiptHandle") for entry in request.get("Entries", [])}
                for entry in response.get("Successful", []):
                    self._delete(handles.get(entry.get("Id")))

    def _delete(self, handle: Any) -> None:
        message_id = self._handles.get(handle) if isinstance(handle, str) else None
        if message_id is not None:
            self._deleted.add(message_id)

    def snapshot(self) -> Observations:
        with self._lock:
            return Observations(dict(self._received), dict(self._receives), frozenset(self._deleted))


def _json(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
