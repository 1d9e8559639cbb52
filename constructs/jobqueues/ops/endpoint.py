"""The endpoint the commands talk to (``--endpoint-url``, ``AWS_ENDPOINT_URL``): checked before any request, and
its answers checked before botocore parses them.

botocore takes ``localhost:4566`` for a URL whose scheme is ``localhost`` (and then asks for a region), and parses
a web server's HTML page as best it can (a ``KeyError`` deep in its parser, or an empty result). Both are said
here in one line instead: :func:`endpoint_problem` before the first client is made, :func:`reject_non_aws` as a
``before-parse`` handler on every client (raising stops botocore at once: nothing is retried).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from jobqueues.ops.errors import NotAws

#: Schemes an AWS endpoint has.
SCHEMES = ("http", "https")
#: How an HTML page starts (after blanks), lower-cased: no AWS API these commands call answers with one.
HTML_STARTS = (b"<!doctype html", b"<html")


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


def reject_non_aws(endpoint: str, response_dict: dict[str, Any], **_: Any) -> None:
    """botocore's ``before-parse`` event: raise :class:`NotAws` when ``endpoint`` answered with an HTML page, or
    with an error status and nothing else (AWS always names its errors)."""
    body = response_dict.get("body") or b""
    status = int(response_dict.get("status_code", 0))
    if isinstance(body, bytes) and body.lstrip()[:20].lower().startswith(HTML_STARTS):
        raise NotAws(f"{endpoint} is not AWS: it answered with an HTML page (HTTP {status}); check the endpoint")
    if status >= 300 and not body:
        raise NotAws(f"{endpoint} is not AWS: it answered HTTP {status} without an AWS error; check the endpoint")


def guard(client: Any) -> Any:
    """``client`` with :func:`reject_non_aws` on every answer; returns it."""
    endpoint = client.meta.endpoint_url

    def check(**kwargs: Any) -> None:
        reject_non_aws(endpoint, **kwargs)

    client.meta.events.register("before-parse", check)
    return client
