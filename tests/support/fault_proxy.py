"""An HTTP proxy between SQS clients and moto_server that answers, delays or holds chosen requests."""

from __future__ import annotations

import collections
import http.client
import json
import random
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from support.sqs_errors import SQS_ERRORS


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
