"""The fault fleet's verdicts, from the handlers' own records (``tests/sqs_handlers.py``: ``fleet_job`` and
``FleetSettled``), one monotonic clock for all processes. Pure functions of the record lines and process deaths.

A *run* is one handler call on one job: from its ``start`` record to its ``end`` record (the handler returned
success: its effect is committed), or to its process's death. It is *settled* when the worker recorded it done
afterwards (a ``settled`` record of the same job and process: the idempotency record completed, when on, and the
delete sent).

A job is *completed twice* when its handler returned success in two runs and the earlier one was settled, or its
process was not killed with kill -9: the worker had finished with a success and the job ran to success again. A job
whose earlier successful run was killed with kill -9 before its settle is *re-run after a kill*, not completed twice:
like a handler killed mid-job, it ran again because its completion was never recorded.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass


@dataclass(frozen=True)
class Run:
    start: float
    end: float  # its end record, or its process's death (inf: not seen dead)
    ended: bool  # the handler returned success
    pid: int
    settled: bool = False


def runs_of(lines: list[str], death: dict[int, float]) -> dict[str, list[Run]]:
    """job -> its runs: a run without an end record lasted until its process died."""
    open_runs: dict[tuple[str, int], list[float]] = defaultdict(list)  # one process can run a job twice at once
    settles: dict[tuple[str, int], list[float]] = defaultdict(list)
    ends: list[tuple[str, float, float, int]] = []
    for line in lines:
        kind, job, pid_text, at_text = line.split()[:4]
        pid, at = int(pid_text), float(at_text)
        if kind == "start":
            open_runs[(job, pid)].append(at)
        elif kind == "end":
            ends.append((job, open_runs[(job, pid)].pop(0), at, pid))
        else:
            settles[(job, pid)].append(at)
    runs: dict[str, list[Run]] = defaultdict(list)
    for job, start, end, pid in ends:
        runs[job].append(Run(start, end, True, pid, any(at >= end for at in settles[(job, pid)])))
    for (job, pid), starts in open_runs.items():
        runs[job] += [Run(start, death.get(pid, float("inf")), False, pid) for start in starts]
    return runs


def overlapping(runs: dict[str, list[Run]]) -> list[str]:
    """Jobs that ran on two live handlers at once."""
    return sorted(
        job
        for job, job_runs in runs.items()
        if any(b.start < a.end for a, b in itertools.pairwise(sorted(job_runs, key=lambda r: (r.start, r.end))))
    )


def completions(runs: dict[str, list[Run]], killed: set[int]) -> tuple[list[str], list[str]]:
    """(jobs completed twice, jobs re-run after a kill -9 between their handler's success and its settle)."""
    twice, after_kill = [], []
    for job, job_runs in sorted(runs.items()):
        ended = sorted((r for r in job_runs if r.ended), key=lambda r: r.end)
        if len(ended) < 2:
            continue
        if any(r.settled or r.pid not in killed for r in ended[:-1]):
            twice.append(job)
        else:
            after_kill.append(job)
    return twice, after_kill


def explain(
    job: str, lines: list[str], death: dict[int, float], worker_logs: dict[int, list[str]], started: float
) -> str:
    """One job: its start/end records (times from the fleet's start), when each process died, and every worker log
    line that names one of its receipt handles."""
    records = [fields for fields in (line.split() for line in lines) if fields[1] == job]
    handles = {fields[4] for fields in records if len(fields) > 4}
    pids = {int(fields[2]) for fields in records}
    out = [f"{job}:"]
    for fields in records:
        kind, _, pid, at, *rest = fields
        lease = f", {rest[0]}, lease slack {rest[1]} s" if rest else ""
        out.append(f"  {kind} pid {pid} at {float(at) - started:.3f} s{lease}")
    out += [f"  pid {pid} died at {death[pid] - started:.3f} s" for pid in sorted(pids) if pid in death]
    out += [f"  [{pid}] {line}" for pid, log in worker_logs.items() for line in log if any(h in line for h in handles)]
    return "\n".join(out)
