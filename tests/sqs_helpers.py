"""Helpers for sqslease tests against a real moto_server over HTTP."""

from __future__ import annotations

import collections
import http.client
import itertools
import json
import os
import random
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from local_emulator.server import LocalServer

_names = itertools.count()
ROOT = Path(__file__).resolve().parent.parent
#: The sqslease sources worker processes run. Point SQSLEASE_SRC at another copy (e.g. a previous release) to
#: run these tests against it.
SQSLEASE_SRC = Path(os.environ.get("SQSLEASE_SRC", ROOT / "lambda_src"))


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
    server: LocalServer,
    url: str,
    events: Path,
    quiet: bool = False,
    endpoint: str | None = None,
    handler: str = "sqs_handlers:slow_job",
    concurrency: int = 1,
    args: list[str] | None = None,
    log: Path | None = None,
    **env: str,
) -> subprocess.Popen[bytes]:
    """``python -m sqslease.worker`` running ``handler`` against ``server`` (or ``endpoint``, e.g. a proxy)."""
    environment = {
        **os.environ,
        **server.env(),
        **({"AWS_ENDPOINT_URL": endpoint} if endpoint else {}),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(SQSLEASE_SRC)]),
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
            handler,
            "--concurrency",
            str(concurrency),
            *(args or []),
        ],
        env=environment,
        stdout=subprocess.DEVNULL if quiet else subprocess.PIPE,
        stderr=log.open("ab") if log else subprocess.DEVNULL if quiet else subprocess.PIPE,
    )


# -- fault injection ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fault:
    """What the proxy does to one request.

    ``kind``: ``throttle`` (RequestThrottled), ``throttling`` (ThrottlingException), ``error500``
    (InternalError), ``access_denied``, ``kms_denied``: answer at once with that SQS error and never reach
    the server; ``delay``: wait ``seconds``, then forward; ``hold``: forward (the server applies the request),
    then hold the answer ``seconds`` (the client usually times out first).
    """

    kind: str
    seconds: float = 0.0


#: SQS's JSON protocol errors as the service sends them: status, ``__type``, ``x-amzn-query-error``.
SQS_ERRORS = {
    "throttle": (400, "com.amazonaws.sqs#RequestThrottled", "RequestThrottled;Sender", "Request is throttled."),
    "throttling": (
        400,
        "com.amazon.coral.availability#ThrottlingException",
        "ThrottlingException;Sender",
        "Rate exceeded",
    ),
    "error500": (500, "com.amazon.coral.service#InternalFailure", "InternalError;Receiver", "Internal error"),
    "access_denied": (
        403,
        "com.amazon.coral.service#AccessDeniedException",
        "AccessDenied;Sender",
        "User is not authorized to perform this action",
    ),
    "kms_denied": (
        400,
        "com.amazonaws.sqs#KmsAccessDenied",
        "KMS.AccessDeniedException;Sender",
        "The ciphertext refers to a customer master key that does not exist or that you do not have access to.",
    ),
}

Rule = Callable[[str, bytes], "Fault | None"]


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # clients that gave up are expected here
            super().handle_error(request, client_address)


class FaultProxy:
    """An HTTP proxy between SQS clients and moto_server that injects faults, decided per request by ``rule``.

    ``rule(operation, body)`` gets the SQS operation (``ReceiveMessage``, ...) and the JSON request body and
    returns a :class:`Fault` or None (forward untouched). Counts every decision in ``counts``.
    """

    def __init__(self, upstream: str, rule: Rule | None = None) -> None:
        self.upstream = urllib.parse.urlsplit(upstream)
        self.rule: Rule = rule or (lambda operation, body: None)
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as botocore's pool expects

            def do_POST(self) -> None:
                proxy._serve(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = _QuietServer(("localhost", 0), Handler)
        self.endpoint = f"http://localhost:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def faults(self) -> int:
        with self._lock:
            return sum(n for (_, kind), n in self.counts.items() if kind != "ok")

    def requests(self) -> int:
        with self._lock:
            return sum(self.counts.values())

    def _serve(self, request: BaseHTTPRequestHandler) -> None:
        body = request.rfile.read(int(request.headers.get("Content-Length", 0)))
        operation = request.headers.get("X-Amz-Target", "").rsplit(".", 1)[-1]
        fault = self.rule(operation, body)
        with self._lock:
            self.counts[(operation, fault.kind if fault else "ok")] += 1
        try:
            if fault is not None and fault.kind in SQS_ERRORS:
                status, error_type, query_error, message = SQS_ERRORS[fault.kind]
                payload = json.dumps({"__type": error_type, "message": message}).encode()
                headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-query-error": query_error}
                self._reply(request, status, headers, payload)
                return
            if fault is not None and fault.kind == "delay":
                time.sleep(fault.seconds)
            status, headers, payload = self._forward(request, body)
            if fault is not None and fault.kind == "hold":
                time.sleep(fault.seconds)
            self._reply(request, status, headers, payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its read timeout): exactly what a held answer is for

    def _forward(self, request: BaseHTTPRequestHandler, body: bytes) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=60)
        try:
            headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "connection")}
            connection.request("POST", request.path, body=body, headers=headers)
            response = connection.getresponse()
            payload = response.read()
            keep = ("content-type", "x-amzn-requestid", "x-amzn-query-error", "x-amzn-errortype")
            return response.status, {k: v for k, v in response.getheaders() if k.lower() in keep}, payload
        finally:
            connection.close()

    @staticmethod
    def _reply(request: BaseHTTPRequestHandler, status: int, headers: dict[str, str], payload: bytes) -> None:
        request.send_response(status)
        for name, value in headers.items():
            request.send_header(name, value)
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)
        request.wfile.flush()


def random_faults(rate: float, random_state: int, hold_s: float = 1.5, max_delay_s: float = 0.3) -> Rule:
    """A rule that answers ``rate`` of all requests with a fault: 35 % of them throttling (RequestThrottled and
    ThrottlingException), 25 % 500s, 25 % delays of up to ``max_delay_s``, 15 % answers held ``hold_s``."""
    rng = random.Random(random_state)
    lock = threading.Lock()

    def rule(operation: str, body: bytes) -> Fault | None:
        with lock:
            roll = rng.random()
            if roll >= rate:
                return None
            share = roll / rate
            if share < 0.25:
                return Fault("throttle")
            if share < 0.35:
                return Fault("throttling")
            if share < 0.60:
                return Fault("error500")
            if share < 0.85:
                return Fault("delay", rng.uniform(0.02, max_delay_s))
            return Fault("hold", hold_s)

    return rule


class Thief:
    """A second consumer, straight to the server: receives whatever becomes visible (and keeps it hidden).

    Anything it gets while a worker still handles (or has finished) the message is a lapsed lease.
    """

    def __init__(self, server: LocalServer, url: str, hold_s: int = 60) -> None:
        self.sqs = server.client("sqs")
        self.url = url
        self.hold_s = hold_s
        self.stolen: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="thief", daemon=True)

    def __enter__(self) -> Thief:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            found = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10, VisibilityTimeout=self.hold_s)
            self.stolen += [m["Body"] for m in found.get("Messages", [])]


def events_of(path: Path) -> list[list[str]]:
    """The handler event lines (``start|end body receive_count monotonic``), split."""
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


# -- a scripted client and clock for deterministic unit tests -------------------------------------------
class FakeClock:
    """A monotonic clock that moves only when told to (or when :meth:`sleep` is called)."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


def client_error(kind: str, operation: str) -> Exception:
    """The botocore ``ClientError`` a real client raises for one of ``SQS_ERRORS``' kinds."""
    from botocore.exceptions import ClientError

    status, error_type, query_error, message = SQS_ERRORS[kind]
    code, _, fault_type = query_error.partition(";")
    error = {"Code": code, "QueryErrorCode": error_type.rsplit("#", 1)[-1], "Message": message, "Type": fault_type}
    return ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": status}}, operation)


class FakeSQS:
    """An SQS client stand-in that records every batch call (time on ``clock``) and answers per a script.

    ``script(operation, *actions)`` queues what the next calls do: ``"ok"``, an ``SQS_ERRORS`` kind (raised as
    the real ``ClientError``), ``"timeout"`` (a botocore ``ReadTimeoutError``), or a ``threading.Event`` to
    wait for (a held request) before answering ok. Unscripted calls succeed.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.calls: list[tuple[float, str, list[dict]]] = []
        self._script: dict[str, collections.deque[Any]] = collections.defaultdict(collections.deque)
        self._lock = threading.Lock()

    def script(self, operation: str, *actions: Any) -> FakeSQS:
        self._script[operation].extend(actions)
        return self

    def of(self, operation: str) -> list[tuple[float, str, list[dict]]]:
        with self._lock:
            return [c for c in self.calls if c[1] == operation]

    def change_message_visibility_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:
        return self._call("ChangeMessageVisibilityBatch", Entries)

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:
        return self._call("DeleteMessageBatch", Entries)

    def _call(self, operation: str, entries: list[dict]) -> dict:
        with self._lock:
            self.calls.append((self.clock(), operation, [dict(e) for e in entries]))
            action = self._script[operation].popleft() if self._script[operation] else "ok"
        if isinstance(action, threading.Event):
            action.wait(10)
        elif action == "timeout":
            from botocore.exceptions import ReadTimeoutError

            raise ReadTimeoutError(endpoint_url="http://fake")
        elif action != "ok":
            raise client_error(action, operation)
        return {"Successful": [{"Id": e["Id"]} for e in entries], "Failed": []}
