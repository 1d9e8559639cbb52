"""Endpoints that are reachable but are not AWS: a plain HTTP server on localhost that answers every request the
same way (an HTML page with a status, an empty 404, or a closed connection), recording each request's SigV4
credential scope (access key and region), so a test can tell which credentials and region a client used."""

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

#: Kinds of answers: (status, body), or ``None`` for a connection closed without an answer.
ANSWERS: dict[str, tuple[int, bytes] | None] = {
    "error page 501": (501, ERROR_PAGE),
    "welcome page 200": (200, WELCOME_PAGE),
    "empty 404": (404, b""),
    "closed connection": None,
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

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            found = re.search(r"Credential=([^/]+)/\d{8}/([^/]+)/", self.headers.get("Authorization") or "")
            if found:
                scopes.append((found.group(1), found.group(2)))
            if reply is None:
                self.close_connection = True
                return  # nothing sent: the client sees the connection closed
            status, body = reply
            self.send_response(status)
            self.send_header("Content-Type", "text/html")
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
        server.shutdown()
        server.server_close()
