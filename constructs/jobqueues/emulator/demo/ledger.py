"""The ledger the demo's handlers write (``lambda_src/handlers/demo_job.py``): one line per run start and end."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

#: The variable that tells the handlers where the ledger is.
LEDGER_ENV = "JOBQUEUES_DEMO_LEDGER"


@dataclass
class Run:
    """One run of a job's handler (one delivery) in one process."""

    job_type: str
    job_id: str
    pid: int
    receive_count: int
    start: float
    end: float | None = None
    outcome: str = "running"  # running, success, failure, killed
    message_id: str = ""


def read_runs(ledger: Path) -> list[Run]:
    """The runs the handlers recorded; a run whose process the demo killed ends at the kill."""
    runs: list[Run] = []
    open_runs: dict[tuple[str, str, int], Run] = {}
    kills: dict[int, float] = {}
    lines = ledger.read_text().splitlines() if ledger.exists() else []
    for line in lines:
        event = json.loads(line)
        if event["event"] == "killed":
            kills[event["pid"]] = event["t"]
            continue
        key = (event["job_type"], event["id"], event["pid"])
        if event["event"] == "start":
            run = Run(event["job_type"], event["id"], event["pid"], event["receive_count"], event["t"])
            run.message_id = event.get("message_id") or ""  # the SQS MessageId, for the EMF lines of the job
            open_runs[key] = run
            runs.append(run)
        elif key in open_runs:
            run = open_runs.pop(key)
            run.end, run.outcome = event["t"], "success" if event["event"] == "end" else "failure"
    for run in open_runs.values():
        if run.pid in kills:
            run.end, run.outcome = kills[run.pid], "killed"
    return runs


def record_kill(ledger: Path, pid: int) -> None:
    with ledger.open("a") as f:
        f.write(json.dumps({"event": "killed", "pid": pid, "t": time.time()}) + "\n")


def concurrent_runs(runs: list[Run]) -> int:
    """Pairs of runs of the same job that overlapped in time (a lease that failed to keep a job private)."""
    overlaps = 0
    by_job: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        by_job.setdefault((run.job_type, run.job_id), []).append(run)
    for job_runs in by_job.values():
        ordered = sorted(job_runs, key=lambda r: r.start)
        for i, first in enumerate(ordered):
            for second in ordered[i + 1 :]:
                if second.start < (first.end if first.end is not None else float("inf")):
                    overlaps += 1
    return overlaps
