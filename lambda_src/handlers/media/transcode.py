"""The ``Transcode`` ECS job's handler (``--handler media.transcode:handle``)."""

from __future__ import annotations

from typing import Any

from demo_job import run_job


def handle(body: str, message: Any) -> None:
    """Transcode a video (here: the demo job of ``body``); raising fails this message."""
    run_job("Transcode", body, message)
