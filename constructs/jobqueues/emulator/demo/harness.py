"""What every step of the demo uses: sending jobs, running ECS workers, waiting for the ledger, reading the logs."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from jobqueues.emulator.demo.discovery import EcsJob, QueueJob
from jobqueues.emulator.demo.ledger import LEDGER_ENV, Run, read_runs
from jobqueues.emulator.deployed import DeployedStack
from jobqueues.emulator.paths import CHECKOUT_DIR
from jobqueues.emulator.server import Emulator

PROJECT_DIR = CHECKOUT_DIR
HANDLERS_DIR = PROJECT_DIR / "lambda_src" / "handlers"

Print = Callable[[str], None]


#: What a demo run writes under its logs directory: a new run removes what an earlier one left, or the counts and
#: jobstats would include the earlier run's lines (the ledger and logs are appended to).
RUN_FILES = ("emf", "stderr", "ledger.jsonl", "profiles.json", "plots")


def fresh_logs(logs_dir: Path) -> None:
    """Empty the demo's own entries of ``logs_dir`` (:data:`RUN_FILES` and the Lambda workdirs ``lambda-*``),
    leaving anything else there, and create ``emf/`` and ``stderr/``."""
    for entry in [*(logs_dir / name for name in RUN_FILES), *logs_dir.glob("lambda-*")]:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        elif entry.exists() or entry.is_symlink():
            entry.unlink()
    for directory in (logs_dir / "emf", logs_dir / "stderr"):
        directory.mkdir(parents=True, exist_ok=True)


class DemoError(RuntimeError):
    """A step of the demo did not happen within its time limit (the message says which)."""


@dataclass
class WorkerProcess:
    name: str
    process: subprocess.Popen[bytes]
    started: float
    stopping: bool = False  # sent SIGTERM: draining, or exited


class Harness:
    """What every step of the demo uses: the deployed stack, the logs, sending, ECS workers, waiting, counting."""

    def __init__(self, emulator: Emulator, stack_name: str, logs_dir: Path, out: Print = print) -> None:
        self.emulator = emulator
        self.sqs = emulator.client("sqs")
        self.stack = DeployedStack.load(emulator, stack_name)
        self.logs_dir = logs_dir
        fresh_logs(logs_dir)
        self.emf_dir = logs_dir / "emf"
        self.stderr_dir = logs_dir / "stderr"
        self.ledger = logs_dir / "ledger.jsonl"
        self.out = out
        self.started = time.monotonic()
        self.run_id = uuid.uuid4().hex[:6]
        self.rng = random.Random(self.run_id)
        self.sent: dict[str, list[str]] = {}  # job type -> ids meant to succeed
        self.poison_ids: dict[str, str] = {}
        self.workers: list[WorkerProcess] = []
        self._worker_numbers = iter(range(1, 1000))
        self.open_files: list[IO[Any]] = []
        self.closers: list[Callable[[], None]] = []  # called by close(), after the workers stopped

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
    def start_worker(self, job: EcsJob, extra_env: dict[str, str] | None = None) -> WorkerProcess:
        """``python -m sqslease.worker`` with the task definition's command, pointed at the emulator (``extra_env``
        last: e.g. ``AWS_ENDPOINT_URL_SQS`` for a fault proxy in front of SQS alone)."""
        number = next(self._worker_numbers)
        name = f"{job.job_type}-worker-{number}"
        stdout = (self.emf_dir / f"{name}.log").open("ab")
        stderr = (self.stderr_dir / f"{name}.log").open("ab")
        self.open_files += [stdout, stderr]
        command = [sys.executable if job.command[0].startswith("python") else job.command[0], *job.command[1:]]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            **job.environment,
            **self.emulator.env(),
            # The container image holds the handlers and sqslease; locally they come from the repository.
            "PYTHONPATH": os.pathsep.join([str(HANDLERS_DIR), str(PROJECT_DIR / "lambda_src")]),
            LEDGER_ENV: str(self.ledger),
            **(extra_env or {}),
        }
        process = subprocess.Popen(command, env=env, stdout=stdout, stderr=stderr, cwd=HANDLERS_DIR)
        worker = WorkerProcess(name, process, time.monotonic())
        self.workers.append(worker)
        return worker

    def running_workers(self) -> list[WorkerProcess]:
        """The workers alive and not yet told to stop."""
        return [w for w in self.workers if w.process.poll() is None and not w.stopping]

    def stop_workers(self, workers: list[WorkerProcess], timeout_s: float = 40) -> dict[str, int]:
        """SIGTERM (once), then wait for each to exit; return their exit codes."""
        for worker in workers:
            if worker.process.poll() is None and not worker.stopping:
                worker.process.send_signal(signal.SIGTERM)
            worker.stopping = True
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
        for close in self.closers:
            close()
        for f in self.open_files:
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

    def released_unstarted(self, worker: WorkerProcess) -> int:
        """How many received-but-unstarted messages the worker says it released at shutdown (its stderr)."""
        text = (self.stderr_dir / f"{worker.name}.log").read_text()
        return sum(int(n) for n in re.findall(r"releasing (\d+) messages not yet started", text))

    # -- accounting ----------------------------------------------------------------------------------
    def emf_lines(self) -> Iterator[dict[str, Any]]:
        for path in sorted(self.emf_dir.glob("*.log")):
            text = path.read_text()
            for line in text[: text.rfind("\n") + 1].splitlines():  # a line still being written: not yet
                if line.startswith("{"):
                    yield json.loads(line)

    def emf_success(self, job_type: str, job_id: str) -> bool:
        """Whether a delivery of job ``job_id`` wrote its ``success`` line. A worker writes it just before the
        message's delete, after its handler returned (and wrote the ledger's ``end``): up to 20 ms later."""
        message_ids = {r["message_id"] for r in self._ledger_events() if r.get("id") == job_id}
        return any(
            (line.get("JobType"), line.get("Outcome")) == (job_type, "success") and line.get("MessageId") in message_ids
            for line in self.emf_lines()
        )

    def emf_of(self, job_type: str, message_id: str) -> list[dict[str, Any]]:
        """The EMF lines of one message: one per delivery that ended (ran, or was stopped unrun)."""
        lines = self.emf_lines()
        return [line for line in lines if line.get("JobType") == job_type and line.get("MessageId") == message_id]

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
