"""An ECS job's tasks as local worker processes: the deployed task definition's command, with the handlers
importable, their output shipped to the deployed log group.

:func:`worker_spec` reads the container from the deployed template (moto keeps few task definition properties),
its ``Ref`` s resolved to the deployed queue URLs; :class:`WorkerPool` starts and stops processes as the scaler
says and reflects the count in the emulator's service (``UpdateService`` ``desiredCount``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from jobqueues.emulator.consumers.container_secrets import container_secrets
from jobqueues.emulator.consumers.log_shipper import LogShipper
from jobqueues.emulator.deployed import DeployedError, DeployedStack
from jobqueues.emulator.server import Emulator
from jobqueues.ops.discovery import EcsConsumer, JobType

#: Seconds a worker has to drain after SIGTERM before it is killed (ECS's stopTimeout is at most 120 s).
STOP_TIMEOUT_S = 60.0


class WorkerError(RuntimeError):
    """The job type's workers cannot run locally (no command, a value the emulator cannot compute)."""


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker process runs: ``command`` (``python`` -> this interpreter), ``environment`` (the
    container's, with the secrets the emulator holds), ``python_path`` (handlers first, then the installed
    sqslease), and where it logs; ``missing_secrets``: a line for each secret it does not get."""

    job_type: str
    command: list[str]
    environment: dict[str, str]
    python_path: list[str]
    log_group: str
    stream_prefix: str
    unresolved: tuple[str, ...] = ()
    missing_secrets: tuple[str, ...] = ()


def handler_path(app_dir: Path, consumer: EcsConsumer, handlers: Path | None) -> list[str]:
    """The worker's ``PYTHONPATH``: ``handlers`` if given; else the image's build directory (relative to
    ``app_dir``) and its ``handlers/`` subdirectory when present, as the default Dockerfile's ``PYTHONPATH``;
    else ``app_dir``. The installed sqslease's directory comes last."""
    if handlers is not None:
        paths = [handlers.resolve()]
    elif consumer.image_directory is not None:
        image = (app_dir / consumer.image_directory).resolve()
        paths = [image, *([image / "handlers"] if (image / "handlers").is_dir() else [])]
    else:
        paths = [app_dir.resolve()]
    import sqslease

    return [*(str(p) for p in paths), str(Path(sqslease.__file__).resolve().parent.parent)]


def worker_spec(emulator: Emulator, job: JobType, app_dir: Path, handlers: Path | None) -> WorkerSpec:
    """The deployed worker of ECS job type ``job``: its container's command and environment, resolved."""
    consumer = job.consumer
    if not isinstance(consumer, EcsConsumer) or consumer.task_definition is None:
        raise WorkerError(f"{job.name} has no deployed ECS task definition")
    stack = DeployedStack.load(emulator, consumer.stack or job.stack)  # the service's: maybe another stack
    logical_id = stack.logical_id(consumer.task_definition)
    if logical_id is None:
        raise WorkerError(f"{job.name}: task definition {consumer.task_definition} is not in stack {stack.name}")
    containers = stack.resource(logical_id).get("Properties", {}).get("ContainerDefinitions", [])
    try:
        commands = [[str(part) for part in stack.resolve(c.get("Command", []))] for c in containers]
    except DeployedError as error:
        raise WorkerError(f"{job.name}: the container's command cannot be computed locally: {error}") from error
    # The container running sqslease.worker; else the first with a command (an image of your own).
    chosen = next((i for i, c in enumerate(commands) if "sqslease.worker" in c), None)
    chosen = chosen if chosen is not None else next((i for i, c in enumerate(commands) if c), None)
    if chosen is None:
        raise WorkerError(f"{job.name}: the task definition gives no command (the image's own CMD): cannot run it")
    container = containers[chosen]
    environment, unresolved = stack.environment(container)
    secrets = container_secrets(emulator, stack, container)  # as ECS injects them when a task starts
    command = commands[chosen]
    if command[0] in ("python", "python3") or command[0].startswith("python3."):
        command = [sys.executable, *command[1:]]
    name = str(container.get("Name", "worker"))
    prefix = f"{consumer.log_stream_prefix}/{name}" if consumer.log_stream_prefix else name
    return WorkerSpec(
        job_type=job.job_type,
        command=command,
        environment={**environment, **secrets.values},
        python_path=handler_path(app_dir, consumer, handlers),
        log_group=consumer.log_group or f"/ecs/{job.stack}/{job.job_type}",
        stream_prefix=prefix,
        unresolved=tuple(unresolved),
        missing_secrets=tuple(secrets.missing),
    )


@dataclass
class Worker:
    """One local task: its process, its ECS-like task id and log stream, and whether it was told to stop."""

    task_id: str
    process: subprocess.Popen[bytes]
    stream: str
    started: float
    stopping: bool = False


@dataclass
class WorkerPool:
    """The local tasks of one ECS job type, pointed at ``endpoint`` (the emulator, or the chaos proxy).

    :param emulator: the emulator itself, for ``UpdateService`` (never the chaos proxy).
    :param local_env: local-only variables (``--env``), over everything else. Default: none.
    """

    job: JobType
    spec: WorkerSpec
    endpoint: Emulator
    emulator: Emulator
    shipper: LogShipper
    workers: list[Worker] = field(default_factory=list)
    started_total: int = 0
    desired: int = -1
    local_env: dict[str, str] = field(default_factory=dict)

    def environment(self) -> dict[str, str]:
        """The container's variables, the SDK's for ``endpoint``, ``PYTHONPATH``, then the local-only ones;
        ``python`` is this interpreter."""
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")])
        return {
            "PATH": path,
            **self.spec.environment,
            **self.endpoint.env(),
            "PYTHONPATH": os.pathsep.join(self.spec.python_path),
            "PYTHONUNBUFFERED": "1",
            **self.local_env,
        }

    def start_one(self) -> Worker:
        """Start a worker in a session of its own: a Ctrl-C in the terminal reaches the runner only, which drains
        the workers with SIGTERM."""
        task_id = uuid.uuid4().hex
        process = subprocess.Popen(
            self.spec.command,
            env=self.environment(),
            cwd=self.spec.python_path[0],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        stream = f"{self.spec.stream_prefix}/{task_id}"
        assert process.stdout is not None
        self.shipper.attach(
            process.stdout, self.spec.log_group, stream, f"{self.job.stack}/{self.job.job_type}/{task_id}.log"
        )
        worker = Worker(task_id, process, stream, time.monotonic())
        self.workers.append(worker)
        self.started_total += 1
        return worker

    def reap(self) -> list[Worker]:
        """Forget the workers that exited (drained, crashed or killed); return them."""
        gone = [w for w in self.workers if w.process.poll() is not None]
        self.workers = [w for w in self.workers if w.process.poll() is None]
        return gone

    @property
    def running(self) -> list[Worker]:
        """Live workers not told to stop: what the scaler counts, and what a chaos killer may signal."""
        return [w for w in self.workers if not w.stopping and w.process.poll() is None]

    @property
    def draining(self) -> list[Worker]:
        return [w for w in self.workers if w.stopping and w.process.poll() is None]

    def scale_to(self, count: int) -> None:
        """Start or SIGTERM workers (the newest first) until ``count`` run; reflect it in the emulator."""
        running = self.running
        for _ in range(count - len(running)):
            self.start_one()
        for worker in sorted(running, key=lambda w: w.started, reverse=True)[: max(0, len(running) - count)]:
            self._terminate(worker)
        self.set_desired(count)

    def set_desired(self, count: int) -> None:
        """``UpdateService desiredCount``, so ``jobqueues status`` shows the local workers (only on a change)."""
        consumer = self.job.consumer
        if count == self.desired or not isinstance(consumer, EcsConsumer) or consumer.service is None:
            return
        self.emulator.client("ecs").update_service(
            cluster=consumer.cluster or "default", service=consumer.service, desiredCount=count
        )
        self.desired = count

    def stop_all(self, timeout_s: float = STOP_TIMEOUT_S) -> dict[str, int]:
        """SIGTERM every worker and wait for it to drain (kill -9 after ``timeout_s``); task id -> exit code."""
        for worker in self.workers:
            self._terminate(worker)
        deadline = time.monotonic() + timeout_s
        codes = {}
        for worker in self.workers:
            try:
                codes[worker.task_id] = worker.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.process.kill()
                codes[worker.task_id] = worker.process.wait()
        self.workers = []
        self.set_desired(0)
        return codes

    @staticmethod
    def _terminate(worker: Worker) -> None:
        if worker.process.poll() is None and not worker.stopping:
            worker.stopping = True
            worker.process.send_signal(signal.SIGTERM)
