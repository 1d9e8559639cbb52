"""The text of an EMF line, fast: its fixed parts encoded once per job type, queue and outcome (a template), its
milliseconds formatted from integers (:mod:`sqslease.emf` writes the lines).
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii
from typing import Any

#: The fields a line's template formats, in their order on the line (after ``_aws``).
TEMPLATE_FIELDS = (
    "SchemaVersion",
    "JobType",
    "Queue",
    "MessageId",
    "ProcessingTime",
    "Outcome",
    "ReceiveCount",
    "Extensions",
    "LeaseLost",
)


#: The line's field naming the message's group (its ``MessageGroupId``: a tenant on a fair queue, a FIFO group): a
#: property, never a dimension, so that the metrics stay one per job type however many tenants there are. Written
#: last (after ``QueueTime``), outside the template: a template per tenant would be unbounded.
GROUP_FIELD = "MessageGroupId"

#: (namespace, job type, stack, queue, outcome, schema version, queued) -> :func:`line_template`, shared by every
#: logger (the Lambda adapter makes one per invocation), at most this many.
TEMPLATES: dict[tuple[Any, ...], tuple[str, str]] = {}
MAX_TEMPLATES = 1024


def line_template(
    directives: Any, job_type: str, stack: str | None, queue: str, outcome: str, schema_version: int
) -> tuple[str, str]:
    """The encoded text of a line around its message id and processing time, and after that up to its counts."""
    stack_text = "" if stack is None else f'"Stack":{ENCODER.encode(stack)},'
    head = (
        f',"CloudWatchMetrics":{ENCODER.encode(directives)}}},"SchemaVersion":{ENCODER.encode(schema_version)},'
        f'"JobType":{ENCODER.encode(job_type)},{stack_text}"Queue":{ENCODER.encode(queue)},"MessageId":'
    )
    return head, f',"Outcome":{ENCODER.encode(outcome)},"ReceiveCount":'


#: One encoder for every line: ``json.dumps`` with separators builds a new one per call.
ENCODER = json.JSONEncoder(separators=(",", ":"))


def millis(value: float) -> float:
    """A line's milliseconds, to the microsecond: ``round(value * 1000) / 1000`` for a float below 1e12 (an int
    stays an int; anything else is ``round(value, 3)``, NaN included)."""
    if type(value) is float and -1e12 < value < 1e12:
        return round(value * 1000) / 1000
    return round(value, 3)


def millis_text(value: float) -> str:
    """``json.dumps(millis(value))`` for a value :func:`plain_millis` accepts, formatted from integers: float
    formatting (``round(value, 3)`` and ``repr``, about a microsecond each) was a fifth of an EMF line's cost.
    Below 1e12 every such decimal has at most 15 significant digits, so it is the float's shortest repr."""
    if type(value) is int:
        return str(value)
    thousandths = round(value * 1000)
    if thousandths < 0:
        return "-" + millis_text(-value)
    whole, fraction = divmod(thousandths, 1000)
    return f"{whole}.{FRACTIONS[fraction]}"  # the fraction's text looked up: a third of the formatting's cost


#: ``.000`` to ``.999`` as ``repr`` writes them after the point (``0``, ``001``... ``5``, ``999``).
FRACTIONS = tuple(f"{fraction:03d}".rstrip("0") or "0" for fraction in range(1000))


def plain_millis(value: Any) -> bool:
    """Whether :func:`millis_text` formats ``value``: an int, or a float between -1e12 and 1e12 (not NaN)."""
    return type(value) is int or (type(value) is float and -1e12 < value < 1e12)


def line_text(
    timestamp_ms: int,
    head: str,
    message_id: str,
    processing_ms: float,
    middle: str,
    receive_count: int,
    extensions: int,
    lease_lost: bool,
    queue_ms: float | None,
    group: str | None = None,
) -> str:
    """A usual line (no error, times :func:`plain_millis` accepts) in its template (``head``, ``middle``: a
    :func:`line_template`), with its newline; ``group`` (a ``str``, or ``None``: no field) as :data:`GROUP_FIELD`.

    A time that is a float not below 0 (a handler's and a queue's, always) is formatted here as :func:`millis_text`
    does, without its call: the two calls were a tenth of a line's cost (``bench/runtime_bench.py``)."""
    if type(processing_ms) is float and processing_ms >= 0:
        thousandths = round(processing_ms * 1000)
        processing = f"{thousandths // 1000}.{FRACTIONS[thousandths % 1000]}"
    else:
        processing = millis_text(processing_ms)
    if queue_ms is None:
        queued = ""
    elif type(queue_ms) is float and queue_ms >= 0:
        thousandths = round(queue_ms * 1000)
        queued = f',"QueueTime":{thousandths // 1000}.{FRACTIONS[thousandths % 1000]}'
    else:
        queued = f',"QueueTime":{millis_text(queue_ms)}'
    end = "}\n" if group is None else f',"{GROUP_FIELD}":{encode_basestring_ascii(group)}}}\n'
    # one f-string: each concatenation after it copied the whole line
    return (
        f'{{"_aws":{{"Timestamp":{timestamp_ms}{head}{encode_basestring_ascii(message_id)},"ProcessingTime":'
        f'{processing}{middle}{receive_count},"Extensions":{extensions},"LeaseLost":{int(lease_lost)}{queued}{end}'
    )


#: Characters of an error's text kept on a line (``Error``): enough for the cause, bounded so that one failing
#: handler cannot flood the logs (CloudWatch Logs takes 256 KiB per event).
ERROR_TEXT_LIMIT = 500


def error_type(error: BaseException) -> str:
    """``module.Class`` of ``error`` (``builtins.`` left out)."""
    kind = type(error)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def error_text(error: BaseException) -> str:
    """``str(error)`` on one line, cut to :data:`ERROR_TEXT_LIMIT` characters (an ellipsis marks the cut)."""
    text = " ".join(str(error).split()) or repr(error)
    return text if len(text) <= ERROR_TEXT_LIMIT else text[: ERROR_TEXT_LIMIT - 1] + "…"
