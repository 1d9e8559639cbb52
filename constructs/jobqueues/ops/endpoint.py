"""The endpoint the commands talk to (``--endpoint-url``, ``AWS_ENDPOINT_URL``): checked before any request, and
its answers checked before botocore parses them.

botocore takes ``localhost:4566`` for a URL whose scheme is ``localhost`` (and then asks for a region), and parses
a web server's answer as best it can: a ``KeyError`` deep in its parser (XML that names no operation's result), an
error without a code (XML that is not AWS's error shape), or an exception that does not name the endpoint. Each is
said here in one line instead: :func:`endpoint_problem` before the first client is made, :func:`reject_non_aws` as
a ``before-parse`` handler on every client (raising stops botocore at once: nothing is retried), which parses the
answer as botocore will and names the endpoint, the operation and what it answered when that fails.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from jobqueues.ops.errors import NotAws

#: Schemes an AWS endpoint has.
SCHEMES = ("http", "https")
#: How an HTML page starts (after blanks), lower-cased: no AWS API these commands call answers with one.
HTML_STARTS = (b"<!doctype html", b"<html")
#: Characters of an answer quoted in the error line.
QUOTED_CHARS = 120


def endpoint_problem(url: str, source: str) -> str | None:
    """What is wrong with the endpoint ``url`` given by ``source`` (``--endpoint-url`` or ``AWS_ENDPOINT_URL``),
    as the line to print; ``None`` when it is a URL botocore can use."""
    parsed = urlparse(url)
    if parsed.scheme not in SCHEMES or not parsed.hostname:
        bare = url.split("://", 1)[-1]
        return f"{source}={url} is not a URL: write http://{bare} (the emulator) or https://HOST"
    try:
        parsed.port  # noqa: B018 - urlparse checks the port only when asked
    except ValueError as error:
        return f"{source}={url} is not a URL: {error}"
    return None


def reject_non_aws(endpoint: str, response_dict: dict[str, Any], operation_model: Any = None, **_: Any) -> None:
    """botocore's ``before-parse`` event: raise :class:`NotAws` when ``endpoint`` answered with an HTML page, with
    an error status and nothing else, or with anything botocore cannot read as ``operation_model``'s answer or as
    an AWS error (AWS always names its errors)."""
    body = response_dict.get("body") or b""
    status = int(response_dict.get("status_code", 0))
    if isinstance(body, bytes) and body.lstrip()[:20].lower().startswith(HTML_STARTS):
        raise NotAws(f"{endpoint} is not AWS: it answered with an HTML page (HTTP {status}); check the endpoint")
    if status >= 300 and not body:
        raise NotAws(f"{endpoint} is not AWS: it answered HTTP {status} without an AWS error; check the endpoint")
    if operation_model is None or not isinstance(body, bytes):  # a streamed answer is not read here
        return
    problem = _unreadable(operation_model, response_dict, status)
    if problem is not None:
        headers = response_dict.get("headers") or {}
        kind = headers.get("content-type") or headers.get("Content-Type") or "no content type"
        raise NotAws(
            f"{endpoint} is not AWS: it answered {operation_model.name} with HTTP {status} ({kind}), {problem}: "
            f"{_quoted(body)}; check the endpoint"
        )


def _unreadable(operation_model: Any, response_dict: dict[str, Any], status: int) -> str | None:
    """Why botocore cannot read ``response_dict`` as the operation's answer or as an AWS error; ``None`` if it can."""
    from botocore.parsers import create_parser

    parser = create_parser(operation_model.service_model.resolved_protocol)
    try:
        parsed = parser.parse(dict(response_dict), operation_model.output_shape)
    except Exception:  # what botocore's parser raises on a foreign answer is anything (KeyError, ParseError)
        return "which is no AWS answer"
    if status >= 300 and not (parsed.get("Error") or {}).get("Code"):
        return "an error not in AWS's error format"  # no code botocore can read, whatever it names
    return None


def _quoted(body: bytes) -> str:
    """The start of an answer, on one line, quoted (``empty`` for none)."""
    text = " ".join(body.decode("utf-8", "replace").split())
    if not text:
        return "an empty body"
    return repr(text[:QUOTED_CHARS] + ("..." if len(text) > QUOTED_CHARS else ""))


def guard(client: Any) -> Any:
    """``client`` with :func:`reject_non_aws` on every answer; returns it."""
    endpoint = client.meta.endpoint_url

    def check(**kwargs: Any) -> None:
        reject_non_aws(endpoint, **kwargs)

    client.meta.events.register("before-parse", check)
    return client
