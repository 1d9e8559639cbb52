"""An HTTP proxy between AWS clients and the emulator that answers, delays or holds chosen SQS and DynamoDB requests.

SQS requests (JSON protocol: ``X-Amz-Target: AmazonSQS.<Operation>``, what botocore sends) go through the rule;
DynamoDB requests (``DynamoDB_20120810.<Operation>``) through the DynamoDB rule when one is given; every other
request (CloudWatch Logs, ECS, Lambda, S3, any method; DynamoDB without its rule) is forwarded untouched and
counted in :attr:`FaultProxy.passed`.
"""

from __future__ import annotations

import collections
import http.client
import json
import logging
import random
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from jobqueues.emulator.chaos.dynamodb_errors import DYNAMODB_ERRORS
from jobqueues.emulator.chaos.sqs_errors import SQS_ERRORS

logger = logging.getLogger("jobqueues.emulator.chaos")

SQS_TARGET_PREFIX = "AmazonSQS."
DYNAMODB_TARGET_PREFIX = "DynamoDB_20120810."
# Not forwarded either way: they describe one hop, not the message (RFC 9110 7.6.1), or the proxy sets them.
_HOP_HEADERS = frozenset(
    ("connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host", "expect")
)
_REPLY_SETS = frozenset(("content-length", "date", "server"))


@dataclass(frozen=True)
class Fault:
    """What the proxy does to one request.

    ``kind``: ``throttle`` (RequestThrottled), ``throttling`` (ThrottlingException), ``error500``
    (InternalError), ``access_denied``, ``kms_denied``: answer at once with that SQS error and never reach
    the server (DynamoDB: ``throttle`` ProvisionedThroughputExceededException, ``throttling``, ``error500``
    InternalServerError); ``delay``: wait ``seconds``, then forward; ``hold``: forward (the server applies the
    request), then hold the answer ``seconds`` (the client usually times out first); ``drop``: never forward,
    hold the connection ``seconds``, then close it unanswered (a request lost on its way: a timeout);
    ``redeliver`` (SQS DeleteMessage and DeleteMessageBatch only): answer that every delete succeeded and never
    forward, so the message comes back when its visibility timeout ends, as a standard queue's at-least-once
    delivery may bring back a deleted message.
    """

    kind: str
    seconds: float = 0.0


#: ``rule(operation, body)``: the SQS operation (``ReceiveMessage``, ...) and the JSON request body; a
#: :class:`Fault`, or None to forward untouched.
Rule = Callable[[str, bytes], "Fault | None"]

#: ``observer(operation, request_body, status, response_body)``: called after the server answered a forwarded
#: SQS request (before a held answer is released), with the server's own answer: what the server did, whether or
#: not the client gets to see it. Not called for requests the proxy answered with an error itself.
Observer = Callable[[str, bytes, int, bytes], None]


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # clients that gave up are expected here
            super().handle_error(request, client_address)


class FaultProxy:
    """An HTTP proxy between AWS clients and the emulator (or moto_server) at ``upstream`` that injects faults
    into SQS requests, decided per request by ``rule``, and into DynamoDB requests by ``dynamodb_rule`` (default
    none: DynamoDB requests pass untouched). DynamoDB requests under a rule reach the server one at a time: moto
    cancels a TransactWriteItems by restoring a copy of the whole table taken when it began, which reverts the
    writes that landed meanwhile (acknowledged PutItems lost, seen on moto 5); DynamoDB never does.

    Counts every SQS decision in ``counts`` (``(operation, kind or "ok")``) and every other request in
    ``passed`` (by ``X-Amz-Target`` prefix or HTTP method and first path segment). ``observers`` see every
    forwarded SQS exchange. Serves from ``__enter__`` (or :meth:`start`) to ``__exit__`` (or :meth:`stop`).
    """

    def __init__(
        self,
        upstream: str,
        rule: Rule | None = None,
        observers: list[Observer] | None = None,
        dynamodb_rule: Rule | None = None,
    ) -> None:
        self.upstream = urllib.parse.urlsplit(upstream)
        self.rule: Rule = rule or (lambda operation, body: None)
        self.observers: list[Observer] = list(observers or [])
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self.dynamodb_rule = dynamodb_rule
        #: Every DynamoDB decision (``(operation, kind or "ok")``), when a DynamoDB rule is given.
        self.dynamodb_counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._dynamodb_one_at_a_time = threading.Lock()
        self.passed: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as botocore's pool expects

            def do_POST(self) -> None:
                proxy._serve(self)

            do_GET = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = do_POST

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = _QuietServer(("localhost", 0), Handler)
        self.endpoint = f"http://localhost:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def faults(self) -> int:
        """SQS requests that got a fault."""
        with self._lock:
            return sum(n for (_, kind), n in self.counts.items() if kind != "ok")

    def fault_kinds(self) -> dict[str, int]:
        """Fault kind -> SQS requests that got it."""
        kinds: collections.Counter[str] = collections.Counter()
        with self._lock:
            for (_, kind), n in self.counts.items():
                if kind != "ok":
                    kinds[kind] += n
        return dict(kinds)

    def requests(self) -> int:
        """SQS requests seen (other requests are in :attr:`passed`)."""
        with self._lock:
            return sum(self.counts.values())

    def _serve(self, request: BaseHTTPRequestHandler) -> None:
        body = request.rfile.read(int(request.headers.get("Content-Length", 0)))
        target = request.headers.get("X-Amz-Target", "")
        if self.dynamodb_rule is not None and target.startswith(DYNAMODB_TARGET_PREFIX):
            operation = target[len(DYNAMODB_TARGET_PREFIX) :]
            fault = self.dynamodb_rule(operation, body)
            with self._lock:
                self.dynamodb_counts[(operation, fault.kind if fault else "ok")] += 1
            self._exchange(request, body, None, fault, DYNAMODB_ERRORS, self._dynamodb_one_at_a_time)
            return
        if not target.startswith(SQS_TARGET_PREFIX):
            with self._lock:
                self.passed[target.split(".", 1)[0] or f"{request.command} /{_first_segment(request.path)}"] += 1
            self._exchange(request, body, None, None, {})
            return
        operation = target[len(SQS_TARGET_PREFIX) :]
        fault = self.rule(operation, body)
        with self._lock:
            self.counts[(operation, fault.kind if fault else "ok")] += 1
        self._exchange(request, body, operation, fault, SQS_ERRORS)

    def _exchange(
        self,
        request: BaseHTTPRequestHandler,
        body: bytes,
        operation: str | None,
        fault: Fault | None,
        errors: dict[str, tuple[Any, ...]],
        serial: threading.Lock | None = None,
    ) -> None:
        try:
            if fault is not None and fault.kind in errors:
                status, error_type, *query_error, message = errors[fault.kind]
                payload = json.dumps({"__type": error_type, "message": message}).encode()
                headers = [("Content-Type", "application/x-amz-json-1.0")]
                headers += [("x-amzn-query-error", query) for query in query_error]
                self._reply(request, status, headers, payload)
                return
            if fault is not None and fault.kind == "drop":
                time.sleep(fault.seconds)
                request.close_connection = True  # unanswered: the client's read timeout ends it first
                return
            if fault is not None and fault.kind == "redeliver":
                entries = json.loads(body or b"{}").get("Entries")
                answer = {} if entries is None else {"Successful": [{"Id": e["Id"]} for e in entries], "Failed": []}
                self._reply(request, 200, [("Content-Type", "application/x-amz-json-1.0")], json.dumps(answer).encode())
                return
            if fault is not None and fault.kind == "delay":
                time.sleep(fault.seconds)
            if serial is None:
                status, headers, payload = self._forward(request, body)
            else:
                with serial:
                    status, headers, payload = self._forward(request, body)
            if operation is not None:
                self._observe(operation, body, status, payload)
            if fault is not None and fault.kind == "hold":
                time.sleep(fault.seconds)
            self._reply(request, status, headers, payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its read timeout): exactly what a held answer is for

    def _observe(self, operation: str, body: bytes, status: int, payload: bytes) -> None:
        for observer in self.observers:
            try:
                observer(operation, body, status, payload)
            except Exception:  # an observer's bug must not turn into a fault the consumer sees
                logger.exception("fault proxy observer %r failed on %s", observer, operation)

    def _forward(self, request: BaseHTTPRequestHandler, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(self.upstream.hostname or "localhost", self.upstream.port, timeout=60)
        try:
            headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
            connection.request(request.command, request.path, body=body if body else None, headers=headers)
            response = connection.getresponse()
            payload = response.read()
            # A HEAD answer's Content-Length is the resource's, not its (empty) payload's: keep it.
            dropped = _HOP_HEADERS | (_REPLY_SETS - {"content-length"} if request.command == "HEAD" else _REPLY_SETS)
            kept = [(k, v) for k, v in response.getheaders() if k.lower() not in dropped]
            return response.status, kept, payload
        finally:
            connection.close()

    @staticmethod
    def _reply(request: BaseHTTPRequestHandler, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
        request.send_response(status)
        for name, value in headers:
            request.send_header(name, value)
        if request.command != "HEAD":
            request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        if request.command != "HEAD":
            request.wfile.write(payload)
        request.wfile.flush()


def _first_segment(path: str) -> str:
    return urllib.parse.urlsplit(path).path.lstrip("/").split("/", 1)[0]


def chaos_rule(rate: float, rng: random.Random, hold_s: float = 1.5, max_delay_s: float = 0.3) -> Rule:
    """A rule that answers ``rate`` (0..1) of the SQS requests with a fault: 35 % of them throttling
    (RequestThrottled 25 %, ThrottlingException 10 %), 25 % 500s, 25 % delays of up to ``max_delay_s`` seconds
    (default 0.3), 15 % answers held ``hold_s`` seconds (default 1.5) after the server applied the request.

    One ``rng`` draw decides whether and which (a second one a delay's length), under a lock: the faults of a
    seeded ``rng`` are reproducible for one order of requests.
    """
    if not 0 <= rate <= 1:
        raise ValueError(f"rate must be within 0..1, got {rate}")
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


def random_faults(rate: float, random_state: int, hold_s: float = 1.5, max_delay_s: float = 0.3) -> Rule:
    """:func:`chaos_rule` with its own ``random.Random(random_state)`` (the tests' spelling)."""
    return chaos_rule(rate, random.Random(random_state), hold_s, max_delay_s)
