"""Endpoints that are reachable but are not AWS: a plain HTTP server on localhost that answers every request the
same way (an HTML page with a status, an empty 404, XML or JSON that no AWS API answers, plain text, a closed
connection, or no answer at all), recording each request's SigV4 credential scope (access key and region), so a
test can tell which credentials and region a client used."""

from __future__ import annotations

import http.server
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

#: What ``python -m http.server`` answers a POST (an AWS API call): its 501 error page.
ERROR_PAGE = (
    b'<!DOCTYPE HTML>\n<html lang="en">\n<head><title>Error response</title></head>\n<body>\n'
    b"<h1>Error response</h1>\n<p>Error code: 501</p>\n<p>Message: Unsupported method ('POST').</p>\n</body>\n</html>\n"
)
WELCOME_PAGE = b"<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head><body>ok</body></html>\n"

#: Kinds of answers: (status, content type or ``None`` for no header, body); ``CLOSE`` for a connection closed
#: without an answer, ``HANG`` for a request read and never answered (the connection stays open).
CLOSE, HANG = "close", "hang"
ANSWERS: dict[str, tuple[int, str | None, bytes] | str] = {
    "error page 501": (501, "text/html", ERROR_PAGE),
    "welcome page 200": (200, "text/html", WELCOME_PAGE),
    "empty 404": (404, "text/html", b""),
    "closed connection": CLOSE,
    # XML that is no AWS answer: a 200 that names no operation's result, a 500 whose error is not AWS's shape
    "xml 200": (200, "text/xml", b"<hello/>"),
    "xml error 500": (500, "text/xml", b"<Error><Code>Boom</Code><Message>it broke</Message></Error>"),
    "empty 200": (200, None, b""),
    "json 200": (200, "application/json", b'{"hello": "world"}'),
    "json 400": (400, "application/x-amz-json-1.0", b'{"message": "nope"}'),
    "text 502": (502, "text/plain", b"Bad Gateway"),
    "no answer": HANG,
}


@dataclass
class PlainServer:
    """A running server: its ``http://127.0.0.1:PORT`` URL and the (access key, region) of each request."""

    url: str
    scopes: list[tuple[str, str]] = field(default_factory=list)


@contextmanager
def not_aws(answer: str) -> Iterator[PlainServer]:
    """A server giving every request the answer ``answer`` (a key of :data:`ANSWERS`), until the ``with`` ends."""
    reply = ANSWERS[answer]
    scopes: list[tuple[str, str]] = []
    stopping = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            found = re.search(r"Credential=([^/]+)/\d{8}/([^/]+)/", self.headers.get("Authorization") or "")
            if found:
                scopes.append((found.group(1), found.group(2)))
            if reply == HANG:
                stopping.wait()  # until the server stops: the client's read timeout ends the request
            if isinstance(reply, str):
                self.close_connection = True
                return  # nothing sent: the client sees the connection closed
            status, content_type, body = reply
            self.send_response(status)
            if content_type is not None:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield PlainServer(f"http://127.0.0.1:{server.server_address[1]}", scopes)
    finally:
        stopping.set()
        server.shutdown()
        server.server_close()
