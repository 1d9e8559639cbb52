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

OUTCOMES = ("success", "failure", "dead_lettered", "released", "lost")
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
    ) -> dict[str, Any]:
        """Log one processed message and return the line's object."""
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")
        line = {
            "_aws": {
                "Timestamp": timestamp_ms if timestamp_ms is not None else int(time.time() * 1000),
                "CloudWatchMetrics": [
                    {"Namespace": self.namespace, "Dimensions": [["JobType"]], "Metrics": _metrics(outcome)}
                ],
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
        text = json.dumps(line, separators=(",", ":")) + "\n"
        with self._lock:
            self.stream.write(text)
            self.stream.flush()
        return line


def _metrics(outcome: str) -> list[dict[str, str]]:
    if outcome == UNRUN_OUTCOME:
        return [m for m in METRICS if m["Name"] != "ProcessingTime"]
    return list(METRICS)
