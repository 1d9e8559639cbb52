"""The last error a consumer logged for each message id: sqslease writes ``ErrorType`` and ``Error`` on a
failure's EMF line (docs/sqslease.md), and ``FilterLogEvents`` on the consumer's log group finds them.

Up to 25 message ids per search (``?"id1" ?"id2"``, any of the terms, within the API's 1,024-character pattern),
from the oldest message's first send on (less a minute of clock skew), so a page of 20 messages costs one search,
not one scan of the log per message. The emulator (moto) ignores a ``?`` pattern and returns every line of the
range: the lines are matched here anyway. A message sqslease released unrun, and never failed, says so
(:data:`RELEASED_WHY`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

#: Characters of a ``FilterLogEvents`` pattern (the API's limit).
PATTERN_LIMIT = 1024
#: Pages read per search, at most: AWS may answer a search of a large group with empty pages and a token while
#: it scans; this bounds the calls, and a search cut short is reported (:attr:`ErrorSearch.complete`).
MAX_LOG_PAGES = 100
#: Milliseconds searched before a message's first send: the log's timestamps come from the consumer's clock.
CLOCK_SKEW_MS = 60_000
#: Why sqslease releases a message it did not run (docs/sqslease.md): what a DLQ row of such a message says.
RELEASED_WHY = (
    "FIFO: an earlier message of its group failed in the same receive and was released to be retried (a Lambda "
    "invocation without time for the retry, or a consumer not told max_receive_count); or a drain, or a Lambda "
    "deadline, left it unstarted"
)


@dataclass(frozen=True)
class LastError:
    """A failure line of the consumer: its type (``module.Class``), its text, and when it ended (ms, epoch)."""

    error_type: str
    error: str
    timestamp_ms: int | None
    source: str  # "log" (the consumer's EMF line) or "attribute" (sqslease's dead-letter copy)


def parse_failure(message: str) -> dict[str, Any] | None:
    """The EMF object of a log event if it is a failure line (one with ``ErrorType``); see :func:`parse_line`."""
    line = parse_line(message)
    return line if line is not None and "ErrorType" in line else None


def parse_line(message: str) -> dict[str, Any] | None:
    """The EMF object of a log event (one with a ``MessageId``). Text before the JSON (a runtime's prefix:
    Lambda's ``[ERROR]\\t<time>\\t<request id>\\t``) is skipped, and so is text after it."""
    decoder = json.JSONDecoder()
    start = message.find("{")
    for _ in range(5):  # a prefix may hold braces of its own; a line is short, a few tries suffice
        if start < 0:
            return None
        try:
            line, _end = decoder.raw_decode(message, start)
        except ValueError:
            start = message.find("{", start + 1)
            continue
        return line if isinstance(line, dict) and "MessageId" in line else None
    return None


@dataclass(frozen=True)
class ErrorSearch:
    """The latest failure line found per message id, the ``FilterLogEvents`` calls made, and whether every
    search ran to its end (``False``: one stopped at :data:`MAX_LOG_PAGES` pages; older errors may be missing)."""

    errors: dict[str, LastError]
    calls: int
    complete: bool


def any_term_patterns(message_ids: list[str]) -> list[tuple[list[str], str]]:
    """``message_ids`` in groups, each with its pattern: ``"id"`` for one, ``?"id1" ?"id2"`` (any) for several,
    each at most :data:`PATTERN_LIMIT` characters."""
    groups: list[list[str]] = []
    length = 0
    for message_id in message_ids:
        term = len(message_id) + 4  # ?"id" and a space
        if not groups or length + term > PATTERN_LIMIT:
            groups.append([])
            length = 0
        groups[-1].append(message_id)
        length += term
    return [(ids, f'"{ids[0]}"' if len(ids) == 1 else " ".join(f'?"{i}"' for i in ids)) for ids in groups]


def last_logged_errors(logs: Any, log_group: str, since_ms: dict[str, int]) -> ErrorSearch:
    """The latest failure line in ``log_group`` of each message id of ``since_ms`` (id -> its first send, ms
    since the epoch): oldest ids first, 25 or so per search, each search from its oldest send on."""
    ordered = sorted(since_ms, key=lambda message_id: since_ms[message_id])
    latest: dict[str, tuple[int, dict[str, Any]]] = {}
    released: dict[str, tuple[int, int]] = {}  # id -> (latest release, releases): lines without an error
    calls, complete = 0, True
    for ids, pattern in any_term_patterns(ordered):
        wanted = set(ids)
        request: dict[str, Any] = {
            "logGroupName": log_group,
            "filterPattern": pattern,
            "startTime": max(0, min(since_ms[i] for i in ids) - CLOCK_SKEW_MS),
        }
        for page in range(MAX_LOG_PAGES):
            response = logs.filter_log_events(**request)
            calls += 1
            for event in response.get("events", []):
                line = parse_line(event.get("message", ""))
                message_id = line.get("MessageId") if line is not None else None
                if line is None or message_id not in wanted:
                    continue
                stamp = line.get("_aws", {}).get("Timestamp") if isinstance(line.get("_aws"), dict) else None
                at = int(stamp or event.get("timestamp") or 0)
                if "ErrorType" in line:
                    if message_id not in latest or at >= latest[message_id][0]:
                        latest[message_id] = (at, line)
                elif line.get("Outcome") == "released":
                    first, count = released.get(message_id, (at, 0))
                    released[message_id] = (max(first, at), count + 1)
            if not response.get("nextToken"):
                break
            request["nextToken"] = response["nextToken"]
            if page == MAX_LOG_PAGES - 1:
                complete = False
    errors = {
        message_id: LastError(str(line["ErrorType"]), str(line.get("Error", "")), at or None, "log")
        for message_id, (at, line) in latest.items()
    }
    for message_id, (at, count) in released.items():
        if message_id not in errors:  # it never failed itself: say so, or it reads as lost or corrupted
            text = f"never failed: released unrun {count} time{'s' if count != 1 else ''} ({RELEASED_WHY})"
            errors[message_id] = LastError("released", text, at or None, "log")
    return ErrorSearch(errors, calls, complete)
