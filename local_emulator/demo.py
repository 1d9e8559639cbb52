"""The end-to-end demo ``make local`` runs after the deploy: the deployed consumers at work, measured.

    python -m local_emulator.demo --endpoint http://localhost:PORT [--stack JobQueuesExample] [--logs DIR]

Against a running emulator holding the deployed example app, and everything read from what was deployed:

1. sends jobs to every job type of the stack;
2. runs each ECS job's worker as local processes with the deployed task definition's command (the
   template's container command, its ``Ref`` s resolved to the deployed queue URLs);
3. runs each Lambda job's handler through :mod:`local_emulator.lambda_driver` (the deployed code and layer,
   environment, batch size and batching window);
4. shows a job outliving its visibility timeout finishing once thanks to lease extensions, a poison message
   reaching the DLQ after ``maxReceiveCount``, a worker killed with kill -9 and its message processed again
   within one lease, and a SIGTERM drain;
5. writes the consumers' EMF lines under ``--logs`` and runs ``python -m jobstats profile`` on them: measured
   p99 next to the declared timeouts and the deployed visibility timeout;
6. ends with a summary table. Exit status 0 when nothing was lost, nothing ran twice at once, and the poison
   message is in the DLQ.

:func:`run_demo` is the same as a function (the deploy CLI and the end-to-end test call it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from local_emulator.deployed import DeployedError, DeployedStack, Emulator
from local_emulator.lambda_driver import (
    DeployedFunction,
    Invocation,
    LambdaDriver,
    LocalRuntime,
    function_logical_ids,
    load_function,
)
from sqslease.rules import visibility_timeout_for_p99
from sqslease.settings import LeaseSettings

PROJECT_DIR = Path(__file__).resolve().parent.parent
HANDLERS_DIR = PROJECT_DIR / "lambda_src" / "handlers"
LEDGER_ENV = "JOBQUEUES_DEMO_LEDGER"  # read by lambda_src/handlers/demo_job.py
DEFAULT_STACK = "JobQueuesExample"
WORKERS = 2

Print = Callable[[str], None]


class DemoError(RuntimeError):
    """A step of the demo did not happen within its time limit (the message says which)."""


# -- what the stack deployed ---------------------------------------------------------------------------
@dataclass(frozen=True)
class QueueJob:
    """A job type: its queue, DLQ and redrive settings, as deployed."""

    job_type: str
    url: str
    dlq_url: str | None
    visibility_timeout_s: int
    max_receive_count: int | None
    fifo: bool
    declared_p99_s: float | None


@dataclass(frozen=True)
class EcsJob:
    """A deployed ECS job: the worker command of its task definition, resolved."""

    job_type: str
    task_definition: str
    command: list[str]
    environment: dict[str, str]
    unresolved: tuple[str, ...] = ()  # container variables whose values cannot be computed locally

    def option(self, name: str) -> str | None:
        """The value of ``--name`` in the command, if given."""
        flag = "--" + name
        return self.command[self.command.index(flag) + 1] if flag in self.command[:-1] else None


def discover_queues(emulator: Emulator, stack: DeployedStack) -> dict[str, QueueJob]:
    """Every source queue of the stack (one with a redrive policy, or not itself a DLQ), by job type."""
    sqs = emulator.client("sqs")
    queues = stack.resources("AWS::SQS::Queue")
    dlq_ids = {
        stack.resolve(q["Properties"]["RedrivePolicy"]["deadLetterTargetArn"])
        for q in queues.values()
        if "RedrivePolicy" in q.get("Properties", {})
    }
    jobs = {}
    for logical_id, resource in queues.items():
        url = stack.physical_id(logical_id)
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        if attributes["QueueArn"] in dlq_ids:
            continue
        name = url.rsplit("/", 1)[-1]
        job_type = name.removeprefix(f"{stack.name}-").removesuffix(".fifo")
        redrive = json.loads(attributes["RedrivePolicy"]) if "RedrivePolicy" in attributes else None
        dlq_url = None
        if redrive:
            dlq_name = redrive["deadLetterTargetArn"].rsplit(":", 1)[-1]
            dlq_url = sqs.get_queue_url(QueueName=dlq_name)["QueueUrl"]
        metadata = resource.get("Metadata", {})
        p99 = metadata.get("jobqueues:processing_p99_s")
        jobs[job_type] = QueueJob(
            job_type=job_type,
            url=url,
            dlq_url=dlq_url,
            visibility_timeout_s=int(attributes["VisibilityTimeout"]),
            max_receive_count=int(redrive["maxReceiveCount"]) if redrive else None,
            fifo=attributes.get("FifoQueue") == "true",
            declared_p99_s=float(p99) if p99 is not None else None,
        )
    return jobs


def discover_ecs_jobs(stack: DeployedStack) -> list[EcsJob]:
    """Task definitions whose container runs ``sqslease.worker``, their commands resolved from the template.

    moto keeps few task definition properties, so the command comes from the deployed template.
    """
    jobs = []
    for logical_id, resource in stack.resources("AWS::ECS::TaskDefinition").items():
        for container in resource.get("Properties", {}).get("ContainerDefinitions", []):
            command = [str(part) for part in stack.resolve(container.get("Command", []))]
            if "sqslease.worker" not in command:
                continue
            environment: dict[str, str] = {}
            unresolved = []
            for variable in container.get("Environment", []):
                try:
                    environment[variable["Name"]] = str(stack.resolve(variable["Value"]))
                except DeployedError:
                    unresolved.append(variable["Name"])
            job = EcsJob("", stack.physical_id(logical_id), command, environment)
            queue_url = job.option("queue-url") or environment.get("SQSLEASE_QUEUE_URL", "")
            job_type = job.option("job-type") or environment.get("SQSLEASE_JOB_TYPE")
            job_type = job_type or queue_url.rsplit("/", 1)[-1].removeprefix(f"{stack.name}-")
            jobs.append(EcsJob(job_type, job.task_definition, command, environment, tuple(unresolved)))
    return sorted(jobs, key=lambda j: j.job_type)


# -- the ledger the demo handlers write ----------------------------------------------------------------
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


# -- results -------------------------------------------------------------------------------------------
@dataclass
class JobTypeResult:
    """One row of the summary table."""

    job_type: str
    consumer: str  # "ECS", "Lambda" or "none"
    sent: int = 0
    processed: int = 0  # jobs that completed at least once
    duplicates: int = 0  # completions beyond the first of a job
    concurrent: int = 0  # overlapping runs of one job
    retries: int = 0  # runs beyond the first (failures, kills, redeliveries)
    dead_lettered: int = 0  # jobs of this run found in the DLQ
    extensions: int = 0
    leases_lost: int = 0
    lost: int = 0  # jobs meant to succeed that neither completed nor reached the DLQ
    waiting: int = 0  # no consumer: messages left in the queue
    visibility_timeout_s: int = 0


@dataclass
class DemoResult:
    """What the demo measured (``ok`` says whether every guarantee held)."""

    job_types: dict[str, JobTypeResult]
    long_job: dict[str, Any] = field(default_factory=dict)
    poison: dict[str, Any] = field(default_factory=dict)
    kill: dict[str, Any] = field(default_factory=dict)
    drain: dict[str, Any] = field(default_factory=dict)
    lambda_stats: dict[str, Any] = field(default_factory=dict)
    profile: dict[str, Any] = field(default_factory=dict)
    logs_dir: Path = Path()
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        consumers = [r for r in self.job_types.values() if r.consumer != "none"]
        return (
            all(r.lost == 0 and r.duplicates == 0 and r.concurrent == 0 for r in consumers)
            and self.poison.get("in_dlq", False)
            and self.long_job.get("completions") == 1
            and self.long_job.get("extensions", 0) > 0
        )


# -- processes -----------------------------------------------------------------------------------------
@dataclass
class WorkerProcess:
    name: str
    process: subprocess.Popen[bytes]
    started: float


class Demo:
    """One run of the demo against the deployed stack (see the module docstring)."""

    def __init__(self, emulator: Emulator, stack_name: str, logs_dir: Path, out: Print = print) -> None:
        self.emulator = emulator
        self.sqs = emulator.client("sqs")
        self.stack = DeployedStack.load(emulator, stack_name)
        self.logs_dir = logs_dir
        self.emf_dir = logs_dir / "emf"
        self.stderr_dir = logs_dir / "stderr"
        for directory in (self.emf_dir, self.stderr_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.ledger = logs_dir / "ledger.jsonl"
        self.out = out
        self.started = time.monotonic()
        self.run_id = uuid.uuid4().hex[:6]
        self.rng = random.Random(self.run_id)
        self.sent: dict[str, list[str]] = {}  # job type -> ids meant to succeed
        self.poison_ids: dict[str, str] = {}
        self.workers: list[WorkerProcess] = []
        self._worker_numbers = iter(range(1, 1000))
        self._files: list[IO[Any]] = []

    def say(self, text: str) -> None:
        self.out(f"[{time.monotonic() - self.started:5.1f} s] {text}")

    # -- sending -------------------------------------------------------------------------------------
    def job(self, job_type: str, name: str, work_s: float, fail: bool | int = False) -> str:
        return json.dumps({"id": f"{job_type}-{name}-{self.run_id}", "work_s": round(work_s, 3), "fail": fail})

    def send(self, queue: QueueJob, bodies: list[str], expect_success: bool = True) -> None:
        for start in range(0, len(bodies), 10):
            entries: list[dict[str, Any]] = []
            for i, body in enumerate(bodies[start : start + 10]):
                entry: dict[str, Any] = {"Id": str(i), "MessageBody": body}
                if queue.fifo:
                    entry["MessageGroupId"] = "demo"
                    entry["MessageDeduplicationId"] = json.loads(body)["id"]
                entries.append(entry)
            response = self.sqs.send_message_batch(QueueUrl=queue.url, Entries=entries)
            if response.get("Failed"):
                raise DemoError(f"SendMessageBatch to {queue.url} failed: {response['Failed']}")
        if expect_success:
            self.sent.setdefault(queue.job_type, []).extend(json.loads(b)["id"] for b in bodies)

    # -- ECS workers ---------------------------------------------------------------------------------
    def start_worker(self, job: EcsJob) -> WorkerProcess:
        """``python -m sqslease.worker`` with the task definition's command, pointed at the emulator."""
        number = next(self._worker_numbers)
        name = f"{job.job_type}-worker-{number}"
        stdout = (self.emf_dir / f"{name}.log").open("ab")
        stderr = (self.stderr_dir / f"{name}.log").open("ab")
        self._files += [stdout, stderr]
        command = [sys.executable if job.command[0].startswith("python") else job.command[0], *job.command[1:]]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            **job.environment,
            **self.emulator.env(),
            # The container image holds the handlers and sqslease; locally they come from the repository.
            "PYTHONPATH": os.pathsep.join([str(HANDLERS_DIR), str(PROJECT_DIR / "lambda_src")]),
            LEDGER_ENV: str(self.ledger),
        }
        process = subprocess.Popen(command, env=env, stdout=stdout, stderr=stderr, cwd=HANDLERS_DIR)
        worker = WorkerProcess(name, process, time.monotonic())
        self.workers.append(worker)
        return worker

    def stop_workers(self, workers: list[WorkerProcess], timeout_s: float = 40) -> dict[str, int]:
        """SIGTERM, then wait for each to exit; return their exit codes."""
        for worker in workers:
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGTERM)
        codes = {}
        for worker in workers:
            try:
                codes[worker.name] = worker.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                codes[worker.name] = worker.process.wait()
                self.say(f"{worker.name} did not exit {timeout_s:.0f} s after SIGTERM: killed")
        return codes

    def close(self) -> None:
        live = [w for w in self.workers if w.process.poll() is None]
        if live:
            self.stop_workers(live, timeout_s=30)
        for f in self._files:
            f.close()

    # -- waiting -------------------------------------------------------------------------------------
    def wait_until(self, what: str, predicate: Callable[[], bool], timeout_s: float) -> float:
        """Poll ``predicate``; return when it held (seconds since the demo started); raise after the timeout."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate():
                return time.monotonic() - self.started
            time.sleep(0.2)
        raise DemoError(f"timed out after {timeout_s:.0f} s waiting for: {what}")

    def runs_of(self, job_id: str) -> list[Run]:
        return [r for r in read_runs(self.ledger) if r.job_id == job_id]

    def completed(self, job_ids: list[str]) -> bool:
        done = {r.job_id for r in read_runs(self.ledger) if r.outcome == "success"}
        return all(i in done for i in job_ids)

    def dlq_ids(self, queue: QueueJob) -> set[str]:
        """Ids of this run's jobs in ``queue``'s DLQ (peeked: received with visibility 0)."""
        if queue.dlq_url is None:
            return set()
        found = set()
        for _ in range(5):
            messages = self.sqs.receive_message(
                QueueUrl=queue.dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=0, WaitTimeSeconds=0
            ).get("Messages", [])
            for m in messages:
                try:
                    found.add(json.loads(m["Body"])["id"])
                except (ValueError, KeyError, TypeError):
                    continue  # not a demo job
            if not messages:
                break
        return {i for i in found if i.endswith(self.run_id)}

    def visible(self, queue: QueueJob) -> int:
        attributes = self.sqs.get_queue_attributes(QueueUrl=queue.url, AttributeNames=["ApproximateNumberOfMessages"])
        return int(attributes["Attributes"]["ApproximateNumberOfMessages"])

    # -- the scenarios -------------------------------------------------------------------------------
    def run(self) -> DemoResult:
        queues = discover_queues(self.emulator, self.stack)
        ecs_jobs = discover_ecs_jobs(self.stack)
        function_ids = function_logical_ids(self.stack)
        if not ecs_jobs or not function_ids:
            raise DeployedError(
                f"stack {self.stack.name} has {len(ecs_jobs)} ECS jobs (a task definition running sqslease.worker) "
                f"and {len(function_ids)} Lambda jobs (a function with an SQS event source mapping); the demo needs "
                "one of each: deploy the example app with its LambdaJob and EcsJob"
            )
        workdir = Path(tempfile.mkdtemp(prefix="lambda-", dir=self.logs_dir))
        function = load_function(self.emulator, self.stack, function_ids[0], workdir)
        lambda_type = function.environment.get("SQSLEASE_JOB_TYPE") or function.mapping.queue_name.removeprefix(
            f"{self.stack.name}-"
        )
        ecs = ecs_jobs[0]
        for job_type in (lambda_type, ecs.job_type):
            if job_type not in queues:
                raise DeployedError(f"job type {job_type} has no queue named {self.stack.name}-{job_type}")
        self.describe(queues, ecs, function, lambda_type)

        result = DemoResult(job_types={}, logs_dir=self.logs_dir)
        self.send_to_plain_queues(queues, {lambda_type, ecs.job_type})
        with ExitStack() as stack:
            stack.callback(self.close)
            driver = self.start_lambda(function, queues[lambda_type])
            stack.callback(driver.stop)  # first on the way out: stops polling, ends the runtime
            self.ecs_scenarios(ecs, queues[ecs.job_type], result)
            self.wait_until(f"every {lambda_type} job done", lambda: self.completed(self.sent[lambda_type]), 90)
        stats = driver.stats
        result.lambda_stats = {
            "invocations": stats.invocations,
            "records": stats.records,
            "deleted": stats.deleted,
            "reported_failures": stats.reported_failures,
            "function_errors": stats.function_errors,
            "batch_sizes": stats.batch_sizes,
            "cold_starts": driver.runtime.cold_starts,
            "handler_file": driver.runtime.handler_file,
        }
        self.say(
            f"{lambda_type}: {stats.invocations} invocations, batch sizes {stats.batch_sizes}, "
            f"{stats.deleted} records deleted, {stats.reported_failures} reported in batchItemFailures"
        )
        consumers = {lambda_type: "Lambda", ecs.job_type: "ECS"}
        result.job_types = self.tally(queues, consumers)
        result.profile = self.profile(queues, consumers, function)
        result.wall_s = time.monotonic() - self.started
        return result

    def describe(self, queues: dict[str, QueueJob], ecs: EcsJob, function: DeployedFunction, lambda_type: str) -> None:
        m = function.mapping
        self.say(f"stack {self.stack.name}: job types {', '.join(sorted(queues))}")
        self.say(
            f"{lambda_type}: Lambda {function.name} (handler {function.handler}, timeout {function.timeout_s} s, "
            f"{len(function.layer_arns)} layer), mapping batch size {m.batch_size}, window {m.batching_window_s} s, "
            f"ReportBatchItemFailures {'on' if m.report_batch_item_failures else 'off'}; "
            f"queue VT {queues[lambda_type].visibility_timeout_s} s"
        )
        self.say(f"{ecs.job_type}: ECS task definition {ecs.task_definition.rsplit('/', 1)[-1]}")
        self.say(f"  command: {' '.join(ecs.command)}")
        if ecs.unresolved:
            self.say(f"  not computable locally, left unset: {', '.join(ecs.unresolved)}")

    def send_to_plain_queues(self, queues: dict[str, QueueJob], consumed: set[str]) -> None:
        for job_type, queue in sorted(queues.items()):
            if job_type in consumed:
                continue
            self.send(queue, [self.job(job_type, f"j{i}", 1) for i in range(3)], expect_success=False)
            self.say(
                f"sent 3 jobs to {job_type} (no consumer in this app: they wait in {queue.url.rsplit('/', 1)[-1]})"
            )

    def start_lambda(self, function: DeployedFunction, queue: QueueJob) -> LambdaDriver:
        stdout = (self.emf_dir / f"{queue.job_type}-lambda.log").open("ab")
        stderr = (self.stderr_dir / f"{queue.job_type}-lambda.log").open("ab")
        self._files += [stdout, stderr]
        runtime = LocalRuntime(function, self.emulator, stdout, stderr, {LEDGER_ENV: str(self.ledger)})

        def report(records: list[dict[str, Any]], invocation: Invocation, deleted: list[str]) -> None:
            if invocation.error is not None:
                outcome = f"function error {invocation.error.get('errorType')}: {invocation.error.get('errorMessage')}"
            else:
                failures = (invocation.result or {}).get("batchItemFailures") or []
                outcome = f"{len(failures)} in batchItemFailures"
            self.say(
                f"{queue.job_type}: invocation of {len(records)} records ({'cold' if invocation.cold_start else 'warm'}"
                f", {invocation.duration_s:.1f} s): {outcome}; deleted {len(deleted)}"
            )

        # 20 jobs of 0.1-0.8 s; one fails its first delivery and is retried after its backoff.
        bodies = [self.job(queue.job_type, f"t{i}", self.rng.uniform(0.1, 0.8)) for i in range(19)]
        bodies.append(self.job(queue.job_type, "fails-once", 0.2, fail=1))
        self.send(queue, bodies)
        self.say(f"sent {len(bodies)} jobs to {queue.job_type} (one fails its first delivery)")
        driver = LambdaDriver(self.emulator, function, runtime, on_invocation=report)
        driver.start()
        self.say(f"{queue.job_type}: event source stand-in polling {queue.url.rsplit('/', 1)[-1]}")
        return driver

    def ecs_scenarios(self, job: EcsJob, queue: QueueJob, result: DemoResult) -> None:
        vt = queue.visibility_timeout_s
        first = [self.start_worker(job), self.start_worker(job)]
        self.say(f"{job.job_type}: started {len(first)} workers (pids {', '.join(str(w.process.pid) for w in first)})")

        # Normal jobs, one job 1.4 x the visibility timeout, one poison message.
        long_body = self.job(job.job_type, "long", 1.4 * vt)
        long_id = json.loads(long_body)["id"]
        poison_body = self.job(job.job_type, "poison", 0.1, fail=True)
        poison_id = json.loads(poison_body)["id"]
        normal = [self.job(job.job_type, f"n{i}", self.rng.uniform(0.3, 2.5)) for i in range(12)]
        self.send(queue, [long_body, *normal])
        self.send(queue, [poison_body], expect_success=False)
        self.say(
            f"sent {len(normal) + 2} jobs to {job.job_type}: {len(normal)} of 0.3-2.5 s, one of {1.4 * vt:.0f} s "
            f"(VT {vt} s), one poison message (fails every time; maxReceiveCount {queue.max_receive_count})"
        )
        self.wait_until("the long job's start", lambda: bool(self.runs_of(long_id)), 30)
        self.say(f"long job started; its {vt} s lease is extended while it runs")
        in_dlq_at = self.wait_until("the poison message in the DLQ", lambda: poison_id in self.dlq_ids(queue), 90)
        poison_runs = self.runs_of(poison_id)
        self.say(
            f"poison message in {queue.dlq_url.rsplit('/', 1)[-1] if queue.dlq_url else '?'} after "
            f"{len(poison_runs)} failed deliveries (receive counts {[r.receive_count for r in poison_runs]})"
        )
        result.poison = {"in_dlq": True, "deliveries": len(poison_runs), "at_s": round(in_dlq_at, 1)}
        self.wait_until("the long job's end", lambda: self.completed([long_id]), 4 * vt + 30)
        long_runs = self.runs_of(long_id)
        extensions = self.emf_sum(job.job_type, "Extensions", message_ids=None, job_id=long_id)
        completions = sum(r.outcome == "success" for r in long_runs)
        duration = next(r.end - r.start for r in long_runs if r.outcome == "success" and r.end is not None)
        self.say(
            f"long job finished after {duration:.1f} s (VT {vt} s): {len(long_runs)} run, {completions} completion, "
            f"{extensions} lease extensions"
        )
        result.long_job = {
            "runs": len(long_runs),
            "completions": completions,
            "duration_s": round(duration, 1),
            "visibility_timeout_s": vt,
            "extensions": extensions,
        }
        self.wait_until(f"the {len(normal)} normal jobs", lambda: self.completed(self.sent[job.job_type]), 60)
        self.say(f"all {len(self.sent[job.job_type])} {job.job_type} jobs so far completed")

        self.drain_scenario(job, queue, result)
        self.kill_scenario(job, queue, result)

    def kill_scenario(self, job: EcsJob, queue: QueueJob, result: DemoResult) -> None:
        body = self.job(job.job_type, "killed", 6)
        job_id = json.loads(body)["id"]
        self.send(queue, [body])
        self.wait_until("the kill target's start", lambda: bool(self.runs_of(job_id)), 30)
        time.sleep(1.5)  # mid-job
        (first_run,) = self.runs_of(job_id)
        victim = next((w for w in self.workers if w.process.pid == first_run.pid), None)
        if victim is None:
            raise DemoError(f"job {job_id} runs in pid {first_run.pid}, not a worker of this demo")
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait()
        killed_at = time.time()
        record_kill(self.ledger, victim.process.pid)
        self.say(f"kill -9 {victim.name} (pid {victim.process.pid}) 1.5 s into a 6 s job")
        replacement = self.start_worker(job)
        self.say(f"started {replacement.name} in its place (as ECS replaces a stopped task)")
        lease = self.first_lease(job, queue)
        self.wait_until("the killed job's second run", lambda: len(self.runs_of(job_id)) >= 2, lease + 30)
        second = sorted(self.runs_of(job_id), key=lambda r: r.start)[1]
        back_after = second.start - killed_at
        self.say(
            f"its message came back and restarted {back_after:.1f} s after the kill (lease {lease:.0f} s), "
            f"receive count {second.receive_count}"
        )
        self.wait_until("the killed job's completion", lambda: self.completed([job_id]), 30)
        result.kill = {"back_after_s": round(back_after, 1), "lease_s": lease, "receive_count": second.receive_count}
        live = [w for w in self.workers if w.process.poll() is None]
        codes = self.stop_workers(live)
        self.say(
            f"all {job.job_type} jobs done; SIGTERM to the {len(live)} workers left: exit {sorted(codes.values())}"
        )

    def first_lease(self, job: EcsJob, queue: QueueJob) -> float:
        """The lease a receive takes (``LeaseSettings.first_lease``), from the worker's command and environment."""
        parser = argparse.ArgumentParser(add_help=False)
        LeaseSettings.add_arguments(parser)
        options, _ = parser.parse_known_args(job.command[job.command.index("sqslease.worker") + 1 :])
        return LeaseSettings.from_args(options, environ=job.environment).first_lease

    def drain_scenario(self, job: EcsJob, queue: QueueJob, result: DemoResult) -> None:
        live = [w for w in self.workers if w.process.poll() is None]
        bodies = [self.job(job.job_type, f"d{i}", 4) for i in range(16)]
        ids = [json.loads(b)["id"] for b in bodies]
        self.send(queue, bodies)
        self.say(f"sent {len(bodies)} jobs of 4 s to {job.job_type} for the SIGTERM drain")
        self.wait_until("drain jobs running", lambda: sum(bool(self.runs_of(i)) for i in ids) >= 6, 30)
        started_before = {i for i in ids if self.runs_of(i)}
        term_at, term_wall = time.monotonic(), time.time()
        codes = self.stop_workers(live)
        took = time.monotonic() - term_at
        visible = self.visible(queue)
        released = sum(self.released_unstarted(w) for w in live)
        finished = sum(any(r.outcome == "success" for r in self.runs_of(i)) for i in started_before)
        # Received before SIGTERM, started after it on a handler that came free: their receive was not wasted.
        stopping = {w.process.pid for w in live}
        ran_received = sum(
            any(r.pid in stopping and r.start >= term_wall for r in self.runs_of(i))
            for i in ids
            if i not in started_before
        )
        self.say(
            f"SIGTERM to {len(live)} workers with {len(started_before)} jobs running: exited in {took:.1f} s "
            f"(exit codes {sorted(codes.values())}); {finished}/{len(started_before)} running jobs finished, "
            f"{ran_received} received ones ran on handlers that came free, {released} unstarted released "
            f"({visible} visible right after exit)"
        )
        result.drain = {
            "running_at_sigterm": len(started_before),
            "finished": finished,
            "ran_after_sigterm": ran_received,
            "released": released,
            "visible_after_exit": visible,
            "exit_codes": sorted(codes.values()),
            "exit_s": round(took, 1),
        }
        fresh = [self.start_worker(job), self.start_worker(job)]
        self.say(f"started {', '.join(w.name for w in fresh)} (a new deployment) for the rest")
        # A long poll that did not answer in time is abandoned (sqslease.worker's docstring): a message it took
        # reappears after the receive lease, hence the generous limit.
        self.wait_until("the drained jobs", lambda: self.completed(ids), 90)
        self.say(f"all {len(ids)} drain jobs done")

    def released_unstarted(self, worker: WorkerProcess) -> int:
        """How many received-but-unstarted messages the worker says it released at shutdown (its stderr)."""
        text = (self.stderr_dir / f"{worker.name}.log").read_text()
        return sum(int(n) for n in re.findall(r"releasing (\d+) messages not yet started", text))

    # -- accounting ----------------------------------------------------------------------------------
    def emf_lines(self) -> Iterator[dict[str, Any]]:
        for path in sorted(self.emf_dir.glob("*.log")):
            for line in path.read_text().splitlines():
                if line.startswith("{"):
                    yield json.loads(line)

    def emf_sum(self, job_type: str, field_name: str, message_ids: set[str] | None, job_id: str | None = None) -> int:
        if job_id is not None:
            message_ids = {r["message_id"] for r in self._ledger_events() if r.get("id") == job_id}
        return sum(
            int(line.get(field_name, 0))
            for line in self.emf_lines()
            if line.get("JobType") == job_type and (message_ids is None or line.get("MessageId") in message_ids)
        )

    def _ledger_events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.ledger.read_text().splitlines()] if self.ledger.exists() else []

    def tally(self, queues: dict[str, QueueJob], consumers: dict[str, str]) -> dict[str, JobTypeResult]:
        runs = read_runs(self.ledger)
        rows = {}
        for job_type, queue in sorted(queues.items()):
            row = JobTypeResult(
                job_type, consumers.get(job_type, "none"), visibility_timeout_s=queue.visibility_timeout_s
            )
            mine = [r for r in runs if r.job_type == job_type]
            expected = self.sent.get(job_type, [])
            completions: dict[str, int] = {}
            for run in mine:
                if run.outcome == "success":
                    completions[run.job_id] = completions.get(run.job_id, 0) + 1
            in_dlq = self.dlq_ids(queue)
            row.sent = len(expected) + sum(1 for i in in_dlq if i not in expected)
            row.processed = len(completions)
            row.duplicates = sum(n - 1 for n in completions.values())
            row.concurrent = concurrent_runs(mine)
            row.retries = len(mine) - len({r.job_id for r in mine})
            row.dead_lettered = len(in_dlq)
            row.lost = sum(1 for i in expected if i not in completions and i not in in_dlq)
            if row.consumer == "none":
                row.sent, row.waiting = 3, self.visible(queue)
            else:
                row.extensions = self.emf_sum(job_type, "Extensions", None)
                row.leases_lost = self.emf_sum(job_type, "LeaseLost", None)
            rows[job_type] = row
        return rows

    # -- jobstats --------------------------------------------------------------------------------------
    def profile(
        self, queues: dict[str, QueueJob], consumers: dict[str, str], function: DeployedFunction
    ) -> dict[str, Any]:
        out = self.logs_dir / "profiles.json"
        command = [sys.executable, "-m", "jobstats", "profile", str(self.emf_dir), "--out", str(out)]
        command += ["--master", "local[1]"]
        self.say(f"jobstats: python {' '.join(command[1:])} (Spark starting)")
        completed = subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True)
        (self.stderr_dir / "jobstats.log").write_text(completed.stderr)
        if completed.returncode != 0:
            raise DemoError(f"jobstats failed (exit {completed.returncode}): {completed.stderr[-2000:]}")
        for line in completed.stdout.splitlines():
            self.say(f"jobstats: {line}")
        document: dict[str, Any] = json.loads(out.read_text())
        return {"path": str(out), "document": document, "declared": self.declared(queues, consumers, function)}

    def declared(
        self, queues: dict[str, QueueJob], consumers: dict[str, str], function: DeployedFunction
    ) -> dict[str, str]:
        """What each consumer's job type declared, in words, from the deployed resources."""
        declared = {}
        for job_type, kind in consumers.items():
            queue = queues[job_type]
            if kind == "Lambda":
                declared[job_type] = (
                    f"Lambda timeout {function.timeout_s} s + window {function.mapping.batching_window_s} s"
                )
            elif queue.declared_p99_s is not None:
                declared[job_type] = f"p99 {queue.declared_p99_s:g} s"
            else:
                declared[job_type] = "p99 not in the template"
        return declared


# -- output --------------------------------------------------------------------------------------------
def format_profile(result: DemoResult) -> str:
    """Measured (jobstats) vs declared, per consumer job type."""
    if not result.profile:
        return ""
    document = result.profile["document"]
    declared = result.profile["declared"]
    header = (
        f"{'job type':<12} {'samples':>7} {'measured p99':>12}  {'declared':<34} {'deployed VT':>11}  "
        f"{'max(2 x measured p99, 10 s)':<28} jobstats"
    )
    lines = ["measured (jobstats) vs declared:", header, "-" * len(header)]
    for job_type, row in sorted(result.job_types.items()):
        if row.consumer == "none":
            continue
        entry = document["job_types"].get(job_type)
        if entry is None:
            lines.append(
                f"{job_type:<12} {0:>7} {'-':>12}  {declared.get(job_type, ''):<34} {row.visibility_timeout_s:>9} s"
            )
            continue
        p99_s = entry["p99_ms"] / 1000
        recommended = entry.get("recommended_visibility_timeout_s")
        says = f"recommends VT {recommended} s" if recommended else f"no recommendation from {entry['count']} samples"
        lines.append(
            f"{job_type:<12} {entry['count']:>7} {p99_s:>10.2f} s  {declared.get(job_type, ''):<34} "
            f"{row.visibility_timeout_s:>9} s  {'VT ' + str(visibility_timeout_for_p99(p99_s)) + ' s':<28} {says}"
        )
    return "\n".join(lines)


def format_summary(result: DemoResult) -> str:
    """The closing table: one row per job type."""
    header = (
        f"{'job type':<15} {'consumer':<8} {'sent':>5} {'processed':>9} {'duplicates':>10} {'concurrent':>10} "
        f"{'retries':>7} {'DLQ':>4} {'extensions':>10} {'leases lost':>11} {'lost':>4} {'waiting':>7}"
    )
    lines = [header, "-" * len(header)]
    for row in result.job_types.values():
        lines.append(
            f"{row.job_type:<15} {row.consumer:<8} {row.sent:>5} {row.processed:>9} {row.duplicates:>10} "
            f"{row.concurrent:>10} {row.retries:>7} {row.dead_lettered:>4} {row.extensions:>10} "
            f"{row.leases_lost:>11} {row.lost:>4} {row.waiting:>7}"
        )
    return "\n".join(lines)


def run_demo(
    emulator: Emulator | Any,
    stack_name: str = DEFAULT_STACK,
    logs_dir: Path | None = None,
    out: Print = print,
) -> DemoResult:
    """Run the demo against ``emulator`` (an :class:`Emulator`, or a running ``LocalServer``)."""
    endpoint = Emulator(emulator.endpoint)
    logs_dir = logs_dir or Path(tempfile.mkdtemp(prefix="jobqueues-demo-"))
    demo = Demo(endpoint, stack_name, logs_dir, out)
    result = demo.run()
    out("")
    out(format_profile(result))
    out("")
    out(format_summary(result))
    out("")
    out(f"logs: {logs_dir} (emf/: the consumers' EMF lines, stderr/: their logs, ledger.jsonl: every handler run)")
    verdict = "every job processed exactly once" if result.ok else "SOMETHING WENT WRONG (see the table)"
    out(f"demo finished in {result.wall_s:.0f} s: {verdict}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local_emulator.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", required=True, help="the emulator, e.g. http://localhost:5000")
    parser.add_argument("--stack", default=DEFAULT_STACK)
    parser.add_argument("--logs", type=Path, help="directory for the logs (default: a new temporary directory)")
    args = parser.parse_args(argv)

    def out(line: str) -> None:
        print(line, flush=True)

    try:
        result = run_demo(Emulator(args.endpoint), args.stack, args.logs, out)
    except (DemoError, DeployedError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
