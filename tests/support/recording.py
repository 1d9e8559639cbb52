"""What a real boto3 SQS client sends: every call with its API parameters."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Call:
    at: float  # monotonic seconds
    operation: str
    params: dict[str, Any]


@dataclass
class CallRecorder:
    """Records every SQS call a boto3 client makes, with its API parameters (botocore event hook)."""

    calls: list[Call] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, client: Any) -> Any:
        client.meta.events.register("before-parameter-build.sqs.*", self._record)
        return client

    def _record(self, params: dict, model: Any, **_: Any) -> None:
        with self._lock:
            self.calls.append(Call(time.monotonic(), model.name, json.loads(json.dumps(params, default=str))))

    def of(self, operation: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.operation == operation]
