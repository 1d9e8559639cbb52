"""The fault fleet's verdicts, from the handlers' own records (``tests/sqs_handlers.py``: ``fleet_job`` and
``FleetSettled``), one monotonic clock for all processes. Pure functions of the record lines and process deaths.

A *run* is one handler call on one job: from its ``start`` record to its ``end`` record (the handler returned
success: its effect is committed), or to its process's death. It is *settled* when the worker recorded it done
afterwards (a ``settled`` record of the same job and process: the idempotency record completed, when on, and the
delete sent).

A job is *completed twice* when its handler returned success in two runs and the earlier one was settled, or its
process was not killed with kill -9: the worker had finished with a success and the job ran to success again. A job
whose earlier successful run was killed with kill -9 before its settle is *re-run after a kill*, not completed twice:
like a handler killed mid-job, it ran again because its completion was never recorded. A job completed twice after
its worker logged that it could not complete the earlier run's idempotency record (DynamoDB failing for the whole
slack), and whose delete was then lost too, is counted apart as well: that is the documented limit of idempotency.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from dataclasses import dataclass

UNWRITTEN = re.compile(r"message (\S+): its idempotency record could not be completed")
NOT_EXTENDED = re.compile(r"idempotency records not extended \(([^)]*)\)")


@dataclass(frozen=True)
class Run:
    start: float
    end: float  # its end record, or its process's death (inf: not seen dead)
    ended: bool  # the handler returned success
    pid: int
    settled: bool = False
    message_id: str = ""


def runs_of(lines: list[str], death: dict[int, float]) -> dict[str, list[Run]]:
    """job -> its runs: a run without an end record lasted until its process died."""
    open_runs: dict[tuple[str, int], list[float]] = defaultdict(list)  # one process can run a job twice at once
    settles: dict[tuple[str, int], list[float]] = defaultdict(list)
    ends: list[tuple[str, float, float, int, str]] = []
    for line in lines:
        kind, job, pid_text, at_text, *rest = line.split()
        pid, at = int(pid_text), float(at_text)
        if kind == "start":
            open_runs[(job, pid)].append(at)
        elif kind == "end":
            ends.append((job, open_runs[(job, pid)].pop(0), at, pid, rest[2] if len(rest) > 2 else ""))
        else:
            settles[(job, pid)].append(at)
    runs: dict[str, list[Run]] = defaultdict(list)
    for job, start, end, pid, message_id in ends:
        runs[job].append(Run(start, end, True, pid, any(at >= end for at in settles[(job, pid)]), message_id))
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


@dataclass(frozen=True)
class Completions:
    twice: list[str]  # jobs completed twice
    after_kill: list[str]  # re-run after a kill -9 between their handler's success and its settle
    unwritten: list[str]  # completed twice after their idempotency record could not be completed

    @property
    def all(self) -> tuple[list[str], list[str], list[str]]:
        return self.twice, self.after_kill, self.unwritten


def completions(runs: dict[str, list[Run]], killed: set[int], unwritten: frozenset[str] = frozenset()) -> Completions:
    """Jobs whose handler succeeded more than once, by why; ``unwritten``: message ids whose worker logged that
    their idempotency record could not be completed."""
    out = Completions([], [], [])
    for job, job_runs in sorted(runs.items()):
        ended = sorted((r for r in job_runs if r.ended), key=lambda r: r.end)
        if len(ended) < 2:
            continue
        recorded = [r for r in ended[:-1] if r.settled or r.pid not in killed]
        if not recorded:
            out.after_kill.append(job)
        elif all(r.message_id in unwritten for r in recorded):
            out.unwritten.append(job)
        else:
            out.twice.append(job)
    return out


def unwritten_completions(log_lines: list[str]) -> frozenset[str]:
    """Message ids of the worker log lines saying an idempotency record could not be completed."""
    found = (UNWRITTEN.search(line) for line in log_lines)
    return frozenset(match.group(1) for match in found if match)


def explain(
    job: str, lines: list[str], death: dict[int, float], worker_logs: dict[int, list[str]], started: float
) -> str:
    """One job: its start/end records (times from the fleet's start), when each process died, and every worker log
    line that names one of its receipt handles or message ids."""
    records = [fields for fields in (line.split() for line in lines) if fields[1] == job]
    names = {name for fields in records for name in fields[4:5] + fields[6:7]}  # receipt handles, message ids
    pids = {int(fields[2]) for fields in records}
    out = [f"{job}:"]
    for fields in records:
        kind, _, pid, at, *rest = fields
        lease = f", {rest[0]}, lease slack {rest[1]} s, message {rest[2]}" if rest else ""
        out.append(f"  {kind} pid {pid} at {float(at) - started:.3f} s{lease}")
    out += [f"  pid {pid} died at {death[pid] - started:.3f} s" for pid in sorted(pids) if pid in death]
    out += [f"  [{pid}] {line}" for pid, log in worker_logs.items() for line in log if any(n in line for n in names)]
    return "\n".join(out)


def lapsed_records(log_lines: list[str]) -> frozenset[str]:
    """Keys (``pk``) of the idempotency records one worker's log says were not extended with their leases: each
    lapsed while its handler ran. A line names at most 10; the fleet's holds per worker are
    fewer (its concurrency)."""
    found = (NOT_EXTENDED.search(line) for line in log_lines)
    names = (name.removesuffix("...") for match in found if match for name in match.group(1).split(", "))
    return frozenset(name for name in names if name)  # "Fleet0#j5..." or ", ...": an older runtime's line, or more
