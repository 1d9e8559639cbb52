"""The ``Thumbnails`` Lambda job's per-message handler (``SQSLEASE_HANDLER=thumbs.handle``).

The function's Lambda handler is ``sqslease.lambda_entry.handler`` (in the sqslease layer), which runs this
on each record of the batch with partial batch failures.
"""

from __future__ import annotations

import json
from typing import Any

from demo_job import run_job


def handle(body: str, message: Any) -> None:
    """Make a thumbnail (here: the demo job of ``body``); raising fails this record only."""
    run_job("Thumbnails", body, message)


def job_key(body: str, message: Any) -> str:
    """The idempotency key of a job (``idempotency_key="thumbs.job_key"``): its ``id``, the same in a producer's
    retry (a new MessageId)."""
    return str(json.loads(body)["id"])
