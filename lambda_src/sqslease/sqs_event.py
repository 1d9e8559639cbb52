"""What the Lambda adapter takes: the event an SQS event source mapping sends, and nothing else.

A function wired to another trigger (S3, SNS, EventBridge, a test event of the wrong shape) gets a
:class:`NotAnSqsEventError` (a ``ValueError``, as Powertools' ``BatchProcessor`` raises) naming what was expected and
what came, before any record runs or any request is sent: not an ``AttributeError`` deep in the adapter, and not an
empty batch that succeeds silently and lets the trigger's events go.
"""

from __future__ import annotations

from typing import Any

#: The keys of a record the adapter reads (``attributes`` and ``messageAttributes`` are optional).
KEYS = frozenset({"messageId", "receiptHandle", "body", "eventSource", "eventSourceARN"})
SQS_EVENT_SOURCE = "aws:sqs"
EXPECTED = (
    f"expected an SQS event: {{'Records': [...]}} of records with 'eventSource': {SQS_EVENT_SOURCE!r} and "
    f"{', '.join(sorted(KEYS - {'eventSource'}))} (the event an SQS event source mapping sends)"
)
#: Keys of a foreign event named in the error, at most (they say which trigger sent it).
SHOWN_KEYS = 6


class NotAnSqsEventError(ValueError):
    """The Lambda adapter was given an event that is not an SQS event source mapping's."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"{EXPECTED}; {problem}")


def sqs_records(event: object) -> list[dict[str, Any]]:
    """The records of ``event`` (an empty list for an empty batch); raises :class:`NotAnSqsEventError` for anything
    but an SQS event. One pass of key checks per record: what the adapter reads, nothing more."""
    records = event.get("Records") if isinstance(event, dict) else None
    if not isinstance(records, list):
        raise NotAnSqsEventError(_event_problem(event))
    for record in records:  # about 0.2 us a record; the adapter spends 8 us and more (bench/runtime_bench.py)
        if not (isinstance(record, dict) and record.keys() >= KEYS and record["eventSource"] == SQS_EVENT_SOURCE):
            raise NotAnSqsEventError(_record_problem(records.index(record), record))
    return records


def _event_problem(event: object) -> str:
    if not isinstance(event, dict):
        return f"got {_a(event)}"
    if "Records" not in event:
        keys = ", ".join(repr(key) for key in list(event)[:SHOWN_KEYS]) or "no keys"
        more = ", ..." if len(event) > SHOWN_KEYS else ""
        return f"got a dict without 'Records' ({'keys: ' if event else ''}{keys}{more})"
    return f"its 'Records' is {_a(event['Records'])}, not a list"


def _record_problem(index: int, record: object) -> str:
    if not isinstance(record, dict):
        return f"record {index} is {_a(record)}"
    if "eventSource" not in record:
        return f"record {index} has no eventSource"
    if record["eventSource"] != SQS_EVENT_SOURCE:
        return f"record {index} has eventSource {record['eventSource']!r}, not {SQS_EVENT_SOURCE!r}"
    missing = sorted(KEYS - record.keys())
    return f"record {index} has no {', '.join(missing)}"


def _a(value: object) -> str:
    """``an int``, ``a list``, ``None``: what a value is, in the error's words."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"
