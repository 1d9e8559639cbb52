"""The fault fleet: worker processes behind a proxy that throttles, fails, delays, holds and drops SQS and DynamoDB
requests and loses deletes (a standard queue's at-least-once delivery), killed with kill -9 and SIGTERM at random,
on hundreds of jobs, many of them longer than the lease.

One run holds one queue per *lane*; a lane's workers run with idempotency on (a table on moto_server and
``SQSLEASE_IDEMPOTENCY_TABLE`` in their environment) or off. Every lane gets the same faults and the same kills.
Its verdicts come from the handlers' own records (:mod:`support.fleet_records`). Shared by
``tests/test_fault_injection.py`` and ``bench/fault_bench.py`` (the long, repeated runs).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from jobqueues.emulator.server import LocalServer
from sqslease.idempotency import create_table_request
from support.fault_proxy import FaultProxy
from support.fleet_faults import LaneRules, job_type
from support.fleet_records import (
    completions,
    explain,
    lapsed_records,
    overlapping,
    runs_of,
    unwritten_completions,
)
from support.moto_queues import counts, make_queue, send
from support.worker_processes import start_worker_process


@dataclass(frozen=True)
class FleetConfig:
    """One fault-injection run. Durations in seconds; ``jobs`` and ``workers`` per lane."""

    jobs: int = 120
    long_share: float = 0.25  # jobs longer than the lease
    short_s: tuple[float, float] = (0.05, 0.6)
    long_s: tuple[float, float] = (4.3, 5.5)
    workers: int = 3
    concurrency: int = 3
    fault_rate: float = 0.2  # SQS requests
    dynamodb_fault_rate: float = 0.2
    redeliver_rate: float = 0.0  # delete requests answered "deleted" without being applied
    idempotent: tuple[bool, ...] = (False,)  # one lane per entry
    kill_every_s: float = 3.0
    heartbeat: bool = True
    visibility_timeout: int = 4
    extension_threshold: float = 3  # 3 s of slack: room for retries on a loaded 2-core machine
    heartbeat_interval: float = 0.25
    request_timeout: float = 0.8
    max_receive_count: int = 20
    deadline_s: float = 45
    random_state: int = 1
    #: Each job runs until it has started twice (its lease lapsed and another handler took it), its duration at
    #: most (``sqs_handlers.fleet_job``): with the heartbeat off, its two runs overlap every time.
    until_rerun: bool = False

    def worker_args(self) -> list[str]:
        return [
            "--visibility-timeout", str(self.visibility_timeout),
            "--extension-threshold", str(self.extension_threshold),
            "--heartbeat-interval", str(self.heartbeat_interval),
            "--request-timeout", str(self.request_timeout),
            "--heartbeat", "true" if self.heartbeat else "false",
            "--wait-time", "2",
            "--shutdown-grace", "8",
            "--failure-policy", "visible_now",
        ]  # fmt: skip


@dataclass
class FleetReport:
    """One lane of a run. Requests are counted on the proxy: the lane's own SQS requests (by queue URL) and
    DynamoDB requests (by job-type prefix), faulted ones included."""

    idempotent: bool
    jobs: int
    ended: int
    lost: list[str]
    overlaps: list[str]
    duplicates: int  # runs beyond one per job
    completed_twice: list[str]
    rerun_after_kill: list[str]  # succeeded, killed -9 before its settle, ran to success again
    completion_unwritten: list[str]  # completed twice after its idempotency record could not be completed
    kills: int
    sigterms: int
    concurrency: int
    redelivered: int  # delete entries the proxy answered "deleted" without applying them: the message comes back
    source_left: tuple[int, int]
    dlq_left: tuple[int, int]
    requests: int  # SQS
    faults: int
    fault_kinds: dict[str, int] = field(default_factory=dict)
    dynamodb_requests: int = 0
    dynamodb_faults: int = 0
    dynamodb_fault_kinds: dict[str, int] = field(default_factory=dict)
    operations: dict[str, int] = field(default_factory=dict)  # SQS and DynamoDB requests by operation
    seconds: float = 0.0
    lease_problems: list[str] = field(default_factory=list)  # the workers' own log lines about lost leases
    details: list[str] = field(default_factory=list)  # per overlapping or twice-completed job: records, log lines
    records_lapsed: int = 0  # idempotency records the workers logged as not extended with their leases
    completions_not_written: int = 0  # successes whose idempotency record the workers logged as not completed

    @property
    def duplicate_budget(self) -> int:
        """Runs beyond one per job that kills explain (each killed worker leaves at most ``concurrency`` started
        jobs to run again), plus, without idempotency, one per message the proxy brought back after its delete."""
        return (self.kills + self.sigterms) * self.concurrency + (0 if self.idempotent else self.redelivered)

    def violations(self) -> list[str]:
        problems = []
        if self.lost or self.source_left != (0, 0) or self.dlq_left != (0, 0):
            problems.append(f"lost: {self.lost[:5]} (queue {self.source_left}, DLQ {self.dlq_left})")
        if self.overlaps:
            problems.append(
                f"{len(self.overlaps)} messages ran on two live handlers at once: {self.overlaps[:5]}; "
                f"workers logged: {self.lease_problems[:5]}\n" + "\n".join(self.details)
            )
        if self.duplicates > self.duplicate_budget:
            problems.append(f"{self.duplicates} duplicate runs > budget {self.duplicate_budget}")
        return problems

    def per_message(self) -> tuple[float, float]:
        """(SQS, DynamoDB) requests per job."""
        return self.requests / self.jobs, self.dynamodb_requests / self.jobs

    def summary(self) -> str:
        sqs, dynamodb = self.per_message()
        return (
            f"idempotency {'on ' if self.idempotent else 'off'}: {self.jobs} jobs, {self.ended} ended, "
            f"{len(self.lost)} lost, {len(self.overlaps)} on two live handlers, {len(self.completed_twice)} completed "
            f"twice, {len(self.rerun_after_kill)} re-run after a kill -9 before settle, "
            f"{len(self.completion_unwritten)} completed twice after a completion not written; "
            f"{self.records_lapsed} records not extended, {self.completions_not_written} completions not written; "
            f"{self.kills} kill -9 + "
            f"{self.sigterms} SIGTERM, {self.redelivered} deletes lost, {self.duplicates} duplicate "
            f"runs (budget {self.duplicate_budget}); SQS {self.faults}/{self.requests} faulted "
            f"({100 * self.faults / max(self.requests, 1):.1f} %) {self.fault_kinds}; DynamoDB "
            f"{self.dynamodb_faults}/{self.dynamodb_requests} faulted "
            f"({100 * self.dynamodb_faults / max(self.dynamodb_requests, 1):.1f} %) {self.dynamodb_fault_kinds}; "
            f"per job {sqs:.1f} SQS + {dynamodb:.1f} DynamoDB requests; {self.seconds:.0f} s"
        )


def run_fleet(server: LocalServer, config: FleetConfig) -> list[FleetReport]:
    """Run the fleet until every job ended and every queue is empty (or ``deadline_s``); one report per lane."""
    rng = random.Random(config.random_state)
    lanes = range(len(config.idempotent))
    queues = [make_queue(server, vt=30, max_receive_count=config.max_receive_count) for _ in lanes]
    table = f"fleet-{int(time.time() * 1000)}"
    if any(config.idempotent):
        server.client("dynamodb").create_table(**create_table_request(table))
    jobs = [
        {
            f"j{i}": rng.uniform(*config.long_s) if rng.random() < config.long_share else rng.uniform(*config.short_s)
            for i in range(config.jobs)
        }
        for _ in lanes
    ]
    for lane in lanes:
        bodies = [{"id": j, "seconds": round(s, 3), "until_rerun": config.until_rerun} for j, s in jobs[lane].items()]
        send(server, queues[lane].url, [json.dumps(body) for body in bodies])
    rules = LaneRules(config, queues)
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory() as tmp,
        FaultProxy(server.endpoint, rules.sqs_rule, dynamodb_rule=rules.dynamodb_rule) as proxy,
    ):
        events = [Path(tmp) / f"events-{lane}" for lane in lanes]
        death: dict[int, float] = {}  # pid -> when it died (kill -9) or was seen gone
        killed: set[int] = set()  # pids killed with kill -9
        kills, sigterms = [0 for _ in lanes], [0 for _ in lanes]
        logs: dict[int, Path] = {}  # pid -> that worker's log
        lane_of_pid: dict[int, int] = {}

        def launch(lane: int) -> subprocess.Popen[bytes]:
            log = Path(tmp) / f"worker-{len(logs)}.log"
            idempotency = {"SQSLEASE_IDEMPOTENCY_TABLE": table} if config.idempotent[lane] else {}
            process = start_worker_process(
                server,
                queues[lane].url,
                events[lane],
                quiet=True,
                endpoint=proxy.endpoint,
                handler="sqs_handlers:fleet_job",
                concurrency=config.concurrency,
                args=config.worker_args(),
                log=log,
                SQSLEASE_HEARTBEAT_INTERVAL=str(config.heartbeat_interval),
                SQSLEASE_JOB_TYPE=job_type(lane),
                SQSLEASE_HOOKS="sqs_handlers:FleetSettled",
                **idempotency,
            )
            logs[process.pid] = log
            lane_of_pid[process.pid] = lane
            return process

        fleet = [launch(lane) for lane in lanes for _ in range(config.workers)]
        stopping: list[subprocess.Popen[bytes]] = []
        next_kill = time.monotonic() + config.kill_every_s
        while time.monotonic() - started < config.deadline_s:
            time.sleep(0.2)
            for process in stopping[:]:
                if process.poll() is not None:
                    death.setdefault(process.pid, time.monotonic())
                    stopping.remove(process)
            if all(_all_ended(events[lane], jobs[lane]) for lane in lanes) and all(
                counts(server, q.url) == (0, 0) for q in queues
            ):
                break
            if time.monotonic() >= next_kill:
                next_kill = time.monotonic() + config.kill_every_s
                victim = fleet.pop(rng.randrange(len(fleet)))
                lane = lane_of_pid[victim.pid]
                if rng.random() < 0.5:
                    death[victim.pid] = time.monotonic()
                    killed.add(victim.pid)
                    victim.kill()
                    victim.wait()
                    kills[lane] += 1
                else:
                    victim.send_signal(signal.SIGTERM)
                    stopping.append(victim)
                    sigterms[lane] += 1
                fleet.append(launch(lane))
        for process in fleet + stopping:
            process.send_signal(signal.SIGTERM)
        for process in fleet + stopping:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            death.setdefault(process.pid, time.monotonic())
        lines = [path.read_text().splitlines() if path.exists() else [] for path in events]
        worker_logs = {pid: path.read_text().splitlines() for pid, path in logs.items() if path.exists()}
    seconds = time.monotonic() - started
    reports = []
    for lane in lanes:
        lane_logs = {pid: log for pid, log in worker_logs.items() if lane_of_pid[pid] == lane}
        runs = runs_of(lines[lane], death)
        ended = {job for job, job_runs in runs.items() if any(run.ended for run in job_runs)}
        overlaps = overlapping(runs)
        unwritten = unwritten_completions([line for log in lane_logs.values() for line in log])
        lapsed = sum(len(lapsed_records(log)) for log in lane_logs.values())
        twice, after_kill, not_completed = completions(runs, killed, unwritten).all
        details = [explain(job, lines[lane], death, lane_logs, started) for job in (overlaps + twice)[:3]]
        sqs, dynamodb = _by(rules.sqs[lane], 1), _by(rules.dynamodb[lane], 1)
        reports.append(
            FleetReport(
                idempotent=config.idempotent[lane],
                jobs=len(jobs[lane]),
                ended=len(ended),
                lost=sorted(set(jobs[lane]) - ended),
                overlaps=overlaps,
                duplicates=sum(len(r) for r in runs.values()) - len(runs),
                completed_twice=twice,
                rerun_after_kill=after_kill,
                completion_unwritten=not_completed,
                kills=kills[lane],
                sigterms=sigterms[lane],
                concurrency=config.concurrency,
                redelivered=rules.redelivered[lane],
                source_left=counts(server, queues[lane].url),
                dlq_left=counts(server, queues[lane].dlq_url or ""),
                requests=sum(sqs.values()),
                faults=sum(n for kind, n in sqs.items() if kind != "ok"),
                fault_kinds={k: n for k, n in sorted(sqs.items()) if k != "ok"},
                dynamodb_requests=sum(dynamodb.values()),
                dynamodb_faults=sum(n for kind, n in dynamodb.items() if kind != "ok"),
                dynamodb_fault_kinds={k: n for k, n in sorted(dynamodb.items()) if k != "ok"},
                operations=dict(sorted((_by(rules.sqs[lane], 0) + _by(rules.dynamodb[lane], 0)).items())),
                seconds=seconds,
                lease_problems=[line for log in lane_logs.values() for line in log if _lease_problem(line)],
                details=details,
                records_lapsed=lapsed,
                completions_not_written=len(unwritten),
            )
        )
    return reports


def _by(counts: Counter[tuple[str, str]], part: int) -> Counter[str]:
    """Requests by operation (``part`` 0) or by fault kind (1)."""
    out: Counter[str] = Counter()
    for key, n in counts.items():
        out[key[part]] += n
    return out


def _lease_problem(line: str) -> bool:
    return "ran out" in line or "CRITICAL" in line


def _all_ended(events: Path, jobs: dict[str, float]) -> bool:
    if not events.exists():
        return False
    ended = {line.split()[1] for line in events.read_text().splitlines() if line.startswith("end ")}
    return ended >= set(jobs)
