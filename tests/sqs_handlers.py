"""Handlers that worker subprocesses import in tests (``python -m sqslease.worker --handler sqs_handlers:...``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from sqslease.message import Message


def _log(event: str, message: Message) -> None:
    path = os.environ.get("TEST_EVENTS_FILE")
    if path:
        with Path(path).open("a") as f:
            f.write(f"{event} {message.body} {message.receive_count} {time.monotonic():.3f}\n")


def slow_job(body: str, message: Message) -> None:
    """Sleeps ``SLOW_JOB_SECONDS`` (default 5), recording start and end."""
    _log("start", message)
    time.sleep(float(os.environ.get("SLOW_JOB_SECONDS", "5")))
    _log("end", message)
