"""One CloudWatch Embedded Metric Format line per processed message.

CloudWatch Logs turns the line into metrics (namespace ``jobqueues``, dimension ``JobType``); the
``jobstats`` Spark pipeline reads the same lines to measure p99s. The schema is in docs/sqslease.md.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import IO, Any

NAMESPACE = "jobqueues"
SCHEMA_VERSION = 1

#: Metric names and units published from each line.
METRICS = (
    {"Name": "ProcessingTime", "Unit": "Milliseconds"},
    {"Name": "Extensions", "Unit": "Count"},
    {"Name": "LeaseLost", "Unit": "Count"},
    {"Name": "ReceiveCount", "Unit": "Count"},
)
#: Published from a line that has ``QueueTime``: a message that ran, with a ``SentTimestamp``.
QUEUE_TIME_METRIC = {"Name": "QueueTime", "Unit": "Milliseconds"}

OUTCOMES = ("success", "failure", "dead_lettered", "released", "lost")
#: Characters of an error's text kept on a line (``Error``): enough for the cause, bounded so that one failing
#: handler cannot flood the logs (CloudWatch Logs takes 256 KiB per event).
ERROR_TEXT_LIMIT = 500

#: Outcome of a message released without running: its line publishes no ProcessingTime metric (it ran 0 ms).
UNRUN_OUTCOME = "released"


class EmfLogger:
    """Writes EMF lines to a stream (stdout by default), one ``write`` per line, thread-safe."""

    def __init__(self, stream: IO[str] | None = None, namespace: str = NAMESPACE) -> None:
        self.stream = stream or sys.stdout
        self.namespace = namespace
        self._lock = threading.Lock()

    def record(
        self,
        *,
        job_type: str,
        queue: str,
        message_id: str,
        processing_ms: float,
        outcome: str,
        receive_count: int,
        extensions: int,
        lease_lost: bool,
        timestamp_ms: int | None = None,
        error: BaseException | None = None,
        queue_ms: float | None = None,
    ) -> dict[str, Any]:
        """Log one processed message and return the line's object.

        :param queue_ms: how long the message waited before this run started, in milliseconds (from its
            ``SentTimestamp``; see :meth:`sqslease.message.Message.queue_time_ms`): the line gets ``QueueTime``
            and publishes it as a metric. Default: none (a message released unrun, or without a
            ``SentTimestamp``).

        :param error: what the handler raised, if anything: the line gets ``ErrorType`` (the exception's
            module-qualified class) and ``Error`` (its text, at most :data:`ERROR_TEXT_LIMIT` characters), which
            ``jobqueues dlq list`` shows beside a dead-lettered message. Default: none.
        """
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")
        metrics = _metrics(outcome, queue_ms is not None)
        line = {
            "_aws": {
                "Timestamp": timestamp_ms if timestamp_ms is not None else int(time.time() * 1000),
                "CloudWatchMetrics": [{"Namespace": self.namespace, "Dimensions": [["JobType"]], "Metrics": metrics}],
            },
            "SchemaVersion": SCHEMA_VERSION,
            "JobType": job_type,
            "Queue": queue,
            "MessageId": message_id,
            "ProcessingTime": round(processing_ms, 3),
            "Outcome": outcome,
            "ReceiveCount": receive_count,
            "Extensions": extensions,
            "LeaseLost": int(lease_lost),
        }
        if queue_ms is not None:
            line["QueueTime"] = round(queue_ms, 3)
        if error is not None:
            line["ErrorType"] = error_type(error)
            line["Error"] = error_text(error)
        text = json.dumps(line, separators=(",", ":")) + "\n"
        with self._lock:
            self.stream.write(text)
            self.stream.flush()
        return line


def error_type(error: BaseException) -> str:
    """``module.Class`` of ``error`` (``builtins.`` left out)."""
    kind = type(error)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def error_text(error: BaseException) -> str:
    """``str(error)`` on one line, cut to :data:`ERROR_TEXT_LIMIT` characters (an ellipsis marks the cut)."""
    text = " ".join(str(error).split()) or repr(error)
    return text if len(text) <= ERROR_TEXT_LIMIT else text[: ERROR_TEXT_LIMIT - 1] + "…"


def _metrics(outcome: str, queued: bool) -> list[dict[str, str]]:
    metrics = [m for m in METRICS if m["Name"] != "ProcessingTime"] if outcome == UNRUN_OUTCOME else list(METRICS)
    return [*metrics, QUEUE_TIME_METRIC] if queued else metrics
