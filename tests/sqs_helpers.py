"""Helpers for sqslease tests against a real moto_server over HTTP."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from local_emulator.server import LocalServer

_names = itertools.count()
ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Queues:
    url: str
    dlq_url: str | None = None


def make_queue(server: LocalServer, vt: int = 30, max_receive_count: int | None = None, fifo: bool = False) -> Queues:
    """A fresh queue (and DLQ when ``max_receive_count`` is given) with a unique name."""
    sqs = server.client("sqs")
    suffix = ".fifo" if fifo else ""
    name = f"t{next(_names)}-{int(time.time() * 1000) % 10_000_000}"
    dlq_url = None
    attributes: dict[str, str] = {"VisibilityTimeout": str(vt)}
    if fifo:
        attributes["FifoQueue"] = "true"
    if max_receive_count is not None:
        dlq_attrs = {"FifoQueue": "true"} if fifo else {}
        dlq_url = sqs.create_queue(QueueName=f"{name}-dlq{suffix}", Attributes=dlq_attrs)["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        attributes["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive_count})
    url = sqs.create_queue(QueueName=f"{name}{suffix}", Attributes=attributes)["QueueUrl"]
    return Queues(url, dlq_url)


def send(server: LocalServer, url: str, bodies: list[str]) -> None:
    sqs = server.client("sqs")
    for start in range(0, len(bodies), 10):
        entries = [{"Id": str(i), "MessageBody": b} for i, b in enumerate(bodies[start : start + 10])]
        response = sqs.send_message_batch(QueueUrl=url, Entries=entries)
        assert not response.get("Failed"), response


def receive_all(server: LocalServer, url: str, wait_s: float = 0, vt: int | None = None) -> list[dict]:
    """Everything visible now (polling up to ``wait_s``), without deleting it."""
    sqs = server.client("sqs")
    found: list[dict] = []
    deadline = time.monotonic() + wait_s
    while True:
        kwargs: dict[str, Any] = {"QueueUrl": url, "MaxNumberOfMessages": 10, "MessageSystemAttributeNames": ["All"]}
        if vt is not None:
            kwargs["VisibilityTimeout"] = vt
        batch = sqs.receive_message(**kwargs).get("Messages", [])
        found.extend(batch)
        if not batch and time.monotonic() >= deadline:
            return found
        if not batch:
            time.sleep(0.05)


def counts(server: LocalServer, url: str) -> tuple[int, int]:
    """(visible, in flight) as SQS reports them."""
    a = server.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return int(a["ApproximateNumberOfMessages"]), int(a["ApproximateNumberOfMessagesNotVisible"])


@dataclass
class Call:
    at: float
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


def inject_errors(client: Any, operation: str, code: str, times: int) -> list[int]:
    """Make the next ``times`` calls of ``operation`` fail with ``code`` before reaching the server."""
    remaining = [times]

    def fail(**_: Any) -> Any:
        if remaining[0] <= 0:
            return None
        remaining[0] -= 1

        http = SimpleNamespace(status_code=400, headers={}, content=b"")
        return http, {"Error": {"Code": code, "Message": f"injected {code}"}, "ResponseMetadata": {}}

    client.meta.events.register(f"before-call.sqs.{operation}", fail)
    return remaining


def wait_for(predicate: Callable[[], bool], timeout_s: float, interval_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()


def receive_when_visible(server: LocalServer, url: str, timeout_s: float) -> tuple[list[dict], float]:
    """Poll until messages are visible; return them and when (monotonic) they were received."""
    sqs = server.client("sqs")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]).get(
            "Messages", []
        )
        if found:
            return found, time.monotonic()
        time.sleep(0.05)
    return [], time.monotonic()


def start_worker_process(
    server: LocalServer, url: str, events: Path, quiet: bool = False, **env: str
) -> subprocess.Popen[bytes]:
    """``python -m sqslease.worker`` running ``sqs_handlers:slow_job`` (concurrency 1) against ``server``."""
    environment = {
        **os.environ,
        **server.env(),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT / "lambda_src")]),
        "TEST_EVENTS_FILE": str(events),
        "SQSLEASE_WAIT_TIME": "1",
        "SQSLEASE_HEARTBEAT_INTERVAL": "0.2",
        **env,
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sqslease.worker",
            "--queue-url",
            url,
            "--handler",
            "sqs_handlers:slow_job",
            "--concurrency",
            "1",
        ],
        env=environment,
        stdout=subprocess.DEVNULL if quiet else subprocess.PIPE,
        stderr=subprocess.DEVNULL if quiet else subprocess.PIPE,
    )
