"""Fault injection: worker processes behind a proxy that throttles, fails, delays and holds SQS requests, killed
with kill -9 and SIGTERM at random, on hundreds of jobs, many of them longer than the lease.

Invariants checked from the handlers' own start/end records (one monotonic clock for all processes):

- no message lost: every job ended at least once, and the queue and its DLQ end empty;
- no message ran on two live handlers at once (a handler is live from its start to its end, or to its
  process's death: the kill -9, or the exit observed);
- duplicate runs stay within kills x concurrency (each killed worker can leave at most ``concurrency``
  started jobs to run again).

``run_fleet`` is shared with ``bench/fault_bench.py`` (the long run). The heartbeat-off control must fail it.
"""

from __future__ import annotations

import itertools
import json
import random
import signal
import subprocess
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support.fault_proxy import FaultProxy, random_faults
from support.moto_queues import counts, make_queue, send
from support.worker_processes import start_worker_process

from local_emulator.server import LocalServer

pytestmark = pytest.mark.heavy  # a minute-long end-to-end run: scheduled first (tests/conftest.py)


@dataclass(frozen=True)
class FleetConfig:
    """One fault-injection run. Durations in seconds."""

    jobs: int = 120
    long_share: float = 0.25  # jobs longer than the lease
    short_s: tuple[float, float] = (0.05, 0.6)
    long_s: tuple[float, float] = (4.3, 5.5)
    workers: int = 3
    concurrency: int = 3
    fault_rate: float = 0.2
    kill_every_s: float = 3.0
    heartbeat: bool = True
    visibility_timeout: int = 4
    extension_threshold: float = 3  # 3 s of slack: room for retries on a loaded 2-core machine
    heartbeat_interval: float = 0.25
    request_timeout: float = 0.8
    max_receive_count: int = 20
    deadline_s: float = 45
    random_state: int = 1

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
    jobs: int
    ended: int
    lost: list[str]
    overlaps: list[str]
    duplicates: int
    kills: int
    sigterms: int
    concurrency: int
    source_left: tuple[int, int]
    dlq_left: tuple[int, int]
    requests: int
    faults: int
    fault_kinds: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    lease_problems: list[str] = field(default_factory=list)  # the workers' own log lines about lost leases
    details: list[str] = field(default_factory=list)  # per overlapping job: its records and workers' log lines

    @property
    def duplicate_budget(self) -> int:
        return (self.kills + self.sigterms) * self.concurrency

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
            problems.append(f"{self.duplicates} duplicate runs > kills x concurrency = {self.duplicate_budget}")
        return problems

    def summary(self) -> str:
        return (
            f"{self.jobs} jobs, {self.ended} ended, {self.kills} kill -9 + {self.sigterms} SIGTERM, "
            f"{self.duplicates} duplicate runs (budget {self.duplicate_budget}), {len(self.overlaps)} overlaps, "
            f"{len(self.lost)} lost, {self.faults}/{self.requests} requests faulted "
            f"({100 * self.faults / max(self.requests, 1):.1f} %) {self.fault_kinds}, {self.seconds:.0f} s"
        )


def run_fleet(server: LocalServer, config: FleetConfig) -> FleetReport:
    """Run the fleet until every job ended and the queue is empty (or ``deadline_s``), then check it."""
    rng = random.Random(config.random_state)
    queues = make_queue(server, vt=30, max_receive_count=config.max_receive_count)
    jobs = {
        f"j{i}": rng.uniform(*config.long_s) if rng.random() < config.long_share else rng.uniform(*config.short_s)
        for i in range(config.jobs)
    }
    send(server, queues.url, [json.dumps({"id": job, "seconds": round(s, 3)}) for job, s in jobs.items()])
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory() as tmp,
        FaultProxy(server.endpoint, random_faults(config.fault_rate, config.random_state)) as proxy,
    ):
        events = Path(tmp) / "events"
        death: dict[int, float] = {}  # pid -> when it died (kill -9) or was seen gone
        kills = sigterms = 0

        logs: dict[int, Path] = {}  # pid -> that worker's log

        def launch() -> subprocess.Popen[bytes]:
            log = Path(tmp) / f"worker-{len(logs)}.log"
            process = start_worker_process(
                server,
                queues.url,
                events,
                quiet=True,
                endpoint=proxy.endpoint,
                handler="sqs_handlers:fleet_job",
                concurrency=config.concurrency,
                args=config.worker_args(),
                log=log,
                SQSLEASE_HEARTBEAT_INTERVAL=str(config.heartbeat_interval),
            )
            logs[process.pid] = log
            return process

        fleet = [launch() for _ in range(config.workers)]
        stopping: list[subprocess.Popen[bytes]] = []
        next_kill = time.monotonic() + config.kill_every_s
        while time.monotonic() - started < config.deadline_s:
            time.sleep(0.2)
            for process in stopping[:]:
                if process.poll() is not None:
                    death.setdefault(process.pid, time.monotonic())
                    stopping.remove(process)
            if _all_ended(events, jobs) and counts(server, queues.url) == (0, 0):
                break
            if time.monotonic() >= next_kill:
                next_kill = time.monotonic() + config.kill_every_s
                victim = fleet.pop(rng.randrange(len(fleet)))
                if rng.random() < 0.5:
                    death[victim.pid] = time.monotonic()
                    victim.kill()
                    victim.wait()
                    kills += 1
                else:
                    victim.send_signal(signal.SIGTERM)
                    stopping.append(victim)
                    sigterms += 1
                fleet.append(launch())
        for process in fleet + stopping:
            process.send_signal(signal.SIGTERM)
        for process in fleet + stopping:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            death.setdefault(process.pid, time.monotonic())
        lines = events.read_text().splitlines() if events.exists() else []
        worker_logs = {pid: path.read_text().splitlines() for pid, path in logs.items() if path.exists()}
        lease_problems = [
            line for log in worker_logs.values() for line in log if "ran out" in line or "CRITICAL" in line
        ]
        report_counts = dict(proxy.counts)
    runs = _runs(lines, death)
    ended = {job for job, pid_runs in runs.items() for run in pid_runs if run[2]}
    overlaps = []
    for job, job_runs in runs.items():
        ordered = sorted(job_runs)
        if any(later[0] < earlier[1] for earlier, later in itertools.pairwise(ordered)):
            overlaps.append(job)
    details = [_explain(job, lines, death, worker_logs, started) for job in sorted(overlaps)[:3]]
    kinds: dict[str, int] = defaultdict(int)
    for (_, kind), n in report_counts.items():
        kinds[kind] += n
    return FleetReport(
        jobs=len(jobs),
        ended=len(ended),
        lost=sorted(set(jobs) - ended),
        overlaps=sorted(overlaps),
        duplicates=sum(len(r) for r in runs.values()) - len(runs),
        kills=kills,
        sigterms=sigterms,
        concurrency=config.concurrency,
        source_left=counts(server, queues.url),
        dlq_left=counts(server, queues.dlq_url or ""),
        requests=sum(kinds.values()),
        faults=sum(n for kind, n in kinds.items() if kind != "ok"),
        fault_kinds={k: n for k, n in sorted(kinds.items()) if k != "ok"},
        seconds=time.monotonic() - started,
        lease_problems=lease_problems,
        details=details,
    )


def _all_ended(events: Path, jobs: dict[str, float]) -> bool:
    if not events.exists():
        return False
    ended = {line.split()[1] for line in events.read_text().splitlines() if line.startswith("end ")}
    return ended >= set(jobs)


def _explain(
    job: str, lines: list[str], death: dict[int, float], worker_logs: dict[int, list[str]], started: float
) -> str:
    """One overlapping job: its start/end records (times from the fleet's start), when each process died, and
    every worker log line that names one of its receipt handles."""
    records = [line.split() for line in lines if line.split()[1] == job]
    handles = {record[4] for record in records}
    pids = {int(record[2]) for record in records}
    out = [f"{job}:"]
    out += [f"  {kind} pid {pid} at {float(at) - started:.3f} s, {handle}, lease slack {slack} s"
            for kind, _, pid, at, handle, slack in records]  # fmt: skip
    out += [f"  pid {pid} died at {death[pid] - started:.3f} s" for pid in sorted(pids) if pid in death]
    out += [f"  [{pid}] {line}" for pid, log in worker_logs.items() for line in log if any(h in line for h in handles)]
    return "\n".join(out)


def _runs(lines: list[str], death: dict[int, float]) -> dict[str, list[tuple[float, float, bool]]]:
    """job -> [(start, end, ended normally)]: a run without an end record lasted until its process died."""
    open_runs: dict[tuple[str, int], list[float]] = defaultdict(list)  # one process can run a job twice at once
    runs: dict[str, list[tuple[float, float, bool]]] = defaultdict(list)
    for line in lines:
        kind, job, pid_text, at_text = line.split()[:4]
        pid, at = int(pid_text), float(at_text)
        if kind == "start":
            open_runs[(job, pid)].append(at)
        else:
            runs[job].append((open_runs[(job, pid)].pop(0), at, True))
    for (job, pid), starts in open_runs.items():
        runs[job] += [(start, death.get(pid, float("inf")), False) for start in starts]
    return runs


def test_fault_injection_fleet_keeps_every_lease(local_aws: LocalServer) -> None:
    report = run_fleet(local_aws, FleetConfig())
    print(report.summary())
    assert report.violations() == [], report.summary()
    assert report.kills + report.sigterms >= 4, report.summary()  # the faults really happened
    assert report.faults / report.requests > 0.1, report.summary()  # 20 % asked; > 4 sigma below it
    assert report.ended == report.jobs


def test_heartbeat_off_control_fails_the_same_checks(local_aws: LocalServer) -> None:
    # The control: the same fleet and faults without the heartbeat, and free handlers to pick up what lapses.
    config = FleetConfig(
        jobs=6, long_share=1.0, workers=2, concurrency=6, kill_every_s=1_000, heartbeat=False, deadline_s=12
    )
    report = run_fleet(local_aws, config)
    print(report.summary())
    assert report.overlaps, report.summary()
    assert any("two live handlers" in problem for problem in report.violations())
