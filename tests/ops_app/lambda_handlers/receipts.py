"""The Receipts function.s handler (Lambda): sleeps ``work_s``, raises ``RuntimeError(fail)`` when ``fail`` is set;
prints ``receipts env NAME=value`` for each name of ``echo_env`` (what ``jobqueues local up`` gave it)."""

import json
import os
import sys
import time


def handle(body: str, message: object) -> None:
    job = json.loads(body)
    for name in job.get("echo_env", []):
        sys.stdout.write(f"receipts env {name}={os.environ.get(name, '<unset>')}\n")  # one write: lines whole
    time.sleep(float(job.get("work_s", 0)))
    if job.get("fail"):
        raise RuntimeError(str(job["fail"]))
