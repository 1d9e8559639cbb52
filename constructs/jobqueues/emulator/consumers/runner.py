"""Every consumer of a deployed app, run locally: ECS jobs as worker processes scaled like the deployed service,
Lambda jobs through the event-source driver, their log lines shipped to the emulator's CloudWatch Logs.

:class:`ConsumerRunner` is what ``jobqueues local up`` drives: :meth:`~ConsumerRunner.start`, then
:meth:`~ConsumerRunner.tick` about once a second (queue depths, scaling, respawns), :meth:`~ConsumerRunner.rows`
for the status table, :meth:`~ConsumerRunner.stop`. The consumers' AWS endpoint is a parameter (the chaos proxy's
when ``--chaos`` is on) and :meth:`~ConsumerRunner.worker_processes` lists the live workers for a killer.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from jobqueues.emulator.consumers.ecs_workers import WorkerError, WorkerPool, worker_spec
from jobqueues.emulator.consumers.lambdas import LambdaConsumerRun
from jobqueues.emulator.consumers.log_shipper import LogShipper
from jobqueues.emulator.consumers.scaler import SCALE_IN_AFTER_S, QueueDepth, ScalingPolicy, ScalingState, decide
from jobqueues.emulator.lambda_driver.function import DriverError
from jobqueues.emulator.server import Emulator
from jobqueues.ops.discovery import EcsConsumer, JobType, LambdaConsumer
from jobqueues.ops.queues import queue_attributes

Print = Callable[[str], None]


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """Processes and threads started inside never get Ctrl-C: the signal mask is inherited by threads and across
    ``exec`` (a handler is not: moto_server installs its own). The terminal sends SIGINT to its whole process
    group; the runner, not the terminal, stops the consumers, then the emulator. A Ctrl-C meanwhile is delivered
    when the ``with`` ends. Main thread only (elsewhere: no change)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@dataclass
class Row:
    """One job type's line of the status table."""

    job_type: str
    consumer: str  # "ecs", "lambda", "none", or why it does not run locally
    visible: int = 0
    in_flight: int = 0
    dead_lettered: int | None = None
    workers: int = 0  # ECS: live workers; Lambda: warm environments
    draining: int = 0
    started: int = 0  # ECS: workers started since the start
    invocations: int = 0  # Lambda
    errors: int = 0  # Lambda: invocations that failed
    queue_missing: bool = False  # its queue does not exist: visible and in flight unknown (0 to the scaler)


@dataclass
class _EcsJob:
    pool: WorkerPool
    policy: ScalingPolicy
    state: ScalingState = field(default_factory=ScalingState)


class ConsumerRunner:
    """The consumers of ``job_types`` (discovered on ``emulator``), run against ``endpoint``.

    :param app_dir: the app's directory (image directories are relative to it).
    :param handlers: ``--handlers``: the ECS workers' handler directory (default: each image's build directory).
    :param logs_dir: where each process's output is kept (``<stack>/<job type>/<task id or stream>.log``: a Dev and
        a Prod Stage's job type apart).
    :param code_dir: where each Lambda job's code and layers are unpacked (``<stack>/<job type>/``). Default: beside
        ``logs_dir``, in ``lambda-code``.
    :param scale_in_after_s: seconds of a smaller backlog before workers stop (see :mod:`.scaler`).
    :param environment: local-only variables per job type (``STACK/JOB_TYPE``), over everything else its consumer
        gets (``--env``: :mod:`.local_env`). Default: none.
    """

    def __init__(
        self,
        emulator: Emulator,
        job_types: list[JobType],
        app_dir: Path,
        logs_dir: Path,
        endpoint: Emulator | None = None,
        handlers: Path | None = None,
        code_dir: Path | None = None,
        scale_in_after_s: float = SCALE_IN_AFTER_S,
        out: Print = print,
        clock: Callable[[], float] = time.monotonic,
        environment: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.emulator = emulator
        self.endpoint = endpoint or emulator
        self.job_types = job_types
        self.app_dir = app_dir
        self.logs_dir = logs_dir
        self.handlers = handlers
        self.code_dir = code_dir or logs_dir.parent / "lambda-code"
        self.scale_in_after_s = scale_in_after_s
        self.out = out
        self.clock = clock
        self.environment = environment or {}
        self.sqs = emulator.client("sqs")  # the queue depths come from the emulator itself, never the proxy
        self.shipper = LogShipper(emulator.client("logs"), logs_dir)
        self.ecs: dict[str, _EcsJob] = {}
        self.lambdas: dict[str, LambdaConsumerRun] = {}
        self.skipped: dict[str, str] = {}  # job type name -> why it does not run locally
        self.rows_by_name: dict[str, Row] = {}
        self._last_error: dict[str, str] = {}  # job type name -> the function error last reported

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> None:
        """Prepare every consumer (0 ECS workers: the first tick scales), start the Lambda pollers."""
        for job in self.job_types:
            consumer = job.consumer
            try:
                if isinstance(consumer, EcsConsumer):
                    spec = worker_spec(self.emulator, job, self.app_dir, self.handlers)
                    if spec.unresolved:
                        self.out(f"{job.name}: not set locally (not computable): {', '.join(spec.unresolved)}")
                    for line in spec.missing_secrets:
                        self.out(f"{job.name}: {line}")
                    local_env = dict(self.environment.get(job.name, {}))
                    pool = WorkerPool(job, spec, self.endpoint, self.emulator, self.shipper, local_env=local_env)
                    pool.set_desired(0)
                    policy = ScalingPolicy(
                        consumer.min_tasks, consumer.max_tasks, consumer.target_backlog_per_task, self.scale_in_after_s
                    )
                    self.ecs[job.name] = _EcsJob(pool, policy)
                elif isinstance(consumer, LambdaConsumer):
                    workdir = self.code_dir / job.stack / job.job_type
                    shutil.rmtree(workdir, ignore_errors=True)  # an earlier run's code
                    local_env = dict(self.environment.get(job.name, {}))
                    run = LambdaConsumerRun(job, self.emulator, self.endpoint, self.shipper, workdir, local_env)
                    with sigint_blocked():  # the poller thread and every environment it starts
                        try:
                            run.runtime.start()  # the init phase now
                        except DriverError as error:
                            # As on Lambda, the function still runs: each invocation fails, the messages are
                            # retried, then dead-lettered, until the code is fixed.
                            self.out(f"{job.name}: {error} (every invocation fails; log: {run.log_file})")
                            self._last_error[job.name] = f"Runtime.InitError: {error}"
                        run.start()
                    self.lambdas[job.name] = run
                else:
                    self.skipped[job.name] = "no consumer"
            except (WorkerError, DriverError) as error:
                self.skipped[job.name] = str(error)
                self.out(f"{job.name}: not run locally: {error}")

    def tick(self) -> list[str]:
        """Read every queue's depth, scale the ECS workers, respawn as the scaling says; what changed, in words."""
        events = []
        now = self.clock()
        for job in self.job_types:
            row = self._depths(job)
            ecs = self.ecs.get(job.name)
            if ecs is not None:
                pool = ecs.pool
                for gone in pool.reap():
                    if not gone.stopping:
                        events.append(f"{job.name}: worker {gone.task_id[:8]} exited ({gone.process.returncode})")
                running = len(pool.running)
                count, ecs.state = decide(ecs.policy, ecs.state, QueueDepth(row.visible, row.in_flight), running, now)
                if count != running:
                    pool.scale_to(count)
                    backlog = row.visible + row.in_flight
                    events.append(f"{job.name}: {running} -> {count} workers (backlog {backlog})")
                row.workers, row.draining, row.started = len(pool.running), len(pool.draining), pool.started_total
            run = self.lambdas.get(job.name)
            if run is not None:
                row.workers, row.invocations, row.errors = int(run.busy), run.invocations, run.errors
                events += self._new_errors(job, run)
            self.rows_by_name[job.name] = row
        return events

    def stop(self) -> list[str]:
        """Drain every worker (SIGTERM), stop the Lambda pollers, send the last log lines; problems, in words."""
        problems = []
        with sigint_blocked():  # a second Ctrl-C must not leave workers half drained
            for run in self.lambdas.values():
                failure = run.stop()
                if failure:
                    problems.append(failure)
            for name, ecs in self.ecs.items():
                codes = ecs.pool.stop_all()
                bad = {task[:8]: code for task, code in codes.items() if code not in (0, -15)}
                if bad:
                    problems.append(f"{name}: workers exited with {bad}")
            self.shipper.close()
        return problems

    def _new_errors(self, job: JobType, run: LambdaConsumerRun) -> list[str]:
        """A line for each function error unlike the last one reported (a failing import fails every
        invocation: one line, not one per batch)."""
        events = []
        for error in run.take_errors():
            if self._last_error.get(job.name) != error:
                self._last_error[job.name] = error
                events.append(f"{job.name}: invocation failed: {error[:300]} (log: {run.log_file})")
        return events

    # -- what others read ----------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the queues again for :meth:`rows`, scaling nothing (after :meth:`stop`, for the summary)."""
        for job in self.job_types:
            row = self._depths(job)
            previous = self.rows_by_name.get(job.name)
            if previous is not None:
                row.started, row.invocations, row.errors = previous.started, previous.invocations, previous.errors
            self.rows_by_name[job.name] = row

    def stopped_receiving(self) -> dict[str, str]:
        """Job type name -> why its consumer stopped receiving: a Lambda poller that failed (the ECS workers'
        scaler starts a worker again whenever messages are visible)."""
        return {
            name: f"its poller failed: {run.driver.failure!r}"
            for name, run in self.lambdas.items()
            if run.driver.failure is not None
        }

    def worker_processes(self) -> list[subprocess.Popen[bytes]]:
        """The live ECS worker processes not told to stop (``subprocess.Popen``): what a chaos killer signals."""
        return [w.process for ecs in self.ecs.values() for w in ecs.pool.running]

    def rows(self) -> list[Row]:
        return [self.rows_by_name[j.name] for j in self.job_types if j.name in self.rows_by_name]

    def consumed(self) -> list[JobType]:
        """The job types whose consumers run locally."""
        return [j for j in self.job_types if j.name in self.ecs or j.name in self.lambdas]

    def idle(self) -> bool:
        """Every locally consumed queue empty, nothing in flight, no ECS worker alive (draining included)."""
        rows = [self.rows_by_name.get(j.name) for j in self.consumed()]
        if any(r is None or r.visible or r.in_flight for r in rows):
            return False
        return all(not ecs.pool.workers for ecs in self.ecs.values())

    def _depths(self, job: JobType) -> Row:
        kind = job.consumer.kind if job.consumer is not None else "none"
        row = Row(job.job_type if self._unique(job) else job.name, self.skipped.get(job.name, kind))
        missing = []  # an adopted queue no stack created (local deploy's note names it, and how to create it)
        if job.queue_url is not None:
            counts = self._attributes(job.queue_url)
            if counts is None:
                missing.append("queue")
                row.queue_missing = True
            else:
                row.visible = counts.get("ApproximateNumberOfMessages", 0)
                row.in_flight = counts.get("ApproximateNumberOfMessagesNotVisible", 0)
        if job.dead_letter_queue_url is not None:
            counts = self._attributes(job.dead_letter_queue_url)
            if counts is None:
                missing.append("DLQ")
            else:
                row.dead_lettered = counts.get("ApproximateNumberOfMessages", 0)
        if missing:  # short, in a table cell
            row.consumer = f"{row.consumer}; {' and '.join(missing)} missing"
        return row

    def _attributes(self, url: str) -> dict[str, int] | None:
        """The queue's message counts; None when it does not exist."""
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        attributes = queue_attributes(self.sqs, url, names)
        return None if attributes is None else {k: int(v) for k, v in attributes.items()}

    def _unique(self, job: JobType) -> bool:
        return sum(j.job_type == job.job_type for j in self.job_types) == 1
