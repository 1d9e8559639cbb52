"""The demo's job body and ledger, shared by the example handlers (``thumbs``, ``media.transcode``).

A job body is JSON: ``{"id": "...", "work_s": 2.5, "fail": false}``. The handler sleeps ``work_s`` seconds and
raises when ``fail`` is true (``"fail": 1`` fails only the first delivery, ``"fail": true`` every one).

Every run is recorded in the file named by ``JOBQUEUES_DEMO_LEDGER`` (when set), one JSON line per event
(``start``, ``end``, ``fail``) with the job id, SQS message id, receive count, process id and wall-clock time,
so that the demo can count processed jobs, duplicates and runs that overlapped, across processes.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

LEDGER_ENV = "JOBQUEUES_DEMO_LEDGER"


class DemoJobFailed(RuntimeError):
    """The job body asked to fail (a poison message, or a first delivery that fails)."""


def run_job(job_type: str, body: str, message: Any) -> None:
    """Run one demo job: record its start, sleep, fail if asked, record its end."""
    job = json.loads(body)
    receive_count = int(getattr(message, "receive_count", 1))
    record(job_type, "start", job["id"], message, receive_count)
    time.sleep(float(job.get("work_s", 0)))
    fail = job.get("fail", False)
    # true: every delivery fails (poison); an int n: the first n deliveries fail.
    if fail is True or (type(fail) is int and receive_count <= fail):
        record(job_type, "fail", job["id"], message, receive_count)
        raise DemoJobFailed(f"job {job['id']} failed on delivery {receive_count} (as its body asks)")
    record(job_type, "end", job["id"], message, receive_count)


def record(job_type: str, event: str, job_id: str, message: Any, receive_count: int) -> None:
    """Append one ledger line; a no-op when ``JOBQUEUES_DEMO_LEDGER`` is unset."""
    path = os.environ.get(LEDGER_ENV)
    if not path:
        return
    line = {
        "event": event,
        "job_type": job_type,
        "id": job_id,
        "message_id": getattr(message, "message_id", None),
        "receive_count": receive_count,
        "pid": os.getpid(),
        "t": time.time(),
    }
    # One write(2) of a short line on an O_APPEND descriptor is atomic across processes: lines never interleave.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line, separators=(",", ":")) + "\n").encode())
    finally:
        os.close(fd)
