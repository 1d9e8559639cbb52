"""The Receipts function.s handler (Lambda): sleeps ``work_s``, raises ``RuntimeError(fail)`` when ``fail`` is set."""

import json
import time


def handle(body: str, message: object) -> None:
    job = json.loads(body)
    time.sleep(float(job.get("work_s", 0)))
    if job.get("fail"):
        raise RuntimeError(str(job["fail"]))
